# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What a change is, for its PR body: a `[Tag] Summary` title, the files by area, the tests it adds or edits."""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath

from mrbot.config import Config
from mrbot.records.change import ChangedFile, ChangeSet

# Folders and files whose purpose names a tag no path component spells.
AREA_TAGS = {'mrbot': 'Bot', 'templates': 'Bot', 'checks': 'Checks', 'tests': 'Test', 'docs': 'Docs',
             'benchmarks': 'Bench', '.github': 'CI', '.ci': 'CI', 'pyproject.toml': 'Build', 'Makefile': 'Build',
             'setup.py': 'Build'}
FALLBACK_TAG = 'Misc'

# A `[Tag] Summary` title: the tag, then the summary.
_TITLE = re.compile(r'^\[([^\[\]]+)\] +(\S.*)$')


def title_tag(title: str | None) -> str | None:
    """The tag of a `[Tag] Summary` title, or None."""
    match = _TITLE.match(title or '')
    return match.group(1) if match else None


def _key(text: str) -> str:
    return re.sub(r'[^a-z0-9]', '', text.lower())


def _is_doc(path: str) -> bool:
    return path.endswith(('.md', '.rst')) or path.startswith('docs/')


def _tag_of(path: str, tags: dict[str, str]) -> str | None:
    """The tag named by the path's most specific component: `fla/ops/simple_gla/chunk.py` gives `Simple GLA`."""
    parts = PurePosixPath(path).parts
    for part in reversed(parts):
        stem = part.removesuffix('.py').removeprefix('test_')
        if _key(stem) in tags:
            return tags[_key(stem)]
    return next((AREA_TAGS[p] for p in reversed(parts) if p in AREA_TAGS and AREA_TAGS[p] in tags.values()), None)


def choose_tag(paths: list[str], config: Config) -> str:
    """The title tag for a change of `paths`: Test or Docs when that is all it touches, else the tag most of its
    non-test files name (files under a source root count double), else Misc."""
    tags = {_key(t): t for t in config.title_tags} or {_key(t): t for t in (*AREA_TAGS.values(), FALLBACK_TAG)}
    if paths and all(config.is_test(p) for p in paths) and 'test' in tags:
        return tags['test']
    if paths and all(_is_doc(p) for p in paths) and 'docs' in tags:
        return tags['docs']
    votes: Counter[str] = Counter()
    for path in paths:
        tag = _tag_of(path, tags)
        if tag and not config.is_test(path):
            votes[tag] += 2 if config.is_source(path) else 1
    return votes.most_common(1)[0][0] if votes else tags.get(_key(FALLBACK_TAG), FALLBACK_TAG)


def area(path: str) -> str:
    """The folder a file belongs to for grouping, at most three levels deep (`fla/ops/simple_gla`)."""
    parent = PurePosixPath(path).parent.parts[:3]
    return '/'.join(parent) if parent else '(top level)'


def choose_title(change: ChangeSet, config: Config, given: str | None) -> tuple[str, str]:
    """The PR title and where it came from: `--title`, else the branch's first commit subject, tagged from the paths
    when it has no tag, else `[Tag] Update <area>` for uncommitted work."""
    if given:
        return given, 'flag'
    tag = choose_tag([f.path for f in change.files], config)
    if change.commits:
        subject = change.commits[-1].subject.strip()
        return (subject if title_tag(subject) else f'[{tag}] {subject}'), 'commit'
    areas = Counter(area(f.path) for f in change.files)
    return f'[{tag}] Update {areas.most_common(1)[0][0] if areas else "the repository"}', 'generated'


def line_counts(file: ChangedFile) -> tuple[int, int]:
    """Lines added and removed."""
    return sum(len(h.new_lines) for h in file.hunks), sum(len(h.old_lines) for h in file.hunks)


def _test_functions(text: str | None) -> dict[str, str]:
    """Each test function of a module (class methods as `Class::name`) and its source, for comparing two versions;
    the key '' holds everything else at module level (shared cases, helpers, fixtures)."""
    if not text:
        return {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    found, rest = {}, []
    for node in tree.body:
        members = [(f'{node.name}::', n) for n in node.body] if isinstance(node, ast.ClassDef) else [('', node)]
        tests = [(prefix + m.name, m) for prefix, m in members
                 if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and m.name.startswith('test')]
        found.update((name, ast.unparse(member)) for name, member in tests)
        if not tests:
            rest.append(ast.unparse(node))
    found[''] = '\n'.join(rest)
    return found


def _case_ids(text: str | None) -> set[str]:
    """The ids of the module's `pytest.param(..., id='...')` cases."""
    try:
        tree = ast.parse(text or '')
    except SyntaxError:
        return set()
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, 'attr', '') == 'param']
    return {k.value.value for call in calls for k in call.keywords
            if k.arg == 'id' and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)}


@dataclass(frozen=True)
class TestFileChange:
    """A changed test file: its status, the test functions it adds, removes and edits (body or decorators), the
    parametrized case ids it adds and removes, and whether its shared module-level code (case lists, helpers) changed."""

    path: str
    status: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    edited: tuple[str, ...]
    cases_added: tuple[str, ...]
    cases_removed: tuple[str, ...]
    shared_code_edited: bool

    def to_json(self) -> dict:
        return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(self).items()}


@dataclass(frozen=True)
class FileSummary:
    """A changed file as the PR body lists it: its area, its line counts and whether it changes code (not only prose,
    comments, docstrings or layout)."""

    path: str
    status: str
    area: str
    added: int
    removed: int
    code: bool

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ChangeSummary:
    """What the PR body says of the change itself: its revisions, title, commits, files, test changes and, for each
    changed test file that imports a changed source, the chain of imports between them."""

    base: str
    head: str
    branch: str | None
    title: str | None
    title_source: str | None
    commits: tuple[tuple[str, str], ...]
    files: tuple[FileSummary, ...]
    tests_changed: tuple[TestFileChange, ...]
    chains: tuple[tuple[str, tuple[str, ...]], ...]

    def to_json(self) -> dict:
        return {'base': self.base, 'head': self.head, 'branch': self.branch, 'title': self.title,
                'title_source': self.title_source,
                'commits': [{'sha': sha, 'subject': subject} for sha, subject in self.commits],
                'files': [f.to_json() for f in self.files], 'tests_changed': [t.to_json() for t in self.tests_changed],
                'chains': [{'from': path, 'chain': list(chain)} for path, chain in self.chains]}


def test_changes(change: ChangeSet, config: Config) -> tuple[TestFileChange, ...]:
    """What each changed test file of `change` adds, removes and edits."""
    found = []
    for file in change.files:
        if not (config.is_test(file.path) and file.path.endswith('.py')):
            continue
        old, new = _test_functions(file.base_text), _test_functions(file.text)
        shared_old, shared_new = old.pop('', ''), new.pop('', '')
        old_cases, new_cases = _case_ids(file.base_text), _case_ids(file.text)
        found.append(TestFileChange(
            file.path, file.status, tuple(sorted(set(new) - set(old))), tuple(sorted(set(old) - set(new))),
            tuple(sorted(n for n in set(old) & set(new) if old[n] != new[n])), tuple(sorted(new_cases - old_cases)),
            tuple(sorted(old_cases - new_cases)), file.status == 'modified' and shared_old != shared_new))
    return tuple(found)
