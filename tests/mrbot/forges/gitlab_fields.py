# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The fields GitLab's REST API (v4) documents for each object the GitLab fake answers, and the check that the fake
answers no other.

GitLab publishes no machine-readable description of these endpoints, so the sets are written down here from its API
documentation (Notes, Merge requests, Merge request diff versions, Award emoji, Project members, Commits (statuses),
Users, Projects, Branches, Jobs, Pipelines), each naming the entity a nested object is. A field missing here is one the
fake may not invent: the bot once trusted a `bot` flag on a note's author, which GitLab's UserBasic does not have.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# An object's documented fields; a field's entry is the entity of the object it holds, or None for any other value.
Entity = dict[str, 'Entity | None']


def _fields(names: str, **nested: Entity) -> Entity:
    return {**dict.fromkeys(names.split()), **nested}


# a note's, an award's or a status's author
USER_BASIC = _fields('id username public_email name state locked avatar_url avatar_path custom_attributes web_url')
# GET /user: the token's own user
CURRENT_USER = _fields(
    'id username public_email name state locked avatar_url avatar_path web_url created_at bio location skype linkedin '
    'twitter discord website_url organization job_title pronouns bot work_information followers following is_followed '
    'local_time last_sign_in_at confirmed_at last_activity_on email theme_id color_scheme_id projects_limit '
    'current_sign_in_at identities can_create_group can_create_project two_factor_enabled external private_profile '
    'commit_email preferred_language')
NOTE = _fields(
    'id type body attachment created_at updated_at system noteable_id noteable_type project_id commit_id position '
    'resolvable resolved resolved_by resolved_at suggestions confidential internal imported imported_from noteable_iid '
    'commands_changes', author=USER_BASIC)
MERGE_REQUEST = _fields(
    'id iid project_id title description state created_at updated_at merged_by merge_user merged_at closed_by closed_at '
    'target_branch source_branch user_notes_count upvotes downvotes author assignees assignee reviewers '
    'source_project_id target_project_id labels draft work_in_progress milestone merge_when_pipeline_succeeds '
    'merge_status detailed_merge_status merge_after sha merge_commit_sha squash_commit_sha discussion_locked '
    'should_remove_source_branch force_remove_source_branch prepared_at reference references web_url time_stats '
    'squash squash_on_merge task_completion_status has_conflicts blocking_discussions_resolved approvals_before_merge '
    'imported imported_from subscribed changes_count latest_build_started_at latest_build_finished_at '
    'first_deployed_to_production_at pipeline head_pipeline diff_refs merge_error first_contribution user '
    'rebase_in_progress diverged_commits_count')
DIFF_VERSION = _fields(
    'id head_commit_sha base_commit_sha start_commit_sha created_at merge_request_id state real_size patch_id_sha')
AWARD_EMOJI = _fields('id name created_at updated_at awardable_id awardable_type url', user=USER_BASIC)
MEMBER = {**USER_BASIC, **_fields(
    'access_level created_at created_by expires_at group_saml_identity email is_using_seat override membership_state '
    'member_role')}
COMMIT_STATUS = _fields(
    'id sha ref status name target_url description created_at started_at finished_at allow_failure coverage '
    'pipeline_id', author=USER_BASIC)
PROJECT = _fields(
    'id description name name_with_namespace path path_with_namespace created_at default_branch tag_list topics '
    'ssh_url_to_repo http_url_to_repo web_url readme_url forks_count avatar_url star_count last_activity_at namespace '
    'visibility forked_from_project archived empty_repo owner')
COMMIT = _fields(
    'id short_id created_at parent_ids title message author_name author_email authored_date committer_name '
    'committer_email committed_date trailers extended_trailers web_url')
BRANCH = _fields('name merged protected developers_can_push developers_can_merge can_push default web_url',
                 commit=COMMIT)
# GET /job: the job a CI_JOB_TOKEN belongs to
JOB = _fields(
    'id status stage name ref tag coverage allow_failure created_at started_at finished_at erased_at duration '
    'queued_duration failure_reason web_url project artifacts_file artifacts runner artifacts_expire_at archived '
    'tag_list', user=CURRENT_USER, commit=COMMIT,
    pipeline=_fields('id iid project_id ref sha status source created_at updated_at web_url'))
# a pipeline as a merge request's pipelines list it
PIPELINE_BASIC = _fields('id iid project_id sha ref status source created_at updated_at web_url')
# a pipeline as GitLab answers for one (POST /projects/:id/merge_requests/:iid/pipelines)
PIPELINE = {**PIPELINE_BASIC, **_fields(
    'name before_sha tag yaml_errors user created_at updated_at started_at finished_at committed_at duration '
    'queued_duration coverage detailed_status archived')}
# what GitLab answers instead of an object when it refuses a request
ERROR = _fields('message error')


def undocumented(value: Any, entity: Entity, where: str = '') -> Iterator[str]:
    """The fields of `value` (an object, or a list of them) that `entity` does not document, each as its path."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from undocumented(item, entity, f'{where}[{index}]')
        return
    if not isinstance(value, dict):
        return
    for name, field in value.items():
        path = f'{where}.{name}' if where else name
        if name not in entity:
            yield path
        elif entity[name] is not None:
            yield from undocumented(field, entity[name], path)
