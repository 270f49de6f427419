# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The frozen contract of an optimization loop: what decides that an op is correct, hashed at the baseline.

It holds the op's gate test file, its naive reference, every conftest.py above the gate (the NaN poisoning and the
seed live there), the test-root modules the gate imports, and the source of each comparison function it imports from
elsewhere (`fla.utils.assert_close`: where a relative tolerance becomes a pass or a fail). A try whose tree differs
in any of them is refused before anything runs: its result would not be comparable with the baseline's.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mrbot.config import Config
from mrbot.records import MrbotError
from mrbot.records.reading import JsonObject
from mrbot.repo.ops import OpSpec, op_folder

# Imported names whose definitions turn a difference into a pass or a fail.
_COMPARISONS = ('close', 'tol', 'assert')


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode('utf-8', 'surrogateescape')).hexdigest()


@dataclass(frozen=True)
class Breach:
    """A frozen file or function that a candidate changed, with the first line where it differs (0: gone)."""

    path: str
    line: int
    what: str


@dataclass(frozen=True)
class Contract:
    """Content hashes of the frozen files (`path -> sha256`) and comparison functions (`path:name -> sha256`)."""

    files: dict[str, str]
    functions: dict[str, str]

    def to_json(self) -> dict:
        return {'files': self.files, 'functions': self.functions}

    @classmethod
    def from_json(cls, fields: JsonObject) -> Contract:
        return cls(dict(fields.mapping('files')), dict(fields.mapping('functions')))

    def breaches(self, tree: Path, baseline: Path) -> list[Breach]:
        """What `tree` changed of the contract frozen from `baseline` (both checkouts)."""
        found = []
        for path, digest in self.files.items():
            text = _read(tree / path)
            if text is None or _digest(text) != digest:
                found.append(Breach(path, _first_difference(_read(baseline / path) or '', text), f'{path} changed'))
        for key, digest in self.functions.items():
            path, name = key.rsplit(':', 1)
            source = _function_source(tree / path, name)
            if source is None or _digest(source) != digest:
                old = _function_source(baseline / path, name) or ''
                line = _function_line(tree / path, name)
                offset = _first_difference(old, source)
                found.append(Breach(path, line + offset - 1 if line and offset else line,
                                    f'comparison function {name} in {path} changed'))
        return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding='utf-8', errors='surrogateescape')
    except (FileNotFoundError, IsADirectoryError):
        return None


def _first_difference(old: str, new: str | None) -> int:
    """The first line of `new` that differs from `old`, counting from 1; 0 when `new` is gone."""
    if new is None:
        return 0
    new_lines = new.splitlines()
    for tag, _, _, start, _ in difflib.SequenceMatcher(None, old.splitlines(), new_lines, autojunk=False).get_opcodes():
        if tag != 'equal':
            # a deletion at the end points past the last line; name the last one
            return min(start + 1, max(len(new_lines), 1))
    return 1


def _definition(path: Path, name: str) -> tuple[ast.AST, str] | None:
    text = _read(path)
    if text is None:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                 and n.name == name), None)
    return (node, text) if node is not None else None


def _function_source(path: Path, name: str) -> str | None:
    found = _definition(path, name)
    return ast.get_source_segment(found[1], found[0]) if found else None


def _function_line(path: Path, name: str) -> int:
    found = _definition(path, name)
    return found[0].lineno if found else 0


def _module_file(root: Path, module: str) -> str | None:
    """The repository file of a dotted module name, or None when it is not in the repository."""
    base = PurePosixPath(*module.split('.'))
    for candidate in (base.with_suffix('.py'), base / '__init__.py'):
        if (root / candidate).is_file():
            return candidate.as_posix()
    return None


def _conftests(root: Path, test_file: str) -> list[str]:
    folders = PurePosixPath(test_file).parents
    return [f'{folder}/conftest.py' if str(folder) != '.' else 'conftest.py' for folder in folders
            if (root / folder / 'conftest.py').is_file()]


def freeze(root: Path, spec: OpSpec, config: Config) -> Contract:
    """The contract of `spec` in the checkout `root`; refused when the op has no gate test or no naive reference."""
    if not spec.gate or not (root / spec.gate).is_file():
        raise MrbotError(f'{spec.name} has no gate test file ({spec.gate or "no gate in its bench spec"}): a loop needs '
                         f'one; set gate = "tests/ops/test_<op>.py" in [tool.mrbot.bench.ops.{spec.name}]')
    naive = f'{op_folder(root, spec)}/naive.py'
    if not (root / naive).is_file():
        raise MrbotError(f'{spec.name} has no naive reference at {naive}: a loop compares against one')
    files = [spec.gate, naive, *_conftests(root, spec.gate)]
    functions = []
    tree = ast.parse((root / spec.gate).read_text(encoding='utf-8'))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            path = _module_file(root, node.module)
            if path is None:
                continue
            if config.is_test(path):
                files.append(path)
            else:
                functions += [f'{path}:{alias.name}' for alias in node.names
                              if any(word in alias.name.lower() for word in _COMPARISONS)
                              and _function_source(root / path, alias.name) is not None]
        elif isinstance(node, ast.Import):
            files += [path for alias in node.names if (path := _module_file(root, alias.name)) and config.is_test(path)]
    hashed = {path: _digest(_read(root / path) or '') for path in dict.fromkeys(files)}
    return Contract(hashed, {key: _digest(_function_source(root / key.rsplit(':', 1)[0], key.rsplit(':', 1)[1]) or '')
                             for key in dict.fromkeys(functions)})
