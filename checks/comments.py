# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Comments that say why: no banners, commented-out code, unanchored TODOs, personal asides or trailing prose."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator

from mrbot.rules import Context, SourceFile, Violation, rule

# A rule of five or more characters, or a title between two shorter rules (`# ==== Backward ====`), but not an
# Emacs coding line (`# -*- coding: utf-8 -*-`).
_BANNER = re.compile(r'^(?!.*coding[:=])(?:#{5,}|#\s*[=#*~-]{5,}|#\s*[=#*~-]{3,}\s.*\S\s+[=#*~-]{3,}\s*$)')
_DIRECTIVE = re.compile(r'^#+\s*(?:noqa\b|type:|pragma\b|fmt:|mrbot:|pylint\b|nosec\b|isort:|ruff:|pyright:|mypy:)',
                        re.IGNORECASE)
_URL = re.compile(r'^https?://')
# Cheap test before parsing: the text has something only a statement of the accepted kinds can have.
_CODE_HINT = re.compile(r'[=(]|:$|^@|^(?:import|from|return|raise|del|assert)\b')
# Formula notation that parses as Python by accident: a transpose or inverse (`A^T`, `M^-1`), a hyphenated aside
# (`(strict-lower)`), a sentence's last words (`BT=64.`).
_FORMULA = re.compile(r'\^\s*(?:T\b|-1\b|\{)|\([a-z]+-[a-z]+\)|\d\.$')
# Headers that parse only after the statement they continue.
_HEADER_PREFIX = {'elif': 'if 0:\n pass\n', 'else': 'if 0:\n pass\n', 'except': 'try:\n pass\n', 'finally': 'try:\n pass\n'}
_CODE_STATEMENTS = (ast.Assign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.Return, ast.Raise, ast.Delete, ast.Assert)
_COMPOUND_STATEMENTS = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.FunctionDef,
                        ast.AsyncFunctionDef, ast.ClassDef, ast.Try)
# Statements that are code only next to other commented-out code; alone they read as words.
_WEAK_CODE = {'pass', 'break', 'continue'}
_MARKER = re.compile(r'(?<!\w)(TODO|FIXME|XXX)(?!\w)')
_ANCHOR = re.compile(
    r'https?://'
    r'|(?<![\w&])#\d+|(?<!\w)!\d+|\bGH-\d+|\b(?:issue|pr|pull request)\s*#?\d+'
    r'|[A-Za-z][\w.-]*\s*(?:>=|<=|==|!=|>|<|~=)\s*v?\d+\.\d+'
    r'|\bv\d+(?:\.\d+)*\b|\b\d+\.\d+\.\d+\b'
    r'|\b(?:when|once|after|until|before)\s+\w+',
    re.IGNORECASE)
_ASIDE = re.compile(r'^#+\s*([A-Z]{2,3}):\s')
# A task marker addressed to a person: the name in parentheses after it, or before a colon.
_OWNED_TODO = re.compile(r'^#+\s*(?:TODO|FIXME|XXX)(?:\(\s*([A-Za-z][\w.-]*)\s*\)|\s+([a-z][\w.-]*):\s)')
# Markers, and the names of platforms and hardware units that label a comment about them (`# AMD: ...`).
_NOT_ASIDES = {'NOTE', 'TODO', 'FIXME', 'XXX', 'HACK', 'WARNING', 'NB', 'SAFETY', 'CPU', 'GPU', 'NPU', 'TPU', 'XPU', 'AMD',
               'MPS', 'HIP', 'TMA', 'PTX', 'SM', 'CTA', 'MMA', 'JIT', 'API', 'ABI', 'BC', 'IO', 'OOM', 'CI'}
# A comment line that starts a new paragraph: empty, or opened by a marker such as `NOTE:`.
_NEW_PARAGRAPH = re.compile(r'^#+\s*(?:$|[A-Z]{2,}\b)')
_DTYPE = r'(?:(?:torch|tl|np)\.)?(?:b?float\d*(?:_\w+)?|u?int\d*|complex\d*|bf16|fp\d+|[fi]\d+|half|double|bool)'
_SHAPE = r'\[[^\[\]]*\]|\(\s*[\w.*+/-]+(?:\s*,\s*[\w.*+/-]+)+\s*\)'
# A trailing comment may start with a shape, after a dtype, a pointer's element type or `scalar` (`# [BT, BK] ...`,
# `# *f32 [B, T, H] - the gate`, `# scalar float32 - ...`), or be nothing but shapes and dtypes (`# float32`).
_ANNOTATION = re.compile(rf'^#+\s*(?:(?:(?:\*?{_DTYPE}|scalar)\s+)*\[[^\[\]]+\]|scalar\s+{_DTYPE}\b'
                         rf'|(?:{_DTYPE}|{_SHAPE})(?:[\s,;:]+(?:{_DTYPE}|{_SHAPE}))*\s*$)', re.IGNORECASE)
# The names of the slots that the elements of a call's arguments or a returned tuple fill: `None,  # scale`.
_SLOT_LABEL = re.compile(r'^#+\s*[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*(?:\s*\([^()]*\))?\s*$')


def _own_line(source: SourceFile, line: int, column: int) -> bool:
    return not source.line(line)[:column].strip()


def _full_line_comments(source: SourceFile) -> dict[int, str]:
    return {line: text for line, column, text in source.comments if _own_line(source, line, column)}


def _paragraphs(lines: list[int]) -> Iterator[list[int]]:
    """Runs of consecutive line numbers in the sorted `lines`."""
    run: list[int] = []
    for line in lines:
        if run and line != run[-1] + 1:
            yield run
            run = []
        run.append(line)
    if run:
        yield run


@rule('CMT001', 'Banner comment', 'warning',
      'remove the banner; a long module splits into modules better than into sections')
def banner_comments(context: Context) -> Iterator[Violation]:
    """Checks for banner comments: a rule of five or more `#`, `=`, `-`, `*` or `~`, or a title between two rules.

    Banners divide a file into sections that nothing enforces; they drift from the code, take screen lines and read
    as noise in review. A block of comment lines with banners is one finding at its first banner.

    Example: `# ==== Backward ====` or `##########` above a group of functions.

    Instead: no banner; move a group that needs a title into a module of its own, or say why in a one-line comment.
    """
    for source in context.sources('*.py'):
        comments = _full_line_comments(source)
        banners = {line for line, _, text in source.comments if _BANNER.match(text)}
        for paragraph in _paragraphs(sorted(comments)):
            found = tuple(line for line in paragraph if line in banners)
            if found:
                yield Violation(source.path, found[0], 'banner comment', anchors=found)
        for line in sorted(banners - set(comments)):
            yield Violation(source.path, line, 'banner comment')


def _parse(text: str) -> list[ast.stmt] | None:
    # A comment such as `# re.compile('\d')` must not print the parser's escape warning into the check's output.
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        try:
            return ast.parse(text).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def _tight_call(call: ast.Call, text: str) -> bool:
    """Whether the call's `(` follows its function without a space, as in code rather than in `Word (aside)`."""
    line = text.splitlines()[call.func.end_lineno - 1].encode()
    return line[call.func.end_col_offset:call.func.end_col_offset + 1] == b'('


def _is_code_statement(statement: ast.stmt, text: str) -> bool:
    if isinstance(statement, ast.AnnAssign):
        # `name: thing` without a value is how prose and shape notes (`v: [B, T, V]`) parse, `Word: a = b` a label.
        label = isinstance(statement.target, ast.Name) and re.fullmatch(r'[A-Z][a-z]+', statement.target.id)
        return statement.value is not None and not label
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, ast.Call) and _tight_call(statement.value, text)
    return isinstance(statement, _CODE_STATEMENTS)


def _is_code(text: str) -> bool:
    """Whether a comment's text (without `#`) is a Python statement of a kind prose does not parse as."""
    if not _CODE_HINT.search(text) or _URL.match(text) or _FORMULA.search(text):
        return False
    if text.endswith(':'):
        statements = _parse(_HEADER_PREFIX.get(text.split(maxsplit=1)[0].rstrip(':'), '') + text + '\n pass')
        return bool(statements) and isinstance(statements[-1], _COMPOUND_STATEMENTS)
    if text.startswith('@'):
        return _parse(text + '\ndef _(): pass') is not None
    statements = _parse(text)
    return bool(statements) and all(_is_code_statement(s, text) for s in statements)


def _unclosed(text: str) -> bool:
    return sum(text.count(c) for c in '([{') > sum(text.count(c) for c in ')]}')


def _commented_code_lines(comments: dict[int, str]) -> set[int]:
    """The lines of full-line comments that hold code; a statement may continue over following comment lines."""
    code: set[int] = set()
    weak: list[int] = []
    lines = sorted(comments)
    index = 0
    while index < len(lines):
        span = [lines[index]]
        text = comments[span[0]].lstrip('#').strip()
        # A statement wrapped inside brackets, such as a call whose arguments continue on the next lines.
        while _unclosed(text) and len(span) < 20 and span[-1] + 1 in comments:
            span.append(span[-1] + 1)
            text += '\n' + comments[span[-1]].lstrip('#').strip()
        if not _DIRECTIVE.match(comments[span[0]]) and _is_code(text):
            code.update(span)
            index += len(span)
            continue
        if text in _WEAK_CODE:
            weak.append(span[0])
        index += 1
    for line in weak:
        if line - 1 in code or line + 1 in code:
            code.add(line)
    return code


@rule('CMT002', 'Commented-out code', 'warning',
      'delete it, git keeps the history; a documented alternative goes under a comment line that says "alternative"')
def commented_out_code(context: Context) -> Iterator[Violation]:
    """Checks for full-line comments that are Python statements: assignments, imports, calls, `return`, `if x:`, ...

    Commented-out code is dead code that nothing tests: readers cannot tell whether it is a fix waiting, a debugging
    leftover or a trap, and it rots as the live code around it changes. Bare names, shape notes such as `# [BT, BK]`,
    prose, formulas (`# dv = A^T @ do`, `# A = B @ C (strict-lower)`) and tool directives are not code. A block of
    consecutive commented-out lines is one finding at its first line. A block directly under a comment line containing
    "alternative" documents an alternative configuration, and one under a line ending in a colon is quoted by the
    prose it ends; both are allowed.

    Example: `# b_h = b_h * tl.exp(b_g_last)` left above the line that replaced it, or `# print(o.shape)`.

    Instead: delete it; or, for an alternative worth keeping, `# Alternative for GPUs with less shared memory:` on
    the line above it.
    """
    for source in context.sources('*.py'):
        comments = _full_line_comments(source)
        for block in _paragraphs(sorted(_commented_code_lines(comments))):
            documented = comments.get(block[0] - 1, '')
            # a documented alternative, or code quoted under the prose that introduces it (`# FLA's order:`)
            if 'alternative' in documented.lower() or documented.rstrip().endswith(':'):
                continue
            what = 'commented-out code' if len(block) == 1 else f'{len(block)} lines of commented-out code'
            yield Violation(source.path, block[0], what, anchors=tuple(block))


def _continuation(source: SourceFile, comments: dict[int, str], line: int) -> str:
    """The full-line comments that continue the one at `line`, up to an empty comment line or the next marker."""
    texts = []
    column = len(source.line(line)) - len(source.line(line).lstrip())
    while line + 1 in comments and not _MARKER.search(comments[line + 1]) and not _NEW_PARAGRAPH.match(comments[line + 1]):
        line += 1
        if len(source.line(line)) - len(source.line(line).lstrip()) != column:
            break
        texts.append(comments[line])
    return ' '.join(texts)


@rule('CMT003', 'TODO without an anchor', 'warning',
      'name what ends it: an issue (#123 or its link), a version (`triton >= 3.7`) or an event (`once ...`)')
def unanchored_todos(context: Context) -> Iterator[Violation]:
    """Checks that every TODO, FIXME and XXX names what ends it: an issue or PR, a version bound, or an event.

    A TODO without an anchor never comes due: nobody can tell when it may be removed, so it stays forever. Accepted
    anchors are a link, `#123`, `GH-123` or `issue 123`, a version bound (`triton >= 3.7`, `torch<2.9`, `v0.6`,
    `3.7.1`), or an event introduced by `when`, `once`, `after`, `until` or `before`. The comment lines that continue
    the TODO count as part of it.

    Example: `# TODO: remove this workaround`.

    Instead: `# TODO: remove this workaround once triton >= 3.7 is the minimum`, or `# TODO(#42): ...`.
    """
    for source in context.sources('*.py'):
        comments = _full_line_comments(source)
        for line, _, text in source.comments:
            marker = _MARKER.search(text)
            if marker is None:
                continue
            whole = text[1:] + (' ' + _continuation(source, comments, line) if line in comments else '')
            if not _ANCHOR.search(whole):
                yield Violation(source.path, line, f'{marker.group(1)} without an issue, version or event that ends it')


@rule('CMT004', 'Personal aside in a comment', 'warning',
      "drop the initials and say why in plain words; use `NOTE:` for what a reader must not miss")
def personal_asides(context: Context) -> Iterator[Violation]:
    """Checks for comments that start with two or three capitals and a colon, the form of initials (`# JD: ...`).

    A comment addressed by or to one person is a conversation, not documentation: it belongs in the review. The
    markers NOTE, TODO, FIXME, XXX, HACK, WARNING, NB and SAFETY are not asides, nor are names of platforms and
    hardware units such as `CPU`, `GPU`, `AMD`, `MPS`, `TMA` or `PTX`, nor a term the file uses elsewhere (`# CP:`
    where the code has `cp_context`, `# GVA:` where a docstring names it). A TODO addressed to someone (`# TODO(jd):`,
    `# TODO jd:`) is an aside too: a name is not an owner, nor says when the TODO can be acted on.

    Example: `# JD: not sure this mask is needed`.

    Instead: `# the mask covers the last partial chunk`, or settle the question in the review.
    """
    for source in context.sources('*.py'):
        for line, column, text in source.comments:
            aside = _ASIDE.match(text)
            if aside and aside.group(1) not in _NOT_ASIDES and not _is_term(source, line, aside.group(1)):
                yield Violation(source.path, line, f'personal aside {aside.group(1)}:', column=column)
            owned = _OWNED_TODO.match(text)
            name = owned and (owned.group(1) or owned.group(2))
            if name and not _is_term(source, line, name):
                yield Violation(source.path, line, f'TODO addressed to {name}: a name is not an anchor', column=column)


def _is_term(source: SourceFile, line: int, word: str) -> bool:
    """Whether `word` also occurs on another line of the file as a word or a part of a snake_case name (`cp_context`
    for `CP`): a term of the code, not someone's initials."""
    pattern = re.compile(rf'(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])', re.IGNORECASE)
    return any(pattern.search(text) for number, text in enumerate(source.text.splitlines(), 1) if number != line)


@rule('CMT005', 'Trailing explanatory comment', 'off',
      'move the comment onto its own line above the code; trailing comments are for shape or dtype annotations')
def trailing_comments(context: Context) -> Iterator[Violation]:
    """Checks that a comment on the same line as code is a shape or dtype annotation or a tool directive.

    A comment explains why, on its own line above the code; at the end of a line it is cut off by the line length,
    easy to miss, and left behind when the code changes. Shape and dtype notes (`# [BT, BK]`, `# float32`, `# *f32
    [B, T, H] - the gate`), the name of the slot an element fills after its comma (`None,  # scale`) and directives
    (`# noqa`, `# type:`, `# pragma`, `# fmt:`, `# mrbot:`, `# pylint`, `# nosec`) may trail.

    Off unless a repository turns it on (`[tool.mrbot.rules] CMT005 = "note"`): where a trailing comment explains and
    where it annotates is a call a reader makes better than a pattern, and on upstream's history about half of what it
    reported was annotation after all.

    Example: `b_h *= tl.exp(b_g_last)  # decay the state to the end of the chunk`.

    Instead: `# decay the state to the end of the chunk` on the line above `b_h *= tl.exp(b_g_last)`.
    """
    for source in context.sources('*.py'):
        for line, column, text in source.comments:
            if _own_line(source, line, column) or _ANNOTATION.match(text) or _DIRECTIVE.match(text):
                continue
            if _SLOT_LABEL.match(text) and source.line(line)[:column].rstrip().endswith(','):
                continue
            yield Violation(source.path, line, 'explanatory comment at the end of a line of code', column=column)
