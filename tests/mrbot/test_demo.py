# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot demo`: `mrbot prepare` on the bundled example change, in a clone, printing a complete PR body."""

import re

from mrbot import git
from mrbot.cli import main
from mrbot.demo import SOURCE


def test_demo_prints_a_complete_body_for_the_example_change(capsys):
    assert main(['demo']) == 0
    captured = capsys.readouterr()
    body, progress = captured.out, captured.err
    base = git.resolve(SOURCE, 'HEAD')[:12]
    assert f'running mrbot prepare --base {base} there' in progress
    # it ends on what to do next, below the body
    assert progress.rstrip().endswith('mrbot help         every command; docs/ci.md sets the bot up in CI')
    assert [line for line in body.splitlines() if line.startswith('## ')] == [
        '## Summary', '## Test plan', '## Benchmark / NCU', '## Breaking changes', '## Checklist']
    assert '- [Simple GLA] Try unpipelined configs in the chunk autotune space (`' in body
    assert '| fla/ops/simple_gla | `fla/ops/simple_gla/chunk.py` | modified | +1 / -1 |' in body
    assert 'added cases `T65-one-token-past-a-chunk`' in body
    plan = re.search(r'Dependent tests, run on \*\*(.*?)\*\*: (\d+) passed, (\d+) failed', body)
    assert plan is not None and plan.group(1) == 'Triton interpreter (CPU)'
    assert int(plan.group(2)) > 0 and plan.group(3) == '0'
    assert '| backward | covered' in body and '| varlen (cu_seqlens) | covered' in body
    # no GPU here: the benchmark is pending, with the command that fills it
    assert f'**Pending (no GPU here; or comment `/bench chunk_simple_gla` on the PR): `mrbot bench --op chunk_simple_gla ' \
           f'--base {base}`' in body
    assert '- [x] Dependent tests pass' in body and '- [ ] Before/after benchmark on sm_90 or newer' in body
    # the three chunk kernels the change reaches, compiled for both targets, each fitting
    compiled = re.findall(r'^\| `(chunk_simple_gla_\w+)` \(`fla/ops/simple_gla/chunk.py:\d+`\) \| ok, \d+ KiB of 227 KiB '
                          r'shared.* \| ok, \d+ KiB of 227 KiB shared \|$', body, re.MULTILINE)
    assert sorted(compiled) == ['chunk_simple_gla_bwd_kernel_dkvg', 'chunk_simple_gla_bwd_kernel_dq',
                                'chunk_simple_gla_fwd_kernel']
    assert re.search(r'^- \[x\] Kernels compile for sm_90 and sm_100 \(\d+ kernels in \d+ compiles, ', body, re.MULTILINE)
