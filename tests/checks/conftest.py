# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The bot's tests work on throwaway git repositories."""

from tests.gitrepo import repo as repo
