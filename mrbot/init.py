# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot init`: the `[tool.mrbot]` table a repository needs, derived from the repository itself.

It reads the license header most Python files under the source roots start with, the title tags and path exemptions
that CONTRIBUTING.md states, and the form of the backend verifiers, and appends the table to pyproject.toml without
changing a byte already there. It is a preset for a maintainer to read, not a recipe run on every change.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import fnmatch
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from checks.header import COPYRIGHT, LICENSE_LINE, leading_comment
from checks.pr import template_sections
from mrbot import git, version
from mrbot.config import Config, PathOverride, parse_config, toml_array, toml_string, toml_value
from mrbot.records import MrbotError
from mrbot.repo.index import python_files
from mrbot.rules import Rule, all_rules, check_rule_ids
from mrbot.workflows import CiFile, github_workflows, gitlab_pipeline, installed_ref, parse_action_ref

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PYPROJECT = 'pyproject.toml'
# Where GitHub looks for contribution guidelines, in the order it looks.
GUIDES = ('CONTRIBUTING.md', '.github/CONTRIBUTING.md', 'docs/CONTRIBUTING.md')
# Where a repository tells coding agents its rules; they bind people's changes as much.
AGENT_GUIDES = ('AGENTS.md', 'CLAUDE.md', '.github/copilot-instructions.md')
# Where a repository keeps the skills it gives coding agents (Markdown, one folder a skill): its rules for a kind of work.
SKILL_FOLDERS = ('.agents/skills', '.claude/skills')
# Rules of house style or of a house process, not of correctness, that bind a repository only where its guides or
# skills state them, and the words that state each.
_FROZEN_GATE = re.compile(r'\bfrozen\b|\bloosen', re.IGNORECASE)
HOUSE_RULES = {
    'MR-ATTRIBUTION': re.compile(r'tool attribution|co-authored-by|generated with', re.IGNORECASE),
    'MR-TITLE': re.compile(r'\btitles?\b|\bprefix tag|\[tag\]', re.IGNORECASE),
    'MR-SKIP': re.compile(r'\[skip[ -](?:test|ci)\]', re.IGNORECASE),
    'CMT001': re.compile(r'\bbanner', re.IGNORECASE),
    'CMT002': re.compile(r'commented[- ]out code', re.IGNORECASE),
    'CMT004': re.compile(r'personal aside|name in a comment', re.IGNORECASE),
    'DOC001': re.compile(r'docstring', re.IGNORECASE),
    **dict.fromkeys(('GATE001', 'GATE002', 'GATE003', 'GATE004'), _FROZEN_GATE),
    'BKD005': re.compile(r'\bverifier\b', re.IGNORECASE),
    'PLT001': re.compile(r'torch\.cuda\b|device[- ]agnostic', re.IGNORECASE),
    # a guide may recommend block pointers ("Use `tl.make_block_ptr` for coalesced access"): only a ban counts
    'TRI001': re.compile(r"\b(?:not|never|no|avoid|don't)\b[^\n]{0,40}?make_block_ptr", re.IGNORECASE),
}
VERIFIER_FILES = '*/backends/*'
# Where GitHub finds the pull request template a body starts from (any case), then GitLab's default merge request one.
BODY_TEMPLATES = ('.github/pull_request_template.md', 'pull_request_template.md', 'docs/pull_request_template.md',
                  '.gitlab/merge_request_templates/Default.md')

# A year that does not start a range: `2024` in "(c) 2024," and `2026` in "2023-2026", not `2023` in "2023-present".
_LAST_YEAR = re.compile(r'(?<!\d)\d{4}(?!\d)(?!\s*[-–])')
_FENCE = re.compile(r'^\s*(```|~~~)')
_LIST_ITEM = re.compile(r'^\s*(?:[-*+]|\d+[.)])\s+')
_SENTENCE_END = re.compile(r'(?<=[.!?])\s+')
_CODE = re.compile(r'`([^`\n]+)`')
_TAG_LIST = re.compile(r'^(?:(?:the|allowed|accepted|valid|title|pr|commit)\s+)*tags(?:\s+are)?\s*:\s*(?P<tags>.+?)\.?$',
                       re.IGNORECASE)
_TAG_SEPARATOR = re.compile(r'\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+')
_TAG = re.compile(r'[A-Za-z0-9][\w .+/-]{0,29}')
_TAG_EXAMPLE = re.compile(r'`\[([^\[\]`]+)\][^`]*`')
_EXEMPT = re.compile(r'\bexempt', re.IGNORECASE)


@dataclass(frozen=True)
class Passage:
    """A paragraph, list item, heading or table row of a Markdown file, joined into one line."""

    line: int
    text: str


@dataclass(frozen=True)
class Guide:
    """The repository's contribution guidelines: the file's path and its passages outside code blocks."""

    path: str
    passages: tuple[Passage, ...]


@dataclass(frozen=True)
class Preset:
    """The settings `mrbot init` writes, and one line per setting saying what it was derived from."""

    header: tuple[str, ...]
    title_tags: tuple[str, ...]
    verifier_pass_through: bool
    overrides: tuple[PathOverride, ...]
    origins: tuple[str, ...]
    # house rules that no guide of the repository states, turned off
    unstated: tuple[str, ...] = ()
    # mrbot's defaults name its own shared code; elsewhere the import graph finds the tests shared code reaches.
    global_paths: tuple[str, ...] = ()
    # the sections MR-BODY asks of a pull request body: the headings of the repository's template
    body_sections: tuple[str, ...] = ()
    # GPU runner classes and their labels, given with --runner; mrbot's defaults where empty
    runners: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _passages(text: str) -> tuple[Passage, ...]:
    passages: list[Passage] = []
    joined: list[str] = []
    start, fenced = 0, False
    for number, line in enumerate(text.splitlines(), 1):
        item = _LIST_ITEM.match(line)
        stripped = line[item.end():].strip() if item else line.strip()
        fence = bool(_FENCE.match(line))
        if fence or fenced or not stripped or stripped.startswith(('#', '|')) or item:
            if joined:
                passages.append(Passage(start, ' '.join(joined)))
            joined = []
        fenced ^= fence
        if fence or fenced or not stripped:
            continue
        if not joined:
            start = number
        joined.append(stripped)
        # a heading or a table row ends where its line does
        if stripped.startswith(('#', '|')):
            passages.append(Passage(start, stripped))
            joined = []
    if joined:
        passages.append(Passage(start, ' '.join(joined)))
    return tuple(passages)


def read_guide(root: Path) -> Guide | None:
    """The first CONTRIBUTING.md of GUIDES that exists, or None."""
    for path in GUIDES:
        if (root / path).is_file():
            return Guide(path, _passages((root / path).read_text(encoding='utf-8', errors='replace')))
    return None


def _sentences(text: str) -> list[str]:
    return _SENTENCE_END.split(text)


def _with_year_placeholder(line: str) -> str:
    return _LAST_YEAR.sub('{year}', line) if COPYRIGHT.search(line) else line


def derive_header(root: Path, sources: list[str], config: Config) -> tuple[tuple[str, ...], str]:
    """The longest leading comment that more than half of the non-empty `sources` start with, years as `{year}`."""
    blocks = []
    for path in sources:
        lines = (root / path).read_text(encoding='utf-8', errors='replace').splitlines()
        if any(line.strip() for line in lines):
            blocks.append(tuple(_with_year_placeholder(line.rstrip()) for line in leading_comment(lines)))
    roots = ', '.join(f"{source_root.rstrip('/')}/" for source_root in config.source_roots)
    header: tuple[str, ...] = ()
    sharing = 0
    while True:
        following = Counter(block[len(header)] for block in blocks
                            if len(block) > len(header) and block[:len(header)] == header)
        line, count = following.most_common(1)[0] if following else ('', 0)
        if count * 2 <= len(blocks):
            break
        header, sharing = (*header, line), count
    if not any(LICENSE_LINE.search(line) for line in header):
        return (), (f'header = [] (none required): no license comment starts more than half of the {len(blocks)} '
                    f'Python files under {roots}')
    return header, f'header: {len(header)} line(s), shared by {sharing} of {len(blocks)} Python files under {roots}'


def derive_title_tags(guide: Guide | None) -> tuple[tuple[str, ...], str]:
    """The closed list of title tags the guide states (`Tags: A, B, C.`), else none: any tag is accepted."""
    if guide is None:
        return (), f'title-tags = [] (any tag): no {GUIDES[0]}'
    for passage in guide.passages:
        for sentence in _sentences(passage.text):
            stated = _TAG_LIST.match(sentence)
            if stated is None:
                continue
            tags = tuple(tag.strip(' `[]') for tag in _TAG_SEPARATOR.split(stated.group('tags')))
            if len(tags) > 1 and all(_TAG.fullmatch(tag) for tag in tags):
                return tags, f'title-tags: {len(tags)} tags, the closed list at {guide.path}:{passage.line}'
    examples = list(dict.fromkeys(tag for passage in guide.passages for tag in _TAG_EXAMPLE.findall(passage.text)))
    if examples:
        shown = ', '.join(f'[{tag}]' for tag in examples[:3])
        return (), f'title-tags = [] (any tag): {guide.path} shows examples ({shown}, ...) but no closed list'
    return (), f'title-tags = [] (any tag): {guide.path} names no title tags'


def derive_pass_through(root: Path, sources: list[str]) -> tuple[bool, str]:
    """Whether any `*_verifier` method of a class under `*/backends/*` takes `*args, **kwargs`."""
    verifiers = []
    for path in sources:
        if not fnmatch.fnmatchcase(path, VERIFIER_FILES):
            continue
        try:
            tree = ast.parse((root / path).read_text(encoding='utf-8'))
        except (SyntaxError, ValueError):
            continue
        verifiers += [method for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for method in node.body
                      if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name.endswith('_verifier')]
    passing = sum(bool(method.args.vararg and method.args.kwarg) for method in verifiers)
    where = f'*_verifier methods under {VERIFIER_FILES}'
    if passing:
        return True, f'verifier-pass-through = true: {passing} of {len(verifiers)} {where} take *args, **kwargs'
    if not verifiers:
        return False, f'verifier-pass-through left out (false): no {where}'
    return False, f'verifier-pass-through left out (false): none of {len(verifiers)} {where} takes *args, **kwargs'


def _exempted_rule(text: str, paths: list[str], rules: list[Rule]) -> str | None:
    """The rule a passage exempts paths from: the one rule id it names, else the one rule whose documentation alone
    holds most of its code spans (`tl.make_block_ptr` is in TRI001's and in no other's); None when that is unclear."""
    named = [r.id for r in rules if re.search(rf'(?<![\w-]){re.escape(r.id)}(?![\w-])', text)]
    if named:
        return named[0] if len(named) == 1 else None
    votes: Counter[str] = Counter()
    for span in set(_CODE.findall(text)) - set(paths):
        documenting = [r.id for r in rules if span in f'{r.title} {r.hint} {r.doc}']
        if len(documenting) == 1:
            votes[documenting[0]] += 1
    ranked = votes.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _path_glob(root: Path, span: str) -> str:
    """The override pattern for a path the guide names: anchored where it exists from the root, else anywhere."""
    path = span.removeprefix('./').strip('/')
    if any(wildcard in path for wildcard in '*?['):
        return path
    pattern = f'{path}/*' if span.endswith('/') or (root / path).is_dir() else path
    return pattern if (root / path).exists() else f'*/{pattern}'


def derive_overrides(root: Path, guide: Guide | None, rules: list[Rule]) -> tuple[tuple[PathOverride, ...], list[str]]:
    """A rule turned off for the paths of each sentence of the guide that says they are exempt from it."""
    if guide is None:
        return (), []
    exempted: dict[str, list[str]] = {}
    origins = []
    for passage in guide.passages:
        for sentence in filter(_EXEMPT.search, _sentences(passage.text)):
            paths = [span for span in _CODE.findall(sentence) if '/' in span and ' ' not in span and '://' not in span]
            if not paths:
                continue
            rule_id = _exempted_rule(passage.text, paths, rules)
            where = f'{guide.path}:{passage.line} "{sentence}"'
            if rule_id is None:
                origins.append(f'overrides: none for {", ".join(paths)}: no one rule of mrbot matches {where}')
                continue
            globs = [_path_glob(root, path) for path in paths]
            known = exempted.setdefault(rule_id, [])
            known += [glob for glob in dict.fromkeys(globs) if glob not in known]
            origins.append(f'overrides: {rule_id} off in {", ".join(globs)}: {where}')
    return tuple(PathOverride(tuple(globs), {rule_id: 'off'}) for rule_id, globs in exempted.items()), origins


def derive_body_sections(root: Path) -> tuple[tuple[str, ...], str]:
    """The second-level headings of the repository's pull request template, the sections a body must fill."""
    for path in BODY_TEMPLATES:
        folder = root / Path(path).parent
        found = next((entry for entry in sorted(folder.iterdir()) if entry.name.lower() == Path(path).name.lower()
                      and entry.is_file()), None) if folder.is_dir() else None
        if found is not None:
            sections = template_sections(found.read_text(encoding='utf-8', errors='replace'))
            where = found.relative_to(root).as_posix()
            return sections, (f"body-sections: {', '.join(sections)}: the headings of {where}" if sections else
                              f'body-sections = [] (MR-BODY asks for none): {where} has no second-level heading')
    return (), 'body-sections = [] (MR-BODY asks for none): no pull request template (' + ', '.join(BODY_TEMPLATES) + ')'


def derive_unstated(root: Path) -> tuple[tuple[str, ...], str]:
    """The house rules (HOUSE_RULES) that none of the repository's guides and agent skills states."""
    paths = [root / path for path in (*GUIDES, *AGENT_GUIDES)]
    paths += [path for folder in SKILL_FOLDERS for path in sorted((root / folder).rglob('*.md'))]
    texts = [path.read_text(encoding='utf-8', errors='replace') for path in paths if path.is_file()]
    unstated = tuple(rule for rule, words in HOUSE_RULES.items() if not any(words.search(text) for text in texts))
    if not unstated:
        return (), 'house rules: each is stated in the guides (CONTRIBUTING.md, AGENTS.md) or the agent skills'
    where = ', '.join((*GUIDES, *AGENT_GUIDES, *(f'{folder}/' for folder in SKILL_FOLDERS)))
    return unstated, f"{', '.join(unstated)} off: no guide or agent skill of the repository ({where}) states them"


def derive(root: Path, config: Config) -> Preset:
    sources = [path for path in python_files(root) if config.is_source(path)]
    guide = read_guide(root)
    header, header_origin = derive_header(root, sources, config)
    title_tags, tags_origin = derive_title_tags(guide)
    pass_through, pass_through_origin = derive_pass_through(root, sources)
    overrides, override_origins = derive_overrides(root, guide, all_rules())
    unstated, unstated_origin = derive_unstated(root)
    body_sections, body_origin = derive_body_sections(root)
    global_origin = 'global-paths = []: the import graph finds the tests that reach shared code'
    return Preset(header, title_tags, pass_through, overrides,
                  (header_origin, tags_origin, pass_through_origin, *override_origins, unstated_origin, body_origin,
                   global_origin), unstated=unstated, body_sections=body_sections)


def render(preset: Preset) -> str:
    """The `[tool.mrbot]` table of `preset` as TOML."""
    lines = ['[tool.mrbot]']
    if preset.header:
        lines += ['header = [', *(f'    {toml_string(line)},' for line in preset.header), ']']
    else:
        lines.append('header = []')
    lines.append(f'title-tags = {toml_array(preset.title_tags)}')
    if preset.verifier_pass_through:
        lines.append('verifier-pass-through = true')
    lines.append(f'body-sections = {toml_array(preset.body_sections)}')
    lines.append(f'global-paths = {toml_array(preset.global_paths)}')
    if preset.unstated:
        lines.append(f"rules = {toml_value(dict.fromkeys(preset.unstated, 'off'))}")
    if preset.runners:
        lines += ['', '[tool.mrbot.runners]', *(f'{name} = {toml_array(labels)}' for name, labels in preset.runners)]
    for override in preset.overrides:
        lines += ['', '[[tool.mrbot.overrides]]', f'paths = {toml_array(override.paths)}',
                  f'rules = {toml_value(override.rules)}']
    return '\n'.join(lines) + '\n'


def _read_pyproject(pyproject: Path) -> str:
    """The text of pyproject.toml, empty when there is none; bad input is one error naming the file."""
    if not pyproject.exists():
        return ''
    try:
        text = pyproject.read_bytes().decode('utf-8')
        document = tomllib.loads(text)
    except OSError as exc:
        raise MrbotError(f'{pyproject}: cannot read it ({exc.strerror}); expected a readable TOML file') from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise MrbotError(f'{pyproject}: not valid TOML ({exc})') from None
    if not isinstance(document.get('tool', {}), dict):
        raise MrbotError(f'{pyproject}: `tool` is a {type(document["tool"]).__name__}, expected a table')
    return text


def parse_runner(text: str) -> tuple[str, tuple[str, ...]]:
    """`--runner CLASS=LABEL[,LABEL...]`: a GPU runner class and the labels of its self-hosted runners."""
    name, _, labels = text.partition('=')
    found = tuple(label.strip() for label in labels.split(','))
    if not name or not all(found):
        raise MrbotError(f'--runner {text!r}: expected CLASS=LABEL[,LABEL...], e.g. hopper=self-hosted,linux,sm90')
    return name, found


def _ci_files(forge: str, given: str | None) -> tuple[CiFile, ...]:
    action = parse_action_ref(given) if given else installed_ref()
    if action is None:
        raise MrbotError(f'mrbot {version()} cannot tell which GitHub repository and commit it was installed from; '
                         'pass --action OWNER/NAME@COMMIT (the full commit id of the mrbot to pin)')
    files = github_workflows if forge == 'github' else gitlab_pipeline
    return files(action, version())


def _still_to_do(forge: str, runners: dict[str, list[str]]) -> list[str]:
    """What a maintainer must still do by hand for the CI files to work."""
    labels = '; '.join(f"{name}: {', '.join(found)}" for name, found in runners.items())
    if forge == 'github':
        return ['add the repository secret MRBOT_SIGNING_KEY (for example `openssl rand -hex 32`): it signs the '
                "bot's replies, which the cooldown, the queue and the poster believe",
                f'register a self-hosted runner per GPU class with its labels ({labels})',
                'Settings, Actions, General: require approval for all external contributors, so that no stranger\'s '
                'pull request starts a workflow before a maintainer looks',
                "the `mrbot check` check run is a report, not a gate: a required check needs mrbot's own GitHub App "
                "(mrbot's docs/ci.md, \"What the check run is worth\")"]
    return ['add the masked CI/CD variable GITLAB_TOKEN: a project access token with the `api` scope and the Developer '
            'role, with which mrbot posts its notes',
            f'register a runner per GPU class, tagged with its labels ({labels})',
            "`/bench` in a merge request note needs the note receiver, `mrbot webhook`, and the project's webhook "
            "for comments sent to it (mrbot's docs/ci.md); without it a maintainer runs the GPU job from the pipeline "
            'with MRBOT_COMMAND set']


def run(args: argparse.Namespace) -> int:
    root = git.repo_root(Path.cwd())
    pyproject = root / PYPROJECT
    existing = _read_pyproject(pyproject)
    has_table = 'mrbot' in tomllib.loads(existing).get('tool', {})
    runners = tuple(parse_runner(text) for text in args.runner)
    # everything is checked before anything is written: a refusal leaves the repository as it was
    if has_table and not args.print and not args.ci:
        raise MrbotError(f'{pyproject} already has a [tool.mrbot] table, which mrbot init does not rewrite; '
                         '`mrbot init --print` shows what it would write')
    if has_table and runners and parse_config(existing, str(pyproject)).runners != {
            name: list(labels) for name, labels in runners}:
        raise MrbotError(f'{pyproject} already has a [tool.mrbot] table with other runners: set `runners` there; '
                         '--runner goes only into a table mrbot init writes')
    files = _ci_files(args.ci, args.action) if args.ci else ()
    present = [file.path for file in files if (root / file.path).is_symlink() or (root / file.path).exists()]
    if present and not args.print:
        raise MrbotError(f"{', '.join(present)}: already there, and mrbot init never overwrites a file; move it "
                         'aside, or see what it would write with --print')
    linked = [file.path for file in files for parent in Path(file.path).parents if (root / parent).is_symlink()]
    if linked and not args.print:
        raise MrbotError(f'{linked[0]}: a folder on its way is a symbolic link; expected folders of the repository '
                         'itself, where the CI files are read')
    preset = None if has_table and args.ci else dataclasses.replace(
        derive(root, parse_config(existing, str(pyproject))), runners=runners)
    table = render(preset) if preset else ''
    newline = '\r\n' if '\r\n' in existing else '\n'
    # one blank line between what is there and the table, and no byte of what is there changed
    lead = '' if not existing else newline if existing.endswith('\n') else newline * 2
    appended = lead + table.replace('\n', newline) if table else ''
    # the file as it will be must load, or nothing is written (a table there already is never appended to)
    settings = parse_config(existing if has_table else existing + appended, str(pyproject))
    check_rule_ids(settings)
    for origin in preset.origins if preset else ():
        print(f'mrbot init: {origin}', file=sys.stderr)
    if args.print:
        print(table, end='')
        for file in files:
            print(f'\n# --- {file.path}\n{file.text}', end='')
    else:
        if appended:
            with pyproject.open('ab') as out:
                out.write(appended.encode('utf-8'))
            print(f'mrbot init: appended [tool.mrbot] to {pyproject}', file=sys.stderr)
        for file in files:
            (root / file.path).parent.mkdir(parents=True, exist_ok=True)
            # 'x': created here, never through a link or over a file that appeared since the check above
            with (root / file.path).open('x', encoding='utf-8') as out:
                out.write(file.text)
            print(f'mrbot init: wrote {file.path}', file=sys.stderr)
    if args.ci:
        print(f'mrbot init: still to do by hand on {args.ci}:', file=sys.stderr)
        for step in _still_to_do(args.ci, settings.runners):
            print(f'  - {step}', file=sys.stderr)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--print', action='store_true', help='print what it would write to stdout instead of writing it')
    parser.add_argument('--ci', choices=['github', 'gitlab'],
                        help='also write the CI files that run mrbot: the GitHub workflows calling its action, or the '
                             "GitLab include; an existing [tool.mrbot] table is then kept as it is")
    parser.add_argument('--action', metavar='OWNER/NAME@COMMIT',
                        help='with --ci: the mrbot repository and full commit to pin (default: the one this mrbot was '
                             'installed from)')
    parser.add_argument('--runner', action='append', default=[], metavar='CLASS=LABEL[,LABEL...]',
                        help='a GPU runner class for /bench and /test and the labels of its runners (repeat per class; '
                             'the first is the default; default: hopper and blackwell)')
