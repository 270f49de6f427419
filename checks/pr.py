# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Rules about the pull request itself: its title, body, commit messages and the files it adds."""

from __future__ import annotations

import re
from collections.abc import Iterator

from mrbot.rules import Context, Violation, rule
from mrbot.summary import title_tag

# `[Conv][Fix] x`; `[Fix] [Test] x` is a tag and a summary, as upstream's own title check reads it
_TWO_TAGS = re.compile(r'^\[[^\]]*\]\[')
# The opening of an ATX heading; the rest of the line is read in `_heading`, in time linear in its length.
_HEADING = re.compile(r'[ \t]{0,3}#{1,6}[ \t]')
_PLACEHOLDER = re.compile(r'^\s*(?:TODO|TBD|\.\.\.|…|_No response_)\s*$', re.IGNORECASE)
_TOOLS = (r'claude|anthropic|copilot|chatgpt|openai|gpt-?\d|gemini|cursor|codex|devin|aider|codeium|windsurf|'
          r'tabnine|codewhisperer|amazon q')
# Each read in one pass over a line: a pattern with two unbounded runs in it rescans a long message from every start.
_CO_AUTHOR = re.compile(r'[ \t]*co-authored-by:', re.IGNORECASE)
_TOOL = re.compile(rf'\b(?:{_TOOLS})', re.IGNORECASE)
_GENERATED = re.compile(r'generated (?:with|by)\b', re.IGNORECASE)
_TOOL_OR_AI = re.compile(rf'\b(?:{_TOOLS}|ai)\b', re.IGNORECASE)
_SKIP = re.compile(r'\[(?:skip ci|ci skip|skip tests?|no ci|skip actions)\]', re.IGNORECASE)
_ARTIFACT_SUFFIXES = ('.ncu-rep', '.nsys-rep', '.qdrep', '.qdstrm')


def is_perf_change(context: Context) -> bool:
    return context.change.perf or title_tag(context.change.title) in context.config.perf_tags


@rule('MR-TITLE', 'PR title is not `[Tag] Summary`', 'error',
      'retitle the PR as `[Tag] Summary` with one tag from the list in CONTRIBUTING.md', scope='change')
def title_format(context: Context) -> Iterator[Violation]:
    """Checks that the PR title (or the single commit's subject) is one bracketed tag, a space and a summary.

    Titles become commit subjects on the main branch; a fixed form makes history searchable by area and lets the
    bot pick evidence by tag (a `[Perf]` change must carry benchmarks). An unknown tag is only a warning: the list
    grows with the code.

    Example: `Fix varlen offsets` or `[Conv][Fix] Fix varlen offsets`.

    Instead: `[Fix] Correct varlen offsets in chunk_simple_gla`.
    """
    title = context.change.title
    if title is None:
        return
    if _TWO_TAGS.match(title):
        yield Violation('', 0, f'title {title!r} has more than one tag; use exactly one')
    elif title_tag(title) is None:
        yield Violation('', 0, f'title {title!r} is not `[Tag] Summary`')
    elif context.config.title_tags and title_tag(title) not in context.config.title_tags:
        known = ', '.join(context.config.title_tags)
        yield Violation('', 0, f'title tag [{title_tag(title)}] is not one of: {known}', severity='warning')


def _heading(line: str) -> str | None:
    """The text of an ATX heading line (`## Test plan ##` gives `Test plan`), or None for another line."""
    opening = _HEADING.match(line)
    if opening is None:
        return None
    text = line[opening.end():].strip()
    # a closing run of #s counts only after a space
    unclosed = text.rstrip('#')
    return unclosed.strip() if unclosed != text and (not unclosed or unclosed[-1] in ' \t') else text


def _sections(body: str) -> dict[str, str]:
    sections, name, lines = {}, None, []
    for line in body.splitlines():
        heading = _heading(line)
        if heading is not None:
            if name is not None:
                sections.setdefault(name, '\n'.join(lines))
            name, lines = heading.rstrip(':').lower(), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        sections.setdefault(name, '\n'.join(lines))
    return sections


def template_sections(template: str) -> tuple[str, ...]:
    """The sections a body written from the pull request `template` has: its second-level headings, outside HTML
    comments (a third-level one is a part of a section)."""
    found = (_heading(line) for line in _without_comments(template).splitlines() if line.lstrip(' ').startswith('## '))
    return tuple(dict.fromkeys(heading.rstrip(':') for heading in found if heading))


def _without_comments(text: str) -> str:
    """`text` without its HTML comments (one left open runs to the end), in one pass: a lazy regex rescans the rest of
    the text from every opener that has no end."""
    kept, done = [], 0
    while (start := text.find('<!--', done)) >= 0:
        kept.append(text[done:start])
        end = text.find('-->', start + 4)
        done = len(text) if end < 0 else end + 3
    return ''.join([*kept, text[done:]])


def _is_empty(text: str) -> bool:
    return all(not line.strip() or _PLACEHOLDER.match(line) for line in _without_comments(text).splitlines())


@rule('MR-BODY', 'PR body misses a required section', 'error',
      'fill in every section of the PR template; write "none" where nothing applies', scope='change')
def body_sections(context: Context) -> Iterator[Violation]:
    """Checks that the PR body has a non-empty Summary, Test plan, Benchmark and Breaking changes section.

    A maintainer reviews a change through its body: what changed and why, how it was verified, what it costs in
    speed, and what could break. Template comments and placeholders such as TODO count as empty. Commit messages are
    not PR bodies and are not checked.

    Example: a body with `## Test plan` followed only by `<!-- commands you ran -->`.

    Instead: `## Test plan` followed by the commands run and where, e.g. `pytest tests/ops/test_simple_gla.py (H200)`.
    """
    change = context.change
    if change.body is None or change.body_source not in ('flag', 'forge'):
        return
    sections = _sections(change.body)
    for required in context.config.body_sections:
        key = required.lower()
        found = next((text for name, text in sections.items() if name.startswith(key)), None)
        if found is None:
            yield Violation('', 0, f"PR body has no '## {required}' section")
        elif _is_empty(found):
            yield Violation('', 0, f"PR body section '{required}' is empty or holds only template text")


def _attribution(text: str) -> str | None:
    """The first tool attribution in `text`: a co-author trailer that names a tool, a "generated with" that names one
    (or AI), or the robot; each line read once."""
    for line in text.splitlines():
        found = []
        trailer = _CO_AUTHOR.match(line)
        if trailer and (tool := _TOOL.search(line, trailer.end())):
            found.append((0, line[:tool.end()]))
        generated = _GENERATED.search(line)
        if generated and (tool := _TOOL_OR_AI.search(line, generated.end())):
            found.append((generated.start(), line[generated.start():tool.end()]))
        if (robot := line.find('🤖')) >= 0:
            found.append((robot, '🤖'))
        if found:
            return min(found)[1]
    return None


@rule('MR-ATTRIBUTION', 'Tool attribution in a commit or the PR body', 'error',
      'remove co-author trailers and "Generated with" lines that name code assistants', scope='change')
def tool_attribution(context: Context) -> Iterator[Violation]:
    """Checks commit messages and the PR body for attribution to code-generation tools.

    The project credits people; trailers and banners that advertise a tool add noise to history and say nothing
    about who answers for the change.

    Example: a commit ending in `Co-authored-by: Claude <noreply@anthropic.com>`, or a body line `🤖 Generated with ...`.

    Instead: leave the trailer and the banner out.
    """
    change = context.change
    for commit in change.commits:
        found = _attribution(f'{commit.subject}\n{commit.body}')
        if found:
            yield Violation('', 0, f'commit {commit.sha[:10]} carries tool attribution: {found.strip()!r}')
    if change.body and change.body_source in ('flag', 'forge'):
        found = _attribution(change.body)
        if found:
            yield Violation('', 0, f'PR body carries tool attribution: {found.strip()!r}')


@rule('MR-SKIP', 'Skip keyword on a change to library code', 'error',
      'remove [skip ci] / [skip test]: they are for documentation-only changes', scope='change')
def skip_keyword(context: Context) -> Iterator[Violation]:
    """Checks that no title, body or commit message asks CI to skip tests when the code of Python under a source root
    changed; a change to its comments, docstrings or messages alone is documentation (`ChangedFile.changes_code`).

    A skipped test run on kernel code is an untested merge; the commit on the main branch inherits the subject and
    skips again there.

    Example: `[Fix] Tweak chunk sizes [skip test]` on a change to `fla/ops/simple_gla/chunk.py`.

    Instead: let the tests run; use skip keywords only for documentation.
    """
    change = context.change
    if not any(f.path.endswith('.py') and context.config.is_source(f.path) and f.changes_code for f in change.files):
        return
    texts = [('title', change.title or ''), ('body', change.body or '')]
    texts += [(f'commit {c.sha[:10]}', f'{c.subject}\n{c.body}') for c in change.commits]
    # one finding for one request: a squashed commit repeats its pull request's title
    found = [(where, match.group(0)) for where, text in texts if (match := _SKIP.search(text))]
    if found:
        places = ', '.join(f'{where} ({keyword})' for where, keyword in found)
        yield Violation('', 0, f'{places} {"say" if len(found) > 1 else "says"} to skip tests, but Python under a '
                               'source root changed')


@rule('MR-ARTIFACT', 'Profiler output or a large binary added', 'error',
      'remove the file from the change; keep profiles under profile/, which git ignores', scope='file')
def artifacts(context: Context) -> Iterator[Violation]:
    """Checks that the change adds no Nsight reports, `profile/` dumps or binaries over the configured size.

    Profiler reports are large, machine-specific and unreviewable; in git they stay forever. Evidence belongs in the
    PR body as numbers with their machine line.

    Example: adding `profile/run3/chunk_fwd.ncu-rep`.

    Instead: summarise the profile in the PR's Benchmark section and keep the report out of git.
    """
    limit = context.config.max_binary_bytes
    for file in context.change.files:
        if file.status not in ('added', 'renamed'):
            continue
        if file.path.endswith(_ARTIFACT_SUFFIXES):
            yield Violation(file.path, 0, 'profiler report added')
        elif 'profile' in file.path.split('/')[:-1]:
            yield Violation(file.path, 0, 'file under a profile/ folder added')
        elif file.binary and file.size > limit:
            yield Violation(file.path, 0, f'binary file of {file.size} bytes added (limit {limit})')
