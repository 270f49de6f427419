# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""What a benchmark number is evidence of: the machine, its clocks, its class, and its measured ceilings."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

HARDWARE_CLASS = {'sm_90': 'sm_90 baseline', 'sm_100': 'sm_100 preferred', 'sm_103': 'sm_103 preferred'}


def hardware_class(capability: str) -> str:
    """sm_90 is the minimum for a claim, datacenter Blackwell is preferred, anything else is reference only."""
    if not capability:
        return 'cpu (not evidence)'
    return HARDWARE_CLASS.get(capability, f'{capability} reference only')


def gpu_state() -> dict[str, str]:
    """Driver and clocks from nvidia-smi, read at the start and the end of a run; empty without one."""
    try:
        out = subprocess.run(['nvidia-smi', '--query-gpu=driver_version,clocks.sm,clocks.mem,temperature.gpu',
                              '--format=csv,noheader'], capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    driver, sm, memory, temperature = (part.strip() for part in out.splitlines()[0].split(','))
    return {'driver': driver, 'sm_clock': sm, 'memory_clock': memory, 'temperature_c': temperature}


def ceilings_path(state: Path, gpu: str) -> Path:
    return state / f"ceilings-{re.sub(r'[^0-9A-Za-z]+', '_', gpu)}.json"


def cached_ceilings(state: Path, gpu: str) -> dict | None:
    try:
        return json.loads(ceilings_path(state, gpu).read_text())
    except (OSError, ValueError):
        return None


def store_ceilings(state: Path, gpu: str, ceilings: dict) -> None:
    path = ceilings_path(state, gpu)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(ceilings))
