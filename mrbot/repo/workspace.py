# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The repository one command works on, read once: its settings, its import graph and its benchmarkable ops.

Every stage of a command (selection, the ops a change reaches, compilation, the checks, breaking changes) is handed
the same Workspace instead of reading `pyproject.toml` or indexing the files again. The graph and the ops are built
on first use, so a command that needs neither pays for neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from mrbot.config import Config, load_config
from mrbot.repo.graph import Graph, build_graph
from mrbot.repo.index import load_index
from mrbot.repo.ops import OpSpec, load_specs


@dataclass
class Workspace:
    root: Path
    config: Config

    @classmethod
    def load(cls, root: Path) -> Workspace:
        return cls(root, load_config(root))

    @cached_property
    def graph(self) -> Graph:
        return build_graph(load_index(self.root), self.config)

    @cached_property
    def specs(self) -> list[OpSpec]:
        return load_specs(self.root, self.config)
