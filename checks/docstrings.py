# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The house style of the `Args:`, `Returns:` and `Raises:` sections of docstrings."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from mrbot.rules import Context, SourceFile, Violation, rule

_SECTION = re.compile(r'^(\s*)(?:Args|Arguments|Keyword Args|Returns|Yields|Raises):\s*$')
# An argument header `name (type, Optional):`; group 1 is the type part.
# "If `None`, defaults to ...": what a value stands for, beside the default itself
_MEANING = re.compile(r'\bif\b[^.;]*,\s*(?:it\s+will\s+)?defaults?\s+to', re.IGNORECASE)
_ENTRY = re.compile(r'^\s*\**\w+\s*\((.*?)\)\s*:')
_LOWER_OPTIONAL = re.compile(r'\boptional\b')
_DEFAULTS_TO = re.compile(r'\b[Dd]efaults to\b')
_CODE_SPAN = re.compile(r'(`+).+?\1')
# `None of the ...` is a word of the sentence, not the value.
_LITERAL = re.compile(r'\b(True|False|None)\b(?! of\b)')
_QUOTES = re.compile(r'^[rRuU]?(?:"""|\'\'\'|"|\')')
_DOCUMENTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _docstring_lines(source: SourceFile, node: ast.AST) -> Iterator[tuple[int, str]]:
    """`(file line, text)` of each line of the node's docstring as written, without the quotes."""
    first = node.body[0] if node.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)):
        return
    string = first.value
    for number in range(string.lineno, string.end_lineno + 1):
        raw = source.line(number).encode()
        if number == string.end_lineno:
            raw = raw[:string.end_col_offset]
        if number == string.lineno:
            raw = raw[string.col_offset:]
        text = raw.decode(errors='replace')
        if number == string.lineno:
            text = _QUOTES.sub('', text)
        if number == string.end_lineno:
            text = text.rstrip('\'"')
        yield number, text


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _section_lines(lines: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """The lines inside the docstring's `Args:`, `Returns:` and `Raises:` blocks, headers excluded."""
    section_indent = None
    for number, text in lines:
        header = _SECTION.match(text)
        if header:
            section_indent = len(header.group(1))
        elif section_indent is not None and text.strip():
            if _indent(text) <= section_indent:
                section_indent = None
            else:
                yield number, text


def _defaulted_entries(lines: list[tuple[int, str]]) -> set[int]:
    """The line numbers of the entries (a header and its more indented lines) that state `Default:`."""
    entries: list[list[tuple[int, str]]] = []
    for number, text in lines:
        if _ENTRY.match(text) or not entries or _indent(text) <= _indent(entries[-1][0][1]):
            entries.append([])
        entries[-1].append((number, text))
    return {number for entry in entries if any('Default:' in text for _, text in entry) for number, _ in entry}


def _problems(text: str, defaulted: bool) -> list[str]:
    """The problems of one line; `defaulted` where its entry states `Default:` already, where a conditional "defaults
    to" says what a value means ("If `None`, defaults to `1 / sqrt(K)`")."""
    problems = []
    entry = _ENTRY.match(text)
    if entry and _LOWER_OPTIONAL.search(entry.group(1)):
        problems.append('write `Optional` capitalised')
    if _DEFAULTS_TO.search(text) and not (defaulted and _MEANING.search(text)):
        problems.append('write `Default: <value>` instead of "defaults to"')
    # The type in an entry's parentheses is a type, not prose, so a `None` there is left alone.
    prose = _CODE_SPAN.sub('', text[entry.end(1):] if entry else text)
    literals = sorted(set(_LITERAL.findall(prose)), key=('True', 'False', 'None').index)
    if literals:
        problems.append(f"put {', '.join(literals)} in backticks")
    return problems


@rule('DOC001', 'Docstring section not in the house style', 'warning',
      'write `name (type, Optional):`, `Default: <value>`, and `True`, `False` and `None` in backticks')
def docstring_sections(context: Context) -> Iterator[Violation]:
    """Checks the `Args:`, `Returns:` and `Raises:` blocks of function and class docstrings, line by line.

    An entry header is `name (type, Optional):` with `Optional` capitalised; a default is given as `Default: <value>`
    on its own line, not as "defaults to ..."; the values `True`, `False` and `None` are in backticks so they read as
    code. One finding per offending line, naming each problem on it.

    Example: `scale (float, optional): Scale factor. Defaults to None.` under `Args:`.

    Instead: `scale (float, Optional):` followed by the indented lines `Scale factor.` and `` Default: `None`. ``.
    """
    for source in context.sources('*.py'):
        if source.tree is None:
            continue
        for node in ast.walk(source.tree):
            if not isinstance(node, _DOCUMENTED):
                continue
            lines = list(_section_lines(_docstring_lines(source, node)))
            defaulted = _defaulted_entries(lines)
            for number, text in lines:
                problems = _problems(text, number in defaulted)
                if problems:
                    yield Violation(source.path, number, 'docstring: ' + '; '.join(problems))
