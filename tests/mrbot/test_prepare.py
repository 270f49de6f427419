# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot prepare` end to end on small repositories: the body's sections, its ticks, and the evidence behind them."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mrbot import evidence, prepare, selection
from mrbot.cli import main
from mrbot.config import load_config
from mrbot.prepare import BODY_FILE, render_body
from mrbot.records import MrbotError
from mrbot.records.bench import BenchRun
from mrbot.repo.workspace import Workspace

PYPROJECT = '''[tool.mrbot]
source-roots = ["pkg"]
public-roots = ["pkg"]
title-tags = ["Docs", "Misc", "Ops", "Scale", "Shift", "Test"]

[tool.mrbot.bench.ops.scale]
callable = "pkg.ops.scale:scale"
gate = "tests/test_scale.py"
modes = ["fwd", "fwdbwd"]

[tool.mrbot.bench.ops.scale.inputs]
x = { shape = ["B", "D"], dtype = "float32" }

[tool.mrbot.bench.ops.scale.shapes]
small = { B = 2, D = 4 }

[tool.pytest.ini_options]
pythonpath = ["."]
'''
HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'
OP = HEADER + '''"""Scale by a factor, plus an optional carried state."""


def scale(x, factor=2.0, initial_state=None, output_final_state=False):
    """Return `(x * factor + initial_state, last row)`; the last row only when `output_final_state`."""
    out = x * FACTOR_USE + (0 if initial_state is None else initial_state)
    return out, (out[-1] if output_final_state else None)
'''
NAIVE = HEADER + '''"""The reference, row by row."""

import torch


def naive_scale(x, factor=2.0, initial_state=None, output_final_state=False):
    rows = [row * factor for row in x]
    out = torch.stack(rows) + (0 if initial_state is None else initial_state)
    return out, (out[-1] if output_final_state else None)
'''
TEST = HEADER + '''import torch

from pkg.ops.scale import scale
from pkg.ops.scale.naive import naive_scale


def test_forward_and_backward():
    x = torch.arange(6.0).reshape(2, 3).requires_grad_()
    out, _ = scale(x, 2.0)
    ref, _ = naive_scale(x.detach(), 2.0)
    assert torch.equal(out, ref)
    out.sum().backward()
    assert x.grad.tolist() == [[2.0] * 3] * 2
'''
STATE_TEST = '''

def test_state_in_and_out():
    x = torch.ones(2, 3)
    _, last = scale(x, 2.0, initial_state=torch.ones(3), output_final_state=True)
    assert last.tolist() == [3.0] * 3
'''
CALLER = HEADER + '''from pkg.ops.scale import scale


def doubled(x):
    return scale(x, factor=2.0)[0]
'''


def _base_files() -> dict[str, str]:
    return {'pyproject.toml': PYPROJECT, 'pkg/__init__.py': HEADER, 'pkg/ops/__init__.py': HEADER,
            'pkg/ops/scale/__init__.py': HEADER + 'from pkg.ops.scale.op import scale\n\n__all__ = ["scale"]\n',
            'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', 'factor'), 'pkg/ops/scale/naive.py': NAIVE,
            'pkg/layers.py': CALLER, 'tests/test_scale.py': TEST, 'README.md': '# pkg\n'}


@pytest.fixture
def prepared(repo, monkeypatch, capsys):
    """Commit the base on main, then a change on a branch, and run `mrbot prepare`; returns (exit code, body, record)."""
    def run(change: dict[str, str | None], subject: str, *argv: str, base: dict[str, str] | None = None):
        repo.commit({**_base_files(), **(base or {})}, '[Ops] Base')
        repo.git('checkout', '-q', '-b', 'topic')
        repo.commit(change, subject)
        monkeypatch.chdir(repo.root)
        code = main(['prepare', '--base', 'main', *argv])
        capsys.readouterr()
        body = (repo.root / '.mrbot' / 'pr_body.md').read_text()
        return code, body, json.loads((repo.root / '.mrbot' / 'evidence.json').read_text())
    return run


def _section(body: str, name: str) -> str:
    match = re.search(rf'^## {re.escape(name)}.*?\n(.*?)(?=^## |\Z)', body, re.MULTILINE | re.DOTALL)
    assert match, f'no section {name!r} in:\n{body}'
    return match.group(1)


def _ticks(body: str) -> dict[str, bool]:
    return {m.group(2): m.group(1) == 'x' for m in re.finditer(r'^- \[([ x])\] (.*?) \(', body, re.MULTILINE)}


def test_clean_kernel_change(prepared, repo):
    code, body, record = prepared({'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', 'float(factor)'),
                                   'tests/test_scale.py': TEST + STATE_TEST}, 'Cast the factor to float')
    assert code == 0
    summary = _section(body, 'Summary')
    assert '- [Scale] Cast the factor to float' not in summary and 'Cast the factor to float' in summary
    assert record['change']['title'] == '[Scale] Cast the factor to float'
    assert '`tests/test_scale.py` ← `pkg/ops/scale/op.py:scale`' in summary
    plan = _section(body, 'Test plan')
    assert 'added `test_state_in_and_out`' in plan
    assert '2 passed, 0 failed' in plan and 'Triton interpreter (CPU)' in plan
    assert 'python -m pytest tests/test_scale.py' in plan
    coverage = {row[0]: row[1] for row in re.findall(r'^\| (forward|backward|initial state|final state) \| (.*?) \|$',
                                                     plan, re.MULTILINE)}
    assert coverage == {'forward': 'covered (2 tests)', 'backward': 'covered (1 test)',
                        'initial state': 'covered (1 test)', 'final state': 'covered (1 test)'}
    bench = _section(body, 'Benchmark / NCU')
    assert f"mrbot bench --op scale --base {record['change']['base'][:12]}" in bench and 'comment `/bench scale`' in bench
    assert 'None: no public signature' in _section(body, 'Breaking changes')
    ticks = _ticks(body)
    assert ticks['Dependent tests pass'] and ticks['Tests exercise every coverage axis of the touched ops']
    assert ticks['`mrbot check` reports no errors on the change'] and ticks['No public signature broken']
    # pending on this machine, so not ticked
    assert ticks['Before/after benchmark on sm_90 or newer, correctness gate green'] is False
    # the default template's body passes the repository's own body check
    report = repo.check('MR-BODY', base='main', body=body)
    assert report.findings == ()


def test_failing_test_unticks_and_names_it(prepared):
    code, body, record = prepared({'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', '(factor + 1)')},
                                  '[Scale] Off by one')
    assert code == 1
    assert [s['status'] for s in record['steps'] if s['name'] == 'tests'] == ['failed']
    plan = _section(body, 'Test plan')
    assert '0 passed, 1 failed' in plan
    assert '`tests/test_scale.py::test_forward_and_backward`' in plan
    ticks = _ticks(body)
    assert ticks['Dependent tests pass'] is False
    assert ticks['Tests exercise every coverage axis of the touched ops'] is False
    # the failed test hits nothing; the axes it would have shown are not covered
    assert '| forward | **not covered** |' in plan


STICKY_TESTS = """

DEVICE = {'poisoned': False}


def test_out_of_bounds():
    DEVICE['poisoned'] = True
    raise RuntimeError('CUDA error: an illegal memory access was encountered')


def test_after_it():
    if DEVICE['poisoned']:
        raise RuntimeError('CUDA error: an illegal memory access was encountered')
"""


def test_a_sticky_device_error_is_one_crash_not_a_failure_of_every_later_test(prepared):
    code, body, record = prepared({'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', 'float(factor)'),
                                   'tests/test_scale.py': TEST + STICKY_TESTS}, '[Scale] Cast the factor to float')
    assert code == 1
    plan = _section(body, 'Test plan')
    assert '2 passed, 0 failed, 1 crashed (1 passed after restart), 0 skipped' in plan
    assert ('`tests/test_scale.py::test_out_of_bounds` crashed, the first to report a sticky device error: '
            'RuntimeError: CUDA error: an illegal memory access was encountered') in plan
    assert '| `tests/test_scale.py` | 2 | 0 | 1 | 0 | 0 |' in plan
    assert _ticks(body)['Dependent tests pass'] is False


def test_non_kernel_change_is_neutral(prepared):
    code, body, record = prepared({'README.md': '# pkg\n\nScales tensors.\n'}, 'Explain what pkg does')
    assert code == 0
    assert record['change']['title'] == '[Docs] Explain what pkg does'
    assert record['ops'] == [] and record['tests'] is None
    assert 'Neutral: no code changed' in _section(body, 'Benchmark / NCU')
    assert 'Coverage of the touched ops' not in body
    ticks = _ticks(body)
    assert ticks["No benchmarked op's code changed, so no benchmark is needed"]
    assert ticks['Dependent tests pass'] is False


def test_a_comment_and_docstring_change_is_no_code_change_and_asks_no_benchmark(prepared):
    edited = OP.replace('FACTOR_USE', 'factor').replace('"""Scale by a factor', '"""Scale by one factor').replace(
        '    out = x', '    # the carried state adds after the scale\n    out = x')
    code, body, record = prepared({'pkg/ops/scale/op.py': edited}, 'Fix a typo in the scale docstring')
    assert record['ops'] == ['scale'] and record['bench_ops'] == []
    assert record['change']['files'][0]['code'] is False
    assert ('Neutral: no code changed (prose, comments, docstrings, error messages, layout or local names only)'
            in _section(body, 'Benchmark / NCU'))


def test_new_op_without_naive_reference_is_an_error(prepared):
    op = HEADER + 'def shift(x, by=1.0):\n    return x + by\n'
    test = HEADER + 'from pkg.ops.shift import shift\n\n\ndef test_shift():\n    assert shift(1.0) == 2.0\n'
    code, body, record = prepared({'pkg/ops/shift/__init__.py': HEADER + 'from pkg.ops.shift.op import shift\n',
                                   'pkg/ops/shift/op.py': op, 'tests/test_shift.py': test}, '[Shift] Add shift')
    assert code == 1
    assert _ticks(body)['`mrbot check` reports no errors on the change'] is False
    assert 'error `TST002` at `pkg/ops/shift/`: new op pkg/ops/shift/ has no naive.py reference' in body
    assert '1 passed, 0 failed' in _section(body, 'Test plan')


def test_breaking_change_names_the_callers(prepared):
    op = OP.replace('factor=2.0, ', '').replace('FACTOR_USE', '2.0')
    code, body, record = prepared({'pkg/ops/scale/op.py': op}, '[Scale] Fix the factor at two')
    breaking = _section(body, 'Breaking changes')
    assert '`scale` in `pkg/ops/scale/op.py`: parameter `factor` removed' in breaking
    assert '  Callers still on the old form: `pkg/layers.py:7`, `tests/test_scale.py:11`.' in breaking
    assert _ticks(body)['No public signature broken'] is False


def test_no_tests_flag_records_the_command(prepared):
    code, body, record = prepared({'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', 'float(factor)')},
                                  '[Scale] Cast', '--no-tests')
    assert code == 0
    base = record['change']['base'][:12]
    assert f'Dependent tests: not run (--no-tests); run `mrbot test --base {base}`' in body
    assert 'Not measured: the dependent tests did not run.' in body


def test_bench_rounds_below_three_is_a_clear_error(repo, monkeypatch, capsys):
    repo.commit(_base_files())
    monkeypatch.chdir(repo.root)
    assert main(['prepare', '--bench-rounds', '2']) == 2
    assert capsys.readouterr().err.strip() == ('mrbot prepare: error: --bench-rounds must be at least 3 '
                                               '(a confidence interval needs them), got 2')


def test_no_change_is_said_and_writes_no_body(repo, monkeypatch, capsys):
    repo.commit(_base_files())
    monkeypatch.chdir(repo.root)
    assert main(['prepare', '--base', 'HEAD', '--no-tests', '--no-compile', '--no-bench']) == 0
    assert capsys.readouterr().out == ('mrbot prepare: nothing to prepare: the working tree does not differ from the '
                                       'base (HEAD); no PR body written\n')
    assert not (repo.root / '.mrbot' / BODY_FILE).exists()


def test_a_measured_benchmark_fills_its_section(prepared, repo, tmp_path_factory):
    """The section a GPU run fills, rendered from a real paired run (here under the interpreter, so never a claim)."""
    _, _, record = prepared({'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', 'float(factor)')}, '[Scale] Cast',
                            '--no-tests')
    measured = tmp_path_factory.mktemp('out') / 'bench.json'
    assert main(['bench', '--op', 'scale', '--base', 'main', '--rounds', '3', '--json', str(measured)]) == 0
    record = prepare.prepare(prepare.PrepareOptions(no_tests=True, no_compile=True, no_bench=True, quiet=True),
                             Workspace.load(repo.root), 'main')
    record.bench = BenchRun.load(measured)
    record.conclusion = evidence.conclusion(record)
    bench = _section(render_body(record, repo.root, load_config(repo.root)), 'Benchmark / NCU')
    assert 'Hardware: **cpu** (cpu (not evidence)), driver -' in bench
    assert '3 interleaved rounds, each timed call one CUDA graph replay; inputs x float32.' in bench
    rows = re.findall(r'^\| scale \| (fwd|fwdbwd) \| small \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+-[\d.]+ \| (\w+) '
                      r'\(not evidence: no GPU, Triton interpreter\) \|', bench, re.MULTILINE)
    assert sorted(mode for mode, _ in rows) == ['fwd', 'fwdbwd'] and {v for _, v in rows} <= {'same', 'noisy'}
    assert 'Correctness gate: passed' in bench and 'Nsight Compute: not collected' in bench
    assert '**Conclusion: no speed claim: timed under the Triton interpreter, not on a GPU.**' in bench


def test_a_test_only_change_shows_coverage_but_times_nothing(prepared):
    code, body, record = prepared({'tests/test_scale.py': TEST + STATE_TEST}, '[Scale] Test the carried state')
    assert code == 0 and record['ops'] == ['scale'] and record['bench_ops'] == []
    assert '| final state | covered (1 test) |' in _section(body, 'Test plan')
    assert "Neutral: no benchmarked op's code changed" in _section(body, 'Benchmark / NCU')
    assert _ticks(body)["No benchmarked op's code changed, so no benchmark is needed"]


QUICK = ('--no-tests', '--no-compile', '--no-bench')


def test_the_tests_that_select_a_change_are_found_once_per_prepare(prepared, monkeypatch):
    """The selection stage finds them, and the check's rules read them from it instead of walking the imports again;
    a file no test reaches is still reported."""
    found = []
    real = selection.select_change

    def counted(workspace, change):
        found.append(change.paths)
        return real(workspace, change)

    monkeypatch.setattr(selection, 'select_change', counted)
    monkeypatch.setattr(prepare, 'select_change', counted)
    code, body, record = prepared({'pkg/orphan.py': HEADER + 'VALUE = 1\n'}, '[Ops] An orphan', *QUICK)
    assert len(found) == 1
    assert [f['rule'] for f in record['check']['findings'] if f['path'] == 'pkg/orphan.py'] == ['SEL001']
FUSED = HEADER + '''import triton
import triton.language as tl


@triton.jit
def fused_scale_kernel(x, o, D: tl.constexpr, BD: tl.constexpr):
    o_d = tl.arange(0, BD)
    tl.store(o + o_d, tl.load(x + o_d, mask=o_d < D, other=0) * 2, mask=o_d < D)


def fused_scale(x, head_first=False):
    return x * 2
'''
EXPORTS = HEADER + ('from pkg.ops.scale.fused import fused_scale\nfrom pkg.ops.scale.op import scale\n\n'
                    '__all__ = ["fused_scale", "scale"]\n')


def test_the_public_ops_a_kernel_change_reaches_are_named_benchmarked_or_not(prepared):
    """upstream's b67113b: a mask added in `fused_recurrent_kda`'s kernel names `fused_recurrent_kda`, which no
    benchmark declares."""
    _, body, record = prepared({'pkg/ops/scale/fused.py': FUSED.replace('* 2, mask', '* 3, mask')},
                               '[Scale] Triple in the fused kernel', *QUICK,
                               base={'pkg/ops/scale/__init__.py': EXPORTS, 'pkg/ops/scale/fused.py': FUSED})
    assert record['reached'] == ['fused_scale'] and record['bench_ops'] == []
    assert 'public ops it reaches: `fused_scale`' in _section(body, 'Summary')


def test_the_compile_stage_takes_the_tests_the_select_stage_found(prepared, monkeypatch):
    """The kernels' launches are captured from the change's selection and timed ops, not from a second walk of the
    imports and the op declarations."""
    from mrbot.compile import plan

    found, again = [], []
    real = selection.select_change
    monkeypatch.setattr(prepare, 'select_change', lambda workspace, change: found.append(1) or real(workspace, change))
    monkeypatch.setattr(plan, 'select', lambda *args: again.append(args) or selection.select(*args))
    monkeypatch.setattr(plan, 'touched_ops', lambda *args, **kwargs: again.append(args))
    _, _, record = prepared({'pkg/ops/scale/fused.py': FUSED.replace('* 2, mask', '* 3, mask')},
                            '[Scale] Triple in the fused kernel', '--no-tests', '--no-bench',
                            base={'pkg/ops/scale/__init__.py': EXPORTS, 'pkg/ops/scale/fused.py': FUSED})
    assert (len(found), again) == (1, [])
    assert [(s['name'], s['status']) for s in record['steps']][:2] == [('select', 'done'), ('compile', 'done')]


def test_typos_in_prose_comments_messages_and_local_names_are_no_code_change(prepared):
    """upstream's a1a6bb1: spelling fixed across documents, comments, docstrings, an assertion's message and a local
    variable's name."""
    typos = OP.replace('FACTOR_USE', 'factor').replace('    out = x', '    asert = x.dim() == 2\n    assert asert, "x must '
                                                      'be a matirx"\n    # scael it\n    out = x')
    fixed = typos.replace('asert', 'is_matrix').replace('matirx', 'matrix').replace('scael', 'scale').replace(
        'Scale by a factor', 'Scale by one factor')
    _, body, record = prepared({'pkg/ops/scale/op.py': fixed, 'README.md': '# pkg\n\nScales tensors.\n'},
                               '[Docs] Fix typos', *QUICK, base={'pkg/ops/scale/op.py': typos})
    assert [f['code'] for f in record['change']['files']] == [False, False]
    assert record['reached'] == [] and record['bench_ops'] == []
    assert 'Neutral: no code changed' in _section(body, 'Benchmark / NCU')


def test_a_keyword_newly_rejected_is_a_breaking_change_of_public_ops_only(prepared):
    """upstream's 81091cc: `head_first=False` replaced by a `**kwargs` that raises on it, in public ops, a kernel's
    launcher behind a backend, and the naive reference; only the public op is a break."""
    old = OP.replace('FACTOR_USE', 'factor').replace('output_final_state=False)', 'output_final_state=False, '
                                                                               'head_first=False)')
    new = OP.replace('FACTOR_USE', 'factor').replace('output_final_state=False)', 'output_final_state=False, '
                                                                               '**kwargs)')
    new = new.replace('    out = x', '    if \'head_first\' in kwargs:\n        raise DeprecationWarning("head_first has '
                                  'been removed")\n    out = x')
    backend = HEADER + 'def scale_npu(x, head_first=False):\n    return x\n'
    naive = NAIVE.replace('output_final_state=False)', 'output_final_state=False, head_first=False)')
    _, body, record = prepared(
        {'pkg/ops/scale/op.py': new, 'pkg/ops/scale/backends/npu.py': backend.replace('head_first=False', '**kwargs'),
         'pkg/ops/scale/naive.py': naive.replace('head_first=False', '**kwargs')},
        '[Scale] Remove head_first', *QUICK,
        base={'pkg/ops/scale/op.py': old, 'pkg/ops/scale/backends/__init__.py': HEADER + 'from .npu import scale_npu\n',
              'pkg/ops/scale/backends/npu.py': backend, 'pkg/ops/scale/naive.py': naive})
    assert [(b['name'], b['change']) for b in record['breaking']] == [('scale', 'now raises when `head_first` is passed')]
    assert '`scale` in `pkg/ops/scale/op.py`: now raises when `head_first` is passed' in _section(body, 'Breaking changes')


def test_an_optional_parameter_added_at_the_end_breaks_nothing(prepared):
    """upstream's 033b19e: `chunk_indices=None` added to a public op."""
    added = OP.replace('output_final_state=False)', 'output_final_state=False, chunk_indices=None)')
    _, body, record = prepared({'pkg/ops/scale/op.py': added.replace('FACTOR_USE', 'factor')},
                               '[Scale] Accept chunk indices', *QUICK)
    assert record['breaking'] == []
    assert 'None: no public signature' in _section(body, 'Breaking changes')


def _count_calls(monkeypatch, module, name: str) -> list:
    """Count the calls of `module.name`, wherever an mrbot module imported it."""
    original, calls = getattr(module, name), []

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    for loaded in [m for key, m in sys.modules.items() if key.startswith(('mrbot', 'checks'))]:
        if getattr(loaded, name, None) is original:
            monkeypatch.setattr(loaded, name, counted)
    return calls


def test_one_prepare_reads_the_settings_once_and_builds_the_import_graph_once(prepared, monkeypatch):
    import mrbot.config
    import mrbot.repo.graph

    settings = _count_calls(monkeypatch, mrbot.config, 'parse_config')
    graphs = _count_calls(monkeypatch, mrbot.repo.graph, 'build_graph')
    # every step that reads the graph runs: selection, ops reached, compilation, the checks, breaking changes
    code, _, record = prepared({'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', 'float(factor)')}, '[Scale] Cast',
                               '--no-tests', '--no-bench')
    assert [s['status'] for s in record['steps']] == ['done', 'skipped', 'done', 'skipped', 'done', 'skipped']
    assert (len(settings), len(graphs)) == (1, 1)


def test_head_prepares_a_commit_whatever_the_working_tree_holds(repo, monkeypatch, capsys):
    repo.commit(_base_files(), '[Ops] Base')
    base = repo.git('rev-parse', 'HEAD')
    head = repo.commit({'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', 'float(factor)')}, '[Scale] Cast the factor')
    # uncommitted work the commit does not hold
    repo.write({'README.md': '# pkg\n\nwork in progress\n', 'pkg/extra.py': HEADER})
    monkeypatch.chdir(repo.root)
    assert main(['prepare', '--base', base, '--head', head, *QUICK]) == 0
    record = json.loads((repo.root / '.mrbot' / 'evidence.json').read_text())
    assert record['change']['head'] == head
    assert [f['path'] for f in record['change']['files']] == ['pkg/ops/scale/op.py']
    assert record['reached'] == ['scale']
    assert main(['prepare', '--base', base, '--head', head, '--open']) == 2
    assert capsys.readouterr().err.strip().endswith('--open and --update publish the checked-out branch; --head names '
                                                    'another revision')


@pytest.mark.parametrize(('argv', 'message'), [
    (['--test-timeout', '-1'], '--test-timeout must be above 0 seconds per test file, got -1'),
    (['--test-timeout', '0'], '--test-timeout must be above 0 seconds per test file, got 0'),
    (['--test-workers', '-2'], '--test-workers must be 0 (sized for this machine) or more, got -2'),
    (['--open'], "no git remote named 'origin': expected one of `git remote`, or pass --remote NAME"),
])
def test_bad_flags_are_refused_before_any_step(repo, monkeypatch, capsys, argv, message):
    repo.commit(_base_files())
    repo.git('checkout', '-q', '-b', 'topic')
    repo.commit({'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', 'float(factor)')}, '[Scale] Cast')
    monkeypatch.chdir(repo.root)
    assert main(['prepare', '--base', 'main', *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err == f'mrbot prepare: error: {message}\n'
    assert not (repo.root / '.mrbot' / 'evidence.json').exists()


def _pushed_branch(repo, monkeypatch) -> None:
    repo.commit(_base_files())
    repo.git('checkout', '-q', '-b', 'topic')
    repo.commit({'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', 'float(factor)')}, '[Scale] Cast')
    repo.git('remote', 'add', 'origin', 'https://github.com/owner/pkg.git')
    monkeypatch.chdir(repo.root)
    for variable in ('GITHUB_TOKEN', 'GH_TOKEN'):
        monkeypatch.delenv(variable, raising=False)


def test_open_without_a_token_fails_before_any_step(repo, monkeypatch, capsys):
    _pushed_branch(repo, monkeypatch)
    assert main(['prepare', '--base', 'main', '--open']) == 2
    captured = capsys.readouterr()
    assert captured.err == ('mrbot prepare: error: no GitHub token: set GITHUB_TOKEN or GH_TOKEN to a token that may '
                            'write to the project\n')
    assert '[1/6]' not in captured.err and not (repo.root / '.mrbot' / 'evidence.json').exists()


def test_a_late_publishing_failure_names_the_saved_evidence(repo, monkeypatch, capsys):
    import mrbot.forges

    class Unreachable:
        body_limit = 65536

        def branch_exists(self, branch):
            return True

        def find_pull(self, branch):
            raise MrbotError('GitHub: finding the pull request of topic: 502 Bad Gateway')

    _pushed_branch(repo, monkeypatch)
    monkeypatch.setattr(mrbot.forges, 'connect', lambda *args, **kwargs: Unreachable())
    assert main(['prepare', '--base', 'main', '--open', '--no-compile', '--no-bench', '-q']) == 2
    err = capsys.readouterr().err
    state = repo.root / '.mrbot'
    assert err == (f'mrbot prepare: error: GitHub: finding the pull request of topic: 502 Bad Gateway (the evidence is '
                   f'saved in {state / "evidence.json"}, the body in {state / "pr_body.md"})\n')
    assert json.loads((state / 'evidence.json').read_text())['steps'][3]['status'] == 'done'


def test_quiet_shows_no_step_progress(prepared, capsys):
    prepared({'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', 'float(factor)')}, '[Scale] Cast', '-q', '--no-compile')
    assert capsys.readouterr().err == ''


SLOW = HEADER + '''import os
import time
from pathlib import Path

from pkg.ops.scale import scale


def test_sleeps():
    Path(__file__).with_name('pid').write_text(str(os.getpid()))
    time.sleep(60)
'''


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_saves_the_evidence_so_far_and_stops_the_tests(repo, signum):
    repo.commit({**_base_files(), 'tests/test_slow.py': SLOW}, '[Ops] Base')
    repo.git('checkout', '-q', '-b', 'topic')
    repo.commit({'pkg/ops/scale/op.py': OP.replace('FACTOR_USE', 'float(factor)')}, '[Scale] Cast')
    process = subprocess.Popen([sys.executable, '-m', 'mrbot.cli', 'prepare', '--base', 'main', '--no-compile'],
                               cwd=repo.root, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # the test files run side by side: the quick one ends, the slow one sleeps
    seen = []
    for line in process.stderr:
        seen.append(line)
        if line.startswith('[1/2] tests/test_scale.py'):
            break
    pid = repo.root / 'tests' / 'pid'
    deadline = time.monotonic() + 60
    while not (pid.exists() and pid.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signum)
    _, err = process.communicate(timeout=30)
    err = ''.join(seen) + err
    evidence_path = repo.root / '.mrbot' / 'evidence.json'
    assert process.returncode == 130, err
    assert err.splitlines()[-1].startswith('mrbot prepare: interrupted') and 'Traceback' not in err
    assert not Path(f'/proc/{pid.read_text()}').exists()
    record = json.loads(evidence_path.read_text())
    assert [(s['name'], s['status']) for s in record['steps']] == [
        ('select', 'done'), ('compile', 'skipped'), ('check', 'done'), ('tests', 'interrupted')]
    assert record['steps'][-1]['detail'] == '1 of 2 test files finished'
    files = {f['file']: (f['passed'], f['note']) for f in record['tests']['files']}
    assert files == {'tests/test_scale.py': (1, ''), 'tests/test_slow.py': (0, 'interrupted: 0 tests ran before it stopped')}


def test_a_check_step_counts_its_findings_in_words(prepared):
    op = HEADER + 'def shift(x, by=1.0):\n    return x + by\n'
    test = HEADER + 'from pkg.ops.shift import shift\n\n\ndef test_shift():\n    assert shift(1.0) == 2.0\n'
    _, _, record = prepared({'pkg/ops/shift/__init__.py': HEADER + 'from pkg.ops.shift.op import shift\n',
                             'pkg/ops/shift/op.py': op, 'tests/test_shift.py': test}, '[Shift] Add shift', '--no-compile')
    detail = next(s['detail'] for s in record['steps'] if s['name'] == 'check')
    assert re.fullmatch(r'(1 finding|[02-9]\d* findings), (1 error|\d+ errors)', detail), detail
    assert '1 error,' not in detail and not re.search(r'\b1 (findings|errors)\b', detail)


def test_a_template_that_does_not_parse_is_refused_before_any_step_and_one_that_fails_keeps_the_evidence(
        repo, monkeypatch, capsys):
    repo.commit({'pyproject.toml': '[tool.mrbot]\ntemplates = "tpl"\n', 'tpl/pr_body.md.j2': '{% if %}\n',
                 'pkg/a.py': 'X = 1\n'}, '[Test] Base')
    repo.write({'pkg/a.py': 'X = 2\n'})
    monkeypatch.chdir(repo.root)
    options = ['prepare', '--base', 'HEAD', '--no-tests', '--no-compile', '--no-bench', '--title', '[Fix] X']
    assert main(options) == 2
    err = capsys.readouterr().err
    assert "tpl/pr_body.md.j2:1: Expected an expression, got 'end of statement block'" in err and len(err.splitlines()) == 1
    assert not (repo.root / '.mrbot' / 'evidence.json').exists()
    (repo.root / 'tpl' / 'pr_body.md.j2').write_text('{{ e.no_such_field.x }}\n')
    assert main(options) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith('mrbot prepare: error: ') and 'no_such_field' in last and 'the evidence is saved in ' in last
    assert (repo.root / '.mrbot' / 'evidence.json').is_file() and not (repo.root / '.mrbot' / 'pr_body.md').exists()


def test_on_a_gpu_the_selected_tests_kernels_are_compiled_before_they_run(repo, monkeypatch, capsys, tmp_path):
    """As `mrbot test` does: each test process would compile every kernel its tests launch; compiled first, once each,
    for the machine's GPU (a stand-in here: the compile is for sm_90 on the CPU, and the tests then fail without one)."""
    from mrbot.testing import Gpu

    monkeypatch.setattr(prepare, 'device_label', lambda: 'compiled (a stand-in for a GPU in this test)')
    monkeypatch.setattr(prepare, 'local_gpu', lambda: Gpu('NVIDIA H100', (9, 0), 80 * 2**30))
    monkeypatch.setenv('TRITON_CACHE_DIR', str(tmp_path / 'triton'))
    launched = FUSED.replace('import triton\n', 'import torch\nimport triton\n', 1).replace(
        '    return x * 2\n',
        '    o = torch.empty_like(x)\n    fused_scale_kernel[(1,)](x, o, D=x.shape[-1], BD=16)\n    return o\n')
    test = HEADER + ('import torch\n\nfrom pkg.ops.scale import fused_scale\n\n\ndef test_fused():\n'
                     '    assert fused_scale(torch.ones(4)).tolist() == [3.0] * 4\n')
    repo.commit({**_base_files(), 'pkg/ops/scale/__init__.py': EXPORTS, 'pkg/ops/scale/fused.py': launched,
                 'tests/test_fused.py': test}, '[Ops] Base')
    repo.git('checkout', '-q', '-b', 'topic')
    repo.commit({'pkg/ops/scale/fused.py': launched.replace('* 2, mask', '* 3, mask')}, '[Scale] Triple in the kernel')
    monkeypatch.chdir(repo.root)
    main(['prepare', '--base', 'main', '--no-bench'])
    err = capsys.readouterr().err
    said = re.search(r'tests: 1 kernel launch compiled ahead for sm_90 in \d+ s \(\d+ s of it capturing them\), '
                     r'\d+ at a time', err)
    assert said and err.index(said.group(0)) < err.index('tests/test_fused.py')
    assert [entry for entry in (tmp_path / 'triton').iterdir() if (entry / 'fused_scale_kernel.cubin').exists()]
