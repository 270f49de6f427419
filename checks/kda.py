# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Rules for KDA (`<source root>/ops/kda/`): its safe and softplus gate paths change together."""

from __future__ import annotations

import ast
import difflib
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass

from mrbot.rules import Context, SourceFile, Violation, rule

SAFE, SOFTPLUS = 'safe gate', 'softplus gate'
_PATH_NAMES = {SAFE: 'the safe gate path (`lower_bound * sigmoid`)', SOFTPLUS: 'the softplus gate path'}
# How a PR's title or body names each path when it says a change is meant for that path alone.
_PATH_WORDS = {SAFE: re.compile(r'lower[ _-]?bound|safe[ _-]gate'), SOFTPLUS: re.compile(r'softplus')}
_SIGNIFICANT = frozenset({tokenize.NAME, tokenize.OP, tokenize.NUMBER})
_LISTED_LINES = 5

# A position in a file: (line, column).
Position = tuple[int, int]


@dataclass(frozen=True)
class _Token:
    text: str
    start: Position
    # the gate paths of the logical line the token is on, by what the line computes
    line_paths: frozenset[str]


@dataclass(frozen=True)
class _Branch:
    """A stretch of code and the gate paths it belongs to: one for a branch of a conditional on the safe gate flag,
    both for its test, none for a `raise` or `assert`."""

    start: Position
    end: Position
    paths: frozenset[str]


def _line_paths(names: list[str]) -> frozenset[str]:
    """What a logical line computes: a softplus is the softplus gate, a sigmoid scaled by a lower bound the safe gate."""
    lowered = [name.lower() for name in names]
    paths = set()
    if any('softplus' in name for name in lowered):
        paths.add(SOFTPLUS)
    if 'sigmoid' in lowered and any('lower_bound' in name for name in lowered):
        paths.add(SAFE)
    return frozenset(paths)


def _tokens(text: str) -> list[_Token] | None:
    """The names, operators and numbers of `text`, without strings and comments; None when it does not tokenize."""
    found, line = [], []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in _SIGNIFICANT:
                line.append(token)
            elif token.type in (tokenize.NEWLINE, tokenize.ENDMARKER) and line:
                paths = _line_paths([t.string for t in line if t.type == tokenize.NAME])
                found.extend(_Token(t.string, t.start, paths) for t in line)
                line = []
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return found


def _names_safe_gate(test: ast.expr) -> bool:
    names = (n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(test) if isinstance(n, (ast.Name, ast.Attribute)))
    return any('safe_gate' in name.lower() for name in names)


def _span(nodes: list[ast.AST]) -> tuple[Position, Position]:
    return (nodes[0].lineno, nodes[0].col_offset), (nodes[-1].end_lineno, nodes[-1].end_col_offset)


def _branches(tree: ast.Module | None) -> list[_Branch]:
    """The branches of every `if` statement or conditional expression whose test names the safe gate flag, and the
    `raise` and `assert` statements, which belong to no gate path."""
    both = frozenset({SAFE, SOFTPLUS})
    found = []
    for node in ast.walk(tree) if tree is not None else ():
        # reporting a bad argument computes no gate, even inside a branch on the flag
        if isinstance(node, (ast.Raise, ast.Assert)):
            found.append(_Branch(*_span([node]), frozenset()))
            continue
        if not (isinstance(node, (ast.If, ast.IfExp)) and _names_safe_gate(node.test)):
            continue
        body, orelse = (node.body, node.orelse) if isinstance(node, ast.If) else ([node.body], [node.orelse])
        safe, softplus = (orelse, body) if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) \
            else (body, orelse)
        # the test decides between the paths, so a change to it changes both
        found.append(_Branch(*_span([node.test]), both))
        found.extend(_Branch(*_span(nodes), frozenset({path})) for nodes, path in ((safe, SAFE), (softplus, SOFTPLUS))
                     if nodes)
    return found


def _paths(token: _Token, branches: list[_Branch]) -> frozenset[str]:
    """The gate paths a token belongs to: those of the innermost branch around it, else those of its line."""
    # `branches` lists outer nodes first, so among stretches that start together the last is the innermost
    around = [(b.start, i, b) for i, b in enumerate(branches) if b.start <= token.start < b.end]
    return max(around)[2].paths if around else token.line_paths


@dataclass
class _Side:
    """One version of a changed file: its tokens and its stretches of known gate paths."""

    tokens: list[_Token]
    branches: list[_Branch]

    @classmethod
    def parse(cls, text: str | None, tree: ast.Module | None) -> _Side | None:
        tokens = _tokens(text) if text is not None else []
        return None if tokens is None else cls(tokens, _branches(tree))

    def between(self, first: int, count: int) -> list[_Token]:
        return [t for t in self.tokens if first <= t.start[0] < first + count]


def _changed_paths(source: SourceFile) -> dict[str, list[int]]:
    """For each gate path the change touches in the file, the head lines of the tokens it adds there (maybe none)."""
    base = _Side.parse(source.file.base_text, source.base_tree)
    head = _Side.parse(source.text, source.tree)
    touched: dict[str, list[int]] = {}
    if base is None or head is None:
        return touched
    for hunk in source.file.hunks:
        old = base.between(hunk.old_start, len(hunk.old_lines))
        new = head.between(hunk.new_start, len(hunk.new_lines))
        matcher = difflib.SequenceMatcher(None, [t.text for t in old], [t.text for t in new], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == 'equal':
                continue
            for token in old[i1:i2]:
                for path in _paths(token, base.branches):
                    touched.setdefault(path, [])
            for token in new[j1:j2]:
                for path in _paths(token, head.branches):
                    touched.setdefault(path, []).append(token.start[0])
    return touched


def _is_kda_source(path: str, roots: tuple[str, ...]) -> bool:
    return any(path.startswith(f"{root.strip('/')}/ops/kda/") for root in roots)


@rule('KDA001', 'KDA gate path changed on one side only', 'note',
      'make the matching change to the other gate path, or say in the PR body why the change is one-sided',
      scope='file')
def one_sided_gate_change(context: Context) -> Iterator[Violation]:
    """Checks that a change to a Python file under `<source root>/ops/kda/` that touches one of KDA's two in-kernel gate
    paths, the safe gate `lower_bound * sigmoid(exp(A_log) * (g + dt_bias))` and the softplus gate
    `-exp(A_log) * softplus(g + dt_bias)`, also touches the other.

    The change is compared token by token, strings and comments left out, so editing one side of a line that holds
    both paths counts for that side only. A changed token belongs to the safe path when it lies in the body of an `if`
    or conditional expression whose test names the safe gate flag (any name containing `safe_gate`: `safe_gate`,
    `SAFE_GATE`, `USE_SAFE_GATE`; under `not`, the other way round), and to the softplus path in its `else`; a change
    to the test itself touches both. Elsewhere, a token belongs to the softplus path when its logical line names a
    softplus, and to the safe path when its line names `sigmoid` and a lower bound (`lower_bound`, `LOWER_BOUND`);
    passing `safe_gate` or `lower_bound` on as arguments belongs to neither, and so do `raise` and `assert`
    statements. Each file is judged on its own. Not seen: a flag named otherwise (`USE_LOWER_BOUND`), and a safe gate
    without `sigmoid` outside a branch on the flag.

    The two paths implement one contract and share their numerics: the safe gate bounds every step's log decay by
    `lower_bound`, which the chunked kernels rely on, while the softplus gate is unbounded. A fix, a new fused kernel
    or a precision change made on one path and forgotten on the other passes the tests of the path that changed and
    leaves the other wrong or slower. A change that is meant for one path only is fine; the note asks its author to
    say so.

    Example: in `fla/ops/kda/inputs.py`, `lower_bound * torch.sigmoid(rate * x) if safe_gate else -rate * F.softplus(x)`
    becoming `lower_bound * torch.sigmoid(rate * x.clamp(-20, 20)) if safe_gate else -rate * F.softplus(x)`.

    Instead: clamp on both paths, `... if safe_gate else -rate * F.softplus(x.clamp(-20, 20))`, or keep the one-sided
    change and state in the PR body why the softplus path does not need it. A title or body that names the path that
    changed (`lower bound`, `safe gate`, `softplus`) has said so, and gets no note.
    """
    stated = ' '.join(filter(None, (context.change.title, context.change.body))).lower()
    for source in context.sources('*.py'):
        if not _is_kda_source(source.path, context.config.source_roots):
            continue
        touched = _changed_paths(source)
        if len(touched) != 1:
            continue
        (changed, lines), = touched.items()
        if _PATH_WORDS[changed].search(stated):
            continue
        other = SOFTPLUS if changed == SAFE else SAFE
        where = sorted(set(lines))
        shown = ', '.join(map(str, where[:_LISTED_LINES])) + (' ...' if len(where) > _LISTED_LINES else '')
        at = f' on line{"s" if len(where) > 1 else ""} {shown}' if where else ' (lines removed)'
        yield Violation(source.path, where[0] if where else 0,
                        f'{_PATH_NAMES[changed]} changed{at} but {_PATH_NAMES[other]} did not; confirm that the '
                        f'change is meant to be one-sided', anchors=tuple(where))
