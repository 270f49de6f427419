# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`[tool.mrbot]` in the repository's pyproject.toml, with this repository's conventions as the defaults."""

from __future__ import annotations

import difflib
import fnmatch
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from mrbot.records import MrbotError
from mrbot.records.findings import SEVERITIES
from mrbot.targets import DEFAULT_TARGETS, parse_targets

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

OFF = 'off'
DEFAULT_HEADER = ('# Copyright (c) 2026, the mrbot authors.', '# SPDX-License-Identifier: MIT')
DEFAULT_TAGS = ('Backends', 'Bench', 'Bot', 'Build', 'Checks', 'CI', 'Docs', 'Fix', 'KDA', 'Misc', 'Ops', 'Perf',
                'Refactor', 'Simple GLA', 'Test', 'Utils')


STATE = '.mrbot'
# Set by `mrbot --config FILE`, so that every stage and every process a command starts reads the same settings.
CONFIG_VARIABLE = 'MRBOT_CONFIG'
# Runner class -> labels of its self-hosted runners; an `smNN` label also names the compute capability it must have.
DEFAULT_RUNNERS = {'hopper': ['self-hosted', 'linux', 'x64', 'gpu', 'sm90'],
                   'blackwell': ['self-hosted', 'linux', 'x64', 'gpu', 'sm100']}


def state_dir(root: Path, *parts: str) -> Path:
    """A folder under the repository's `.mrbot/`, created on first use; like .pytest_cache, `.mrbot/` ignores itself,
    so nothing mrbot keeps there ever shows up as a change.

    A repository can commit neither: a link on the way (mrbot would write, and delete, where it points) nor tracked
    files under `.mrbot/` (caches it would believe) are accepted.
    """
    folder = root.joinpath(STATE, *parts)
    for step in (root.joinpath(STATE, *parts[:i]) for i in range(len(parts) + 1)):
        if step.is_symlink():
            raise MrbotError(f'{step.relative_to(root)} is a symbolic link: mrbot keeps its state in a real folder there; '
                             'remove the link')
        if step.exists() and not step.is_dir():
            raise MrbotError(f'{step.relative_to(root)} is a file: mrbot keeps its state in a folder there; remove or '
                             'rename the file')
    tracked = subprocess.run(['git', 'ls-files', '--', STATE], cwd=root, capture_output=True, text=True).stdout
    if tracked.strip():
        raise MrbotError(f'{STATE}/ holds files git tracks ({tracked.split()[0]}, ...): it is mrbot\'s own cache, which '
                         f'a commit must not supply; git rm -r --cached {STATE}')
    folder.mkdir(parents=True, exist_ok=True)
    (root / STATE / '.gitignore').write_text('*\n')
    return folder


def write_whole(path: Path, text: str) -> None:
    """Write `path` whole or not at all: a second file, named for this process and thread, renamed over it, so that
    neither an interrupt nor a writer beside this one leaves half a file for the next reader."""
    partial = path.with_name(f'{path.name}.{os.getpid()}.{threading.get_ident()}.partial')
    partial.write_text(text, encoding='utf-8')
    os.replace(partial, path)


@dataclass(frozen=True)
class PathOverride:
    """Rule settings for files matching any of `paths` (fnmatch patterns, where `*` also crosses `/`)."""

    paths: tuple[str, ...]
    rules: dict[str, str]

    def applies_to(self, path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.paths)


@dataclass(frozen=True)
class Config:
    """Everything repository-specific; each field is a key of `[tool.mrbot]` with `-` for `_`."""

    target_branches: tuple[str, ...] = ('origin/main', 'main')
    source_roots: tuple[str, ...] = ('fla',)
    test_roots: tuple[str, ...] = ('tests',)
    # Accepted PR title tags; empty accepts any tag of the right form.
    title_tags: tuple[str, ...] = DEFAULT_TAGS
    perf_tags: tuple[str, ...] = ('Perf',)
    body_sections: tuple[str, ...] = ('Summary', 'Test plan', 'Benchmark', 'Breaking changes')
    # Required first lines of every source file; `{year}` stands for any four-digit year.
    header: tuple[str, ...] = DEFAULT_HEADER
    header_files: tuple[str, ...] = ('*.py',)
    max_file_bytes: int = 1_000_000
    max_binary_bytes: int = 512_000
    # Changed files matching these select every test: packaging, CI, and code everything leans on.
    full_suite_paths: tuple[str, ...] = ('pyproject.toml', 'setup.py', 'setup.cfg', 'Makefile', '.ci/*',
                                         'requirements*.txt', 'constraints*.txt', 'conftest.py')
    global_paths: tuple[str, ...] = ('fla/utils.py', 'fla/utils/*', 'fla/ops/common/*')
    # Glob of data files -> the modules that read them, so a changed data file selects those modules' tests.
    data_files: dict[str, list[str]] = field(default_factory=dict)
    # pytest arguments run when a Python change selects no test; empty runs the full suite.
    smoke_tests: tuple[str, ...] = ()
    # Test files selection never picks (matched folder by folder, `**` across), such as tests of packages CI lacks.
    exclude_tests: tuple[str, ...] = ()
    # Rule id (or id prefix such as 'RUF') -> 'error', 'warning', 'note' or 'off'.
    rules: dict[str, str] = field(default_factory=dict)
    overrides: tuple[PathOverride, ...] = ()
    # Packages whose public signatures a change must not break without saying so (the PR body's Breaking changes).
    public_roots: tuple[str, ...] = ('fla',)
    # A folder of jinja2 templates that take the place of mrbot's own of the same name (pr_body.md.j2, report.md.j2).
    templates: str = ''
    # GPU runner classes that `/bench` and `/test` can ask for (`--on CLASS`), the first being the default.
    runners: dict[str, list[str]] = field(default_factory=lambda: {k: list(v) for k, v in DEFAULT_RUNNERS.items()})
    # When not empty, only these logins may run commands (they still need write access).
    command_users: tuple[str, ...] = ()
    # Seconds a user waits between accepted GPU commands, and GPU jobs a PR may have queued at once.
    command_cooldown_s: int = 300
    command_queue_limit: int = 2
    # An accepted job with no result after this long no longer counts as queued (its runner died or it was cancelled).
    command_job_hours: int = 12
    # Whether `mrbot action` checks draft pull requests too.
    check_drafts: bool = False
    # Whether a backend verifier may name leading parameters and take the rest as `*args, **kwargs` (BKD002).
    verifier_pass_through: bool = False
    # NVIDIA targets every kernel the change reaches must compile for (`mrbot compile`), e.g. sm_90, sm_100.
    compile_targets: tuple[str, ...] = DEFAULT_TARGETS
    # Seconds each test may run while `mrbot compile` captures its launches; by then it has made them.
    compile_test_seconds: int = 60
    # [tool.mrbot.bench]: the benchmarkable ops, checked by mrbot.repo.ops, which owns their form.
    bench: dict | None = None

    def severity(self, rule: str, path: str, default: str) -> str:
        """The severity of `rule` at `path` ('off' when disabled): the most specific setting wins, path overrides last."""
        severity = _lookup(self.rules, rule) or default
        for override in self.overrides:
            if override.applies_to(path):
                severity = _lookup(override.rules, rule) or severity
        return severity

    def is_source(self, path: str) -> bool:
        return any(path.startswith(root.rstrip('/') + '/') for root in self.source_roots)

    def is_test(self, path: str) -> bool:
        return any(path.startswith(root.rstrip('/') + '/') for root in self.test_roots)


def _lookup(table: dict[str, str], rule: str) -> str | None:
    if rule in table:
        return table[rule]
    family = rule.split(':')[0]
    return table.get(family)


def suggestion(word: str, known: Iterable[str]) -> str:
    """'; did you mean X?' for the known word closest to `word`, or nothing when none is close."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f'; did you mean {close[0]}?' if close else ''


def _check_severities(where: str, table: Any) -> dict[str, str]:
    if not isinstance(table, dict):
        raise MrbotError(f'{where}: expected a table of rule id = severity, got {type(table).__name__}')
    for rule, severity in table.items():
        if severity not in (*SEVERITIES, OFF):
            raise MrbotError(f"{where}.{rule}: expected one of error, warning, note, off; got {severity!r}")
    return dict(table)


def _convert(name: str, value: Any, default: Any) -> Any:
    where = f'[tool.mrbot] {name.replace("_", "-")}'
    if name == 'rules':
        return _check_severities(where, value)
    if name == 'bench':
        if not isinstance(value, dict):
            raise MrbotError(f'{where}: expected a table [tool.mrbot.bench], got {value!r}')
        return value
    if name == 'data_files':
        if not (isinstance(value, dict) and all(isinstance(v, list) and all(isinstance(m, str) for m in v)
                                                for v in value.values())):
            raise MrbotError(f'{where}: expected a table of glob = ["path/of/module.py", ...], got {value!r}')
        return {glob: list(modules) for glob, modules in value.items()}
    if name == 'runners':
        if not (isinstance(value, dict) and value and all(
                isinstance(v, list) and v and all(isinstance(label, str) for label in v) for v in value.values())):
            raise MrbotError(f'{where}: expected a table of class = ["self-hosted", "sm90", ...], got {value!r}')
        # a class names the sticky comment of its results, so it keeps to the characters such names allow
        bad = [runner for runner in value if not re.fullmatch(r'[a-z0-9]+(-[a-z0-9]+)*', runner)]
        if bad:
            raise MrbotError(f'{where}: class {bad[0]!r}: expected lowercase letters, digits and single dashes, '
                             'e.g. hopper or gb200-nvl')
        return {runner: list(labels) for runner, labels in value.items()}
    if name == 'compile_targets':
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise MrbotError(f'{where}: expected a list of target names such as ["sm_90", "sm_100"], got {value!r}')
        return tuple(t.name for t in parse_targets(value, where))
    if name == 'overrides':
        if not isinstance(value, list):
            raise MrbotError(f'{where}: expected an array of tables [[tool.mrbot.overrides]], got {type(value).__name__}')
        result = []
        for i, entry in enumerate(value):
            if not isinstance(entry, dict):
                raise MrbotError(f'{where}[{i}]: expected a table with paths and rules, got {entry!r}')
            for key in entry.keys() - {'paths', 'rules'}:
                raise MrbotError(f"{where}[{i}].{key}: unknown key{suggestion(key, ('paths', 'rules'))}; an override "
                                 'has paths and rules')
            paths = entry.get('paths')
            if not (isinstance(paths, list) and paths and all(isinstance(p, str) for p in paths)):
                raise MrbotError(f'{where}[{i}].paths: expected a non-empty list of path patterns')
            result.append(PathOverride(tuple(paths), _check_severities(f'{where}[{i}].rules', entry.get('rules', {}))))
        return tuple(result)
    if isinstance(default, tuple):
        if isinstance(value, str) and name == 'header':
            value = value.splitlines()
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise MrbotError(f'{where}: expected a list of strings, got {value!r}')
        return tuple(value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise MrbotError(f'{where}: expected true or false, got {value!r}')
        return value
    if isinstance(default, str) and not isinstance(value, str):
        raise MrbotError(f'{where}: expected a string, got {value!r}')
    if isinstance(default, int) and not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        raise MrbotError(f'{where}: expected a positive integer, got {value!r}')
    return value


def settings_file(root: Path, environ: Mapping[str, str] = os.environ) -> Path:
    """Where the settings come from: the file `mrbot --config` (or MRBOT_CONFIG) names, else `root/pyproject.toml`."""
    chosen = environ.get(CONFIG_VARIABLE)
    if chosen:
        path = Path(chosen)
        if not path.is_file():
            raise MrbotError(f'--config {chosen}: no such file; expected a pyproject.toml or a TOML file of settings')
        return path
    return root / 'pyproject.toml'


def load_config(root: Path) -> Config:
    """Read the settings of the repository at `root` (`settings_file`); defaults where the file or table is absent."""
    path = settings_file(root)
    if not path.is_file():
        return Config()
    try:
        text = path.read_text(encoding='utf-8')
    except UnicodeDecodeError as exc:
        raise MrbotError(f'{path}: not valid TOML ({exc})') from None
    except OSError as exc:
        raise MrbotError(f'{path}: cannot read it ({exc.strerror}); expected a readable TOML file') from None
    return parse_config(text, str(path), whole=path.name != 'pyproject.toml')


def parse_config(text: str, where: str, whole: bool = False) -> Config:
    """`[tool.mrbot]` of a pyproject.toml's text, or with `whole` a file of settings alone: its `[tool.mrbot]`, else
    its top level (`where` names it in errors); defaults where the table is absent."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MrbotError(f'{where}: not valid TOML ({exc})') from None
    table: Any = document
    # a file of settings alone may still hold them as [tool.mrbot], as `mrbot init --print` writes them
    if not whole or 'tool' in document:
        table = document.get('tool', {})
        if not isinstance(table, dict):
            raise MrbotError(f'{where}: tool is {table!r}; expected a table such as [tool.mrbot]')
        table = table.get('mrbot', {})
        if not isinstance(table, dict):
            raise MrbotError(f'{where}: tool.mrbot is {table!r}; expected a table [tool.mrbot]')
    known = {f.name: f for f in fields(Config)}
    values = {}
    for key, value in table.items():
        name = key.replace('-', '_')
        if name not in known:
            names = [k.replace('_', '-') for k in known]
            raise MrbotError(f'[tool.mrbot] {key}: unknown setting{suggestion(key, names)} (`mrbot config` shows every '
                             'setting)')
        values[name] = _convert(name, value, known[name].default)
    return Config(**values)


def toml_string(text: str) -> str:
    # a JSON string is a TOML basic string, but for DEL, which TOML wants escaped
    return json.dumps(text, ensure_ascii=False).replace('\x7f', '\\u007f')


def toml_array(items: Iterable[str]) -> str:
    return f"[{', '.join(toml_string(item) for item in items)}]"


def toml_key(key: str) -> str:
    return key if re.fullmatch(r'[A-Za-z0-9_-]+', key) else toml_string(key)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (list, tuple)):
        return toml_array(value)
    return '{ ' + ', '.join(f'{toml_key(k)} = {toml_value(v)}' for k, v in value.items()) + ' }'


def render_settings(config: Config) -> str:
    """Every setting of `config` as the `[tool.mrbot]` table that would give it, defaults included."""
    lines, tables = ['[tool.mrbot]'], []
    for setting in fields(Config):
        key, value = setting.name.replace('_', '-'), getattr(config, setting.name)
        if setting.name == 'overrides':
            for override in value:
                tables += ['', '[[tool.mrbot.overrides]]', f'paths = {toml_array(override.paths)}',
                           f'rules = {toml_value(override.rules)}']
        elif setting.name == 'bench':
            if value:
                tables += ['', '# [tool.mrbot.bench]: `mrbot bench --list` shows the ops it defines']
        else:
            lines.append(f'{key} = {toml_value(value)}')
    return '\n'.join(lines + tables) + '\n'
