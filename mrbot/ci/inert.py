# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Markdown that a stranger may have written whole, made inert before the bot posts it as its own.

Nothing is taken out: U+2060 WORD JOINER, which no reader sees, goes where a character would start something live.
The one structure kept is the top-level fenced code block, so that code copied from a bot comment stays exact; all
else is text. Renderers must agree on which lines those blocks hold, or a line left raw as code renders as HTML on
one of them; so a fence opens only where GitHub (cmark-gfm) and GitLab (comrak, behind GitLab's front matter filter)
both open one, and every other line that could open or close a block around it is broken.
"""

from __future__ import annotations

import re

JOINER = '\u2060'
_BOM = '\ufeff'
# the start of a line: CommonMark ends one at \n, \r\n or \r only (str.splitlines also at \u2028, \x0c, \x85, ...)
_START = r'(?:^|(?<=\n)|(?<=\r)(?!\n))'
_REST_OF_LINE = re.compile(r'[^\r\n]*(?:\r\n|\r|\n)?')
# at the margin only: an indented fence may be in a list item, which a less indented line ends with the fence in it
_OPENING_OR_TAG = re.compile(_START + r'(?P<fence>`{3,}(?![^\r\n]*?`)|~{3,})[^\r\n]*(?:\r\n|\r|\n)?'
                             r'|</?(?:details|summary|sub)>')
_CLOSING = re.compile(_START + r' {0,3}(`{3,}|~{3,})[ \t]*(?:\r\n|\r|\n|\Z)')
_BLANK = re.compile(_START + r'[ \t]*(?=[\r\n]|\Z)')
# outside code: a tag, comment, declaration or processing instruction (the reports' own tags aside); a character
# reference; a mention. A backslash escape may stand between the < or @ and what follows (`@\_bot` renders as GitLab's
# mention `@_bot`), and so may a line's end after an @ (comrak glues the paragraphs of a tight description list)
_LIVE = re.compile(r'<(?=[A-Za-z/!?\\])(?!/?(?:details|summary|sub)>)|&(?=[#A-Za-z])|@(?=[\w.\\-]|[\r\n]|\Z)')
_COMMENT = re.compile(r'<(?=!--)')
# a line GitLab runs as a quick action (/merge), in code too
_COMMAND = re.compile(_START + r'[ \t]*(?=/)')
# outside code, a quick action, and a line that opens or closes a block a fenced code block may sit in: a fence;
# comrak's block directive (:::); GitLab's multiline blockquote (>>>, or >>> [!note] for an alert), broken after the
# >>> where a reader of GitHub's nested blockquote sees nothing
_COMMAND_OR_BLOCK = re.compile(_START + r'(?:[ \t]*(?=/)| {0,3}(?=`{3,}|~{3,}|:{3,})| {0,3}>{3,})')
# GitLab shows front matter as a code block, which ends where no other renderer's does
_FILLED = re.compile(_START + r'[ \t\f\v]*[^ \t\f\v\r\n]')
_FRONT_MATTER = re.compile(r'---|\+\+\+|;;;')


def inert(text: str) -> str:
    """`text` as Markdown that, posted by the bot on GitHub or GitLab, shows what `text` shows and does nothing else.

    Outside top-level fenced code blocks it carries no raw HTML but `<details>`, `<summary>`, `<sub>` and their
    closing tags, no @-mention and no character reference. Nowhere does it carry an HTML comment opener (the bot's
    markers are comments), nor a line that GitLab runs as a quick action. Every change is a U+2060 inserted: removing
    them gives `text` back, less any U+2060 of its own. Linear in the length of `text`.
    """
    body = text.lstrip(_BOM)
    bom = text[:len(text) - len(body)]
    body = _without_front_matter(body)
    shown, done = [bom], 0
    for start, end in _fenced(body, may_open_first=not bom):
        shown += [_text(body[done:start]), _code(body[start:end])]
        done = end
    return ''.join([*shown, _text(body[done:])])


def _fenced(body: str, may_open_first: bool) -> list[tuple[int, int]]:
    """Where `body` holds top-level fenced code blocks, opening and closing lines included, adjacent ones as one.

    A line that could open one and is not taken here is broken by `_text`, so that no renderer opens a fence where
    this does not."""
    spans: list[tuple[int, int]] = []
    look = 0
    while found := _OPENING_OR_TAG.search(body, look):
        fence = found.group('fence')
        if fence is None:
            # an HTML block, where a ``` line is raw HTML, lasts to the next blank line; a renderer starts one at a
            # tag at the margin, and taking any line with a tag is safe
            blank = _BLANK.search(body, _REST_OF_LINE.match(body, found.end()).end())
            if blank is None:
                break
            look = blank.start()
        elif found.start() == 0 and not may_open_first:
            # some renderers drop a byte order mark and some do not: the first line opens nothing
            look = 1
        else:
            start, look = found.start(), _closed(body, found.end(), fence)
            if spans and spans[-1][1] == start:
                start = spans.pop()[0]
            spans.append((start, look))
    return spans


def _closed(body: str, start: int, fence: str) -> int:
    """Where the fenced code block opened by `fence`, its content starting at `start`, ends: after its closing line,
    else at the end of `body`."""
    for closing in _CLOSING.finditer(body, start):
        run = closing.group(1)
        if run[0] == fence[0] and len(run) >= len(fence):
            return closing.end()
    return len(body)


def _code(lines: str) -> str:
    return _COMMAND.sub(_joined, _COMMENT.sub(_joined, lines))


def _text(lines: str) -> str:
    return _COMMAND_OR_BLOCK.sub(_joined, _LIVE.sub(_joined, lines))


def _joined(match: re.Match[str]) -> str:
    return match[0] + JOINER


def _without_front_matter(body: str) -> str:
    """`body` with a joiner before each line GitLab may open front matter with: the first that is not blank and, after
    a first line naming an encoding (`coding:`), the next one that is not blank, where it starts with ---, +++ or ;;;.
    """
    first_line = _REST_OF_LINE.match(body)[0]
    filled = [_FILLED.search(body)]
    if filled[0] is not None and filled[0].start() == 0 and 'coding:' in first_line:
        filled.append(_FILLED.search(body, len(first_line)))
    starts = [found.start() for found in filled if found and _FRONT_MATTER.match(body, found.start())]
    for start in reversed(starts):
        body = body[:start] + JOINER + body[start:]
    return body
