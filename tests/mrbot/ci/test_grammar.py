# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The `/bench` and `/test` grammar, what it refuses, and who may run a command when."""

from __future__ import annotations

import datetime

import pytest

from mrbot.ci.grammar import (
    Seal,
    UsageError,
    authorize,
    capabilities,
    from_json,
    marker,
    markers,
    parse,
    requested_runners,
)
from mrbot.config import Config, load_config
from mrbot.records import MrbotError
from mrbot.repo.ops import OpSpec

SPECS = [OpSpec('chunk_simple_gla', 'fla.ops.simple_gla:chunk_simple_gla', 'config',
                shapes={'B8-T2048': {'B': 8, 'T': 2048}, 'varlen-T8192': {'T': 8192, 'N': 8}}),
         OpSpec('chunk_kda', 'fla.ops.kda:chunk_kda', 'config', shapes={'kda-B2': {'B': 2}})]
CONFIG = Config()
NOW = datetime.datetime(2026, 12, 3, 12, 0, tzinfo=datetime.timezone.utc)
SHA = '1a2b3c4d5e6f' * 3 + '1a2b'
# The seal of the bot's markers on pull request #1 of a repository with a signing key.
SEAL = Seal.of(b'the signing key', 'github', 'octo/kernels', 1)


def test_bench_is_normalized_and_its_line_parses_back():
    command = parse('/bench chunk_simple_gla chunk_simple_gla --modes fwd --shapes varlen-T8192 --on blackwell hopper '
                    '--rounds 12 --base main', SPECS, CONFIG)
    assert command.kind == 'bench' and command.runners == ('blackwell', 'hopper')
    assert command.args == {'ops': ['chunk_simple_gla'], 'modes': ['fwd'], 'shapes': ['varlen-T8192'], 'rounds': 12,
                            'base': 'main', 'sha': None}
    assert parse(command.line(), SPECS, CONFIG) == command


def test_defaults_are_the_touched_ops_ten_rounds_and_the_first_runner_class():
    command = parse('/bench', SPECS, CONFIG)
    assert command.args == {'ops': [], 'modes': [], 'shapes': [], 'rounds': 10, 'base': None, 'sha': None}
    assert command.runners == ('hopper',) and 'the ops the PR touches' in command.describe()


def test_test_command_keeps_node_ids_and_a_quoted_expression():
    command = parse('/test tests/ops/test_kda.py::test_varlen[T65-bf16] -k "chunk and not fused" --on hopper --sha '
                    + SHA, SPECS, CONFIG)
    assert command.args == {'tests': ['tests/ops/test_kda.py::test_varlen[T65-bf16]'], 'k': 'chunk and not fused',
                            'sha': SHA}
    assert from_json('test', command.args, 'hopper', SPECS, CONFIG) == command


def test_help_and_crlf_line_endings():
    assert parse('/mrbot help\r\n', SPECS, CONFIG).kind == 'help'


@pytest.mark.parametrize(('text', 'message'), [
    ('/bench chunk_simple_gla; curl x | sh', "the character ';' is not allowed"),
    ('/bench $(curl x)', "the character '$' is not allowed"),
    ('/test `id`', "the character '`' is not allowed"),
    ("/test -k 'x'", 'the character "\'" is not allowed'),
    ('/bench chunk_simple_gla\ncurl x | sh', 'a command is one line'),
    ('/bench chunk_simple_gla\r' + 'x' * 10, "the character '\\r' is not allowed"),
    ('/bench ' + 'chunk_simple_gla ' * 30, 'at most 300 are read'),
    ('/bench flash_attn', "unknown op 'flash_attn'; expected one of chunk_simple_gla, chunk_kda"),
    ('/bench chunk_kda --shapes B8-T2048', '--shapes B8-T2048: unknown shape; expected one of kda-B2'),
    ('/bench --modes bwd', '--modes bwd: expected fwd or fwdbwd'),
    ('/bench --rounds 500', '--rounds 500: expected a whole number from 3 to 50'),
    ('/bench --rounds 5 6', '--rounds takes one value, got 2'),
    ('/bench --on ampere', '--on ampere: unknown runner class; expected one of hopper, blackwell'),
    ('/bench --base main..evil', '--base main..evil: expected a branch, tag or commit name'),
    ('/bench --base -x', "unknown option '-x'"),
    ('/test ../../etc/passwd', "'../../etc/passwd': expected a test file, folder or node id inside the repository"),
    ('/test /etc/passwd', "'/etc/passwd': expected a test file"),
    ('/test -k', '-k needs a value'),
    ('/test --rounds 3', "unknown option '--rounds'"),
    ('/test --sha HEAD', '--sha HEAD: expected the whole commit id, 40 lowercase hexadecimal digits'),
    # a prefix can be matched by a commit made after the comment (7 hex digits: under a minute of hashing on 2 cores)
    ('/test --sha 1a2b3c4', '--sha 1a2b3c4: expected the whole commit id, 40 lowercase hexadecimal digits'),
    (f'/test --sha {"1a2b3c4d" * 5}0', f'--sha {"1a2b3c4d" * 5}0: expected the whole commit id'),
    ('/mrbot run', "unknown command '/mrbot run'; expected '/mrbot help'"),
    ('/bench "unclosed', 'cannot split the command'),
])
def test_anything_else_is_a_usage_error_naming_what_is_wrong(text, message):
    with pytest.raises(UsageError) as error:
        parse(text, SPECS, CONFIG)
    assert message in str(error.value)


@pytest.mark.parametrize(('line', 'runners'), [
    ('/bench chunk_kda --on blackwell hopper blackwell --rounds 5', ('blackwell', 'hopper')),
    ('/test tests/ops -k "not slow" --on hopper', ('hopper',)),
    # the classes are the settings' to check, which the GPU job reads: any name is handed on as written
    ('/bench flash_attn --on ampere', ('ampere',)),
    ('/bench', ()),
    ('/mrbot help', None),
    ('/benchmark', None),
    ('looks good /bench', None),
])
def test_a_receiver_without_settings_reads_the_classes_a_command_names(line, runners):
    assert requested_runners(line) == runners


@pytest.mark.parametrize(('line', 'message'), [
    ('/bench --on hopper; curl x', "the character ';' is not allowed"),
    ('/test --rounds 3', "unknown option '--rounds'"),
    ('/bench --on', '--on needs a value'),
    ('/bench "unclosed', 'cannot split the command'),
    # the receiver keeps the classes between spaces and runs the job named after each
    ('/bench --on "hopper blackwell"', "--on 'hopper blackwell': expected the name of a runner class"),
    ('/bench --on ""', "--on '': expected the name of a runner class"),
])
def test_a_command_the_grammar_cannot_read_is_a_usage_error_without_settings_too(line, message):
    with pytest.raises(UsageError, match=message):
        requested_runners(line)


def test_arguments_handed_on_are_checked_again():
    with pytest.raises(UsageError, match=r"the character '\$' is not allowed"):
        from_json('bench', {'ops': ['x$(id)'], 'modes': [], 'shapes': [], 'rounds': 10, 'base': None, 'sha': None},
                  'hopper', SPECS, CONFIG)
    with pytest.raises(UsageError, match='expected bench or test'):
        from_json('bench', {'ops': []}, 'hopper', SPECS, CONFIG)


def _accepted(user: str, minutes_ago: float, run: str) -> str:
    at = (NOW - datetime.timedelta(minutes=minutes_ago)).isoformat()
    return 'Accepted.\n' + marker('accepted', SEAL, run=run, user=user, at=at, sha='a' * 40, command='bench',
                                  runners=['hopper'])


@pytest.mark.parametrize(('association', 'permission', 'reason'), [
    ('CONTRIBUTOR', 'write', '@carol is not a member or collaborator of this repository (contributor)'),
    ('NONE', 'none', '@carol is not a member or collaborator'),
    ('MEMBER', 'read', '@carol has read permission; commands need write access'),
    ('COLLABORATOR', 'triage', '@carol has triage permission'),
])
def test_outsiders_and_readers_are_refused(association, permission, reason):
    decision = authorize('carol', association, permission, [], NOW, CONFIG, seal=SEAL)
    assert not decision.allowed and reason in decision.reason


def test_a_member_with_write_access_is_allowed_and_the_allow_list_narrows_it():
    assert authorize('alice', 'MEMBER', 'write', [], NOW, CONFIG, seal=SEAL).allowed
    narrowed = Config(command_users=('bob',))
    decision = authorize('alice', 'OWNER', 'admin', [], NOW, narrowed, seal=SEAL)
    assert not decision.allowed and 'allow-list' in decision.reason


def test_cooldown_counts_from_the_users_last_accepted_job():
    recent = [_accepted('alice', 2, '101')]
    decision = authorize('alice', 'MEMBER', 'write', recent, NOW, CONFIG, seal=SEAL)
    assert not decision.allowed and 'started a job 120 s ago; try again in 181 s' in decision.reason
    assert authorize('bob', 'MEMBER', 'write', recent, NOW, CONFIG, seal=SEAL).allowed
    assert authorize('alice', 'MEMBER', 'write', [_accepted('alice', 6, '101')], NOW, CONFIG, seal=SEAL).allowed


def test_queue_limit_counts_accepted_jobs_without_a_result():
    bodies = [_accepted('alice', 30, '101'), _accepted('bob', 20, '102')]
    decision = authorize('carol', 'MEMBER', 'write', bodies, NOW, CONFIG, seal=SEAL)
    assert not decision.allowed
    assert 'this PR has 2 GPU jobs queued and this asks for 1 more (the limit is 2)' in decision.reason
    done = bodies + ['### mrbot bench on hopper\n' + marker('done', SEAL, run='101')]
    assert authorize('carol', 'MEMBER', 'write', done, NOW, CONFIG, seal=SEAL).allowed
    # a job accepted long ago whose result never came no longer blocks the PR
    stale = [_accepted('alice', 13 * 60, '99'), _accepted('bob', 20, '102')]
    assert authorize('carol', 'MEMBER', 'write', stale, NOW, CONFIG, seal=SEAL).allowed


def test_capabilities_come_from_the_sm_labels():
    assert capabilities(['self-hosted', 'gpu', 'sm90']) == {'sm_90'}
    assert capabilities(['sm100', 'sm_103', 'linux']) == {'sm_100', 'sm_103'}


def test_runner_classes_are_configurable_and_checked(tmp_path):
    (tmp_path / 'pyproject.toml').write_text('[tool.mrbot.runners]\nh200 = ["self-hosted", "sm90"]\n')
    assert load_config(tmp_path).runners == {'h200': ['self-hosted', 'sm90']}
    (tmp_path / 'pyproject.toml').write_text('[tool.mrbot]\nrunners = { h200 = "sm90" }\n')
    with pytest.raises(MrbotError, match=r'\[tool.mrbot\] runners: expected a table of class = \["self-hosted"'):
        load_config(tmp_path)
    (tmp_path / 'pyproject.toml').write_text('[tool.mrbot]\ncheck-drafts = "yes"\n')
    with pytest.raises(MrbotError, match='check-drafts: expected true or false'):
        load_config(tmp_path)


def test_queue_counts_one_job_per_runner_class_and_ignores_markers_from_the_future():
    both = 'Accepted.\n' + marker('accepted', SEAL, run='7', user='alice', at=(NOW - datetime.timedelta(hours=1)).isoformat(),
                                   sha='a' * 40, command='bench', runners=['hopper', 'blackwell'])
    decision = authorize('bob', 'MEMBER', 'write', [both], NOW, CONFIG, seal=SEAL)
    assert not decision.allowed and 'this PR has 2 GPU jobs queued' in decision.reason
    assert not authorize('bob', 'MEMBER', 'write', [], NOW, CONFIG, jobs=3, seal=SEAL).allowed
    forged = marker('accepted', SEAL, run='8', user='bob', at='2099-01-01T00:00:00+00:00', sha='a' * 40, command='bench',
                    runners=['hopper', 'hopper'])
    assert authorize('bob', 'MEMBER', 'write', [forged], NOW, CONFIG, seal=SEAL).allowed


def test_runner_class_names_are_checked():
    with pytest.raises(MrbotError, match="class 'H100_sxm': expected lowercase letters, digits and single dashes"):
        from mrbot.config import parse_config

        parse_config('[tool.mrbot.runners]\nH100_sxm = ["sm90"]\n', 'pyproject.toml')


def test_a_flag_without_values_is_an_error_wherever_it_stands():
    with pytest.raises(UsageError, match='^--modes needs a value$'):
        parse('/bench --modes --shapes B8-T2048', SPECS, CONFIG)


def test_markers_are_read_from_any_body_a_note_may_hold():
    done = marker('done', SEAL, run='7')
    # what the bot writes, among markers of the other kind, garbage and a marker cut short
    body = f"{marker('accepted', SEAL, run='7')}\nresult {done} <!-- mrbot:done {{not json}} --> <!-- mrbot:done {{\"run\": "
    assert markers([body], 'done', SEAL) == [{'run': '7'}] and markers([body], 'accepted', SEAL) == [{'run': '7'}]
    # GitLab's longest note, all openers and no end: read at once, as every body is (reading from each opener to the
    # end of its line took about 9 minutes here)
    assert markers(['<!-- mrbot:done {' * 58_824], 'done', SEAL) == []


def test_only_markers_the_seal_proves_count_and_a_copy_counts_once():
    signed = _accepted('alice', 30, '101')
    # another workflow of the repository comments as the same account, echoing a PR's text that holds markers
    echoed = marker('accepted', None, run='102', user='bob', at=(NOW - datetime.timedelta(minutes=20)).isoformat(),
                    sha='a' * 40, command='bench', runners=['hopper'])
    elsewhere = marker('accepted', Seal.of(b'the signing key', 'github', 'octo/kernels', 2), run='103', user='bob',
                       at=(NOW - datetime.timedelta(minutes=20)).isoformat(), sha='a' * 40, command='bench',
                       runners=['hopper'])
    wrong_key = marker('accepted', Seal.of(b'a guess', 'github', 'octo/kernels', 1), run='104', user='bob',
                       at=(NOW - datetime.timedelta(minutes=20)).isoformat(), sha='a' * 40, command='bench',
                       runners=['hopper'])
    assert [m['run'] for m in markers([signed, echoed, elsewhere, wrong_key, signed], 'accepted', SEAL)] == ['101']
    # a signed marker of one kind is not one of the other
    assert markers([signed.replace('mrbot:accepted', 'mrbot:done')], 'done', SEAL) == []
    # the queue counts the jobs the bot accepted, once each: a quoted copy fills no slot
    assert authorize('carol', 'MEMBER', 'write', [signed, echoed, elsewhere, signed], NOW, CONFIG, seal=SEAL).allowed
    # without a seal (GitLab, where the token's own user proves a note) every marker of the bot's notes counts
    assert [m['run'] for m in markers([signed, echoed], 'accepted', None)] == ['101', '102']
