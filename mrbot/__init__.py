# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""mrbot: turns a change to a Triton kernel repository into a merge-ready pull request with the evidence behind it."""


def version() -> str:
    """The installed mrbot's version, as `mrbot --version` and the CI files `mrbot init --ci` writes name it."""
    from importlib import metadata

    try:
        return metadata.version('mrbot')
    except metadata.PackageNotFoundError:
        return 'unknown (not installed)'
