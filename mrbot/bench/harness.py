# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Worker processes, one per side, and the interleaved rounds that time them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mrbot.records import MrbotError

WORKER = Path(__file__).resolve().with_name('worker.py')


@dataclass
class Side:
    """One side of a comparison: a tree, the worker process that imports it, and its samples per row."""

    name: str
    tree: Path
    process: subprocess.Popen
    log: Path
    samples: dict[str, list[dict]] = field(default_factory=dict)

    def ask(self, command: dict) -> dict:
        self.process.stdin.write(json.dumps(command) + '\n')
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            tail = self.log.read_text(errors='replace').strip().splitlines()[-3:] if self.log.exists() else []
            raise MrbotError(f"{self.name} worker stopped (exit {self.process.poll()}): {' | '.join(tail)}; log: {self.log}")
        answer = json.loads(line)
        if 'error' in answer:
            raise MrbotError(f"{self.name} side, {command['cmd']}: {answer['error']} (traceback in {self.log})")
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.write(json.dumps({'cmd': 'exit'}) + '\n')
                self.process.stdin.flush()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()


def start_side(name: str, tree: Path, state: Path, environment: dict[str, str]) -> Side:
    """Start the worker of one side; its Triton cache is its own, so neither side reuses the other's kernels."""
    state.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **environment, 'TRITON_CACHE_DIR': str(state / 'triton-cache'),
           'PYTHONPATH': os.pathsep.join([str(tree), os.environ.get('PYTHONPATH', '')]).rstrip(os.pathsep)}
    log = state / 'worker.log'
    process = subprocess.Popen([sys.executable, str(WORKER), str(tree)], cwd=tree, env=env, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log.open('w'))
    return Side(name, tree, process, log)


def interleave(sides: list[Side], rounds: int, progress: Callable[[int, int], None] | None = None) -> int:
    """Time every row on every side for `rounds` rounds, alternating the order (AB, BA, AB, ...).

    Returns how many rounds finished; Ctrl-C stops after the round in progress is dropped, keeping the finished ones.
    """
    finished = 0
    try:
        for number in range(rounds):
            order = sides if number % 2 == 0 else sides[::-1]
            answers = [(side, side.ask({'cmd': 'round'})['times']) for side in order]
            for side, times in answers:
                for row_id, sample in times.items():
                    side.samples.setdefault(row_id, []).append(sample)
            finished += 1
            if progress is not None:
                progress(finished, rounds)
    except KeyboardInterrupt:
        for side in sides:
            for samples in side.samples.values():
                del samples[finished:]
    return finished
