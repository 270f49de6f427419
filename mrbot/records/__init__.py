# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The plain records that flow between mrbot's stages, one module per subject (those read back from JSON check every
field): a change and what it does to Python source (`change`, `source`), the findings of the rules (`findings`), the
tests selected and run (`testruns`), what compiling the reached kernels found (`compiles`), the bench records and
their flags (`bench`), how an optimization loop ended (`loop_outcome`), and the reader they share (`reading`). Here:
the one error a user sees."""


class MrbotError(Exception):
    """A problem the user can act on (bad arguments, not a repository, bad configuration): one line, exit code 2."""
