# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Changes that no test can notice."""

from __future__ import annotations

from collections.abc import Iterator

from mrbot.rules import Context, Violation, rule
from mrbot.selection import confined_names


@rule('SEL001', 'Python change that no test reaches', 'warning',
      'add or extend a test that imports this module; until then `mrbot test` runs the smoke set', scope='file')
def unreached_change(context: Context) -> Iterator[Violation]:
    """Checks that every changed Python file under a source root is imported, directly or through others, by a test,
    and that a function a change adds to a module is used by one.

    The selection follows imports from the working tree's files, through the cached index, so this rule reads the
    repository beside the change; it never runs a test.

    A change no test imports is a change no test can catch, and "0 tests selected" must never read as a pass. mrbot
    test runs the configured smoke set for such a change, which is a net, not evidence.

    Example: a new `fla/ops/utils/softplus.py` that no kernel imports yet, or a kernel no test calls.

    Instead: a test under `tests/` that imports the module or the public op built on it.
    """
    selection = context.change_selection()
    for path in selection.unselected:
        file = context.change.file(path)
        # a module the change deletes, or renames away, is one no test can import any more
        if file is None or file.status == 'deleted':
            continue
        names = confined_names(file, context.workspace.graph)
        if names:
            yield Violation(path, 0, f"no test uses what this change alters here ({', '.join(sorted(names))}), "
                                     'directly or through other modules')
        else:
            # not "imports": a package may re-export the file's names to tests that take none of them
            yield Violation(path, 0, 'no test uses this file, directly or through other modules')
