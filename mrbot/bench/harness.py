# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Worker processes, one per side, and the interleaved rounds that time them."""

from __future__ import annotations

import contextlib
import json
import os
import signal
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
        """Ask the worker to exit, as after a finished run; kill it when it does not."""
        if self.process.poll() is None:
            try:
                self.process.stdin.write(json.dumps({'cmd': 'exit'}) + '\n')
                self.process.stdin.flush()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()

    def kill(self) -> None:
        """Stop the worker and every process it started at once, as after an interrupt: what it was timing is dropped,
        so it need not finish."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def start_side(name: str, tree: Path, state: Path, environment: dict[str, str]) -> Side:
    """Start the worker of one side; its Triton cache is its own, so neither side reuses the other's kernels, and not
    layered over a shared one: a cache manager would be imported from the side's tree, which may ship its own."""
    state.mkdir(parents=True, exist_ok=True)
    inherited = {key: value for key, value in os.environ.items() if key != 'TRITON_CACHE_MANAGER'}
    env = {**inherited, **environment, 'TRITON_CACHE_DIR': str(state / 'triton-cache'),
           'PYTHONPATH': os.pathsep.join([str(tree), os.environ.get('PYTHONPATH', '')]).rstrip(os.pathsep)}
    log = state / 'worker.log'
    with log.open('w') as errors:
        # a session of its own: Ctrl-C reaches mrbot alone, which keeps the finished rounds and then stops the worker
        process = subprocess.Popen([sys.executable, str(WORKER), str(tree)], cwd=tree, env=env, text=True,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, start_new_session=True)
    return Side(name, tree, process, log)


def interleave(sides: list[Side], rounds: int, progress: Callable[[int, int], None] | None = None) -> int:
    """Time every row on every side for `rounds` rounds, alternating the order (AB, BA, AB, ...).

    Returns how many rounds finished; Ctrl-C or SIGTERM drops the round in progress and keeps the finished ones (the
    workers are then mid-round: `Side.kill` them).
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
