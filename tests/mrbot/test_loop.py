# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot loop` end to end on a small kernel repository: start, refused, red, gamed, held and clean tries, promotion
with its claim, a second loop that ends in a no-go, and the history they leave."""

from __future__ import annotations

import json
import re
from xml.etree import ElementTree

import pytest

from mrbot.bench import stage as bench_stage
from mrbot.cli import main
from mrbot.config import load_config
from mrbot.evidence import Evidence, Step, checklist, conclusion
from mrbot.loop.claim import markdown
from mrbot.loop.contract import Contract
from mrbot.loop.records import Loop, Plan
from mrbot.prepare import loop_outcomes, render_body
from mrbot.records import MrbotError
from mrbot.records.bench import parse_environment
from mrbot.records.loop_outcome import Claim, NoGo
from mrbot.records.reading import JsonObject
from mrbot.store import Store
from mrbot.summary import ChangeSummary
from mrbot.testing import Gpu
from tests.mrbot.loop_repo import GATE, KERNEL, files

CHUNK = 'pkg/ops/product/chunk.py'
# long enough that the kernel without it stays over 3x faster (LOOP002) on CI's two loaded cores, where 0.06 s once
# left the interpreter's own time near a third of the baseline's
BASELINE_DELAY = 0.15


def _line(text: str, fragment: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if fragment in line)


def _kernel(delay: float = BASELINE_DELAY, **replacements: str) -> str:
    text = KERNEL.replace('DELAY', repr(delay))
    for old, new in replacements.items():
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.fixture
def stand_in_gpu(monkeypatch):
    """Numbers from this CPU counted as evidence, as a GPU's would be, so that verdicts and promotion can be reached;
    the kernels still run in the Triton interpreter."""
    monkeypatch.setattr('mrbot.bench.stage.device_label', lambda: 'compiled (a stand-in for a GPU in this test)')
    monkeypatch.setattr('mrbot.bench.stage.cached_ceilings', lambda state, gpu: {'copy_tbs': 1.0, 'bf16_tflops': 1.0})


def _loop(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(['loop', *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _try(repo, capsys, changed: dict[str, str], note: str) -> tuple[int, str]:
    repo.write(changed)
    code, out, _ = _loop(capsys, 'try', '-q', '--note', note)
    repo.git('checkout', '-q', '--', '.')
    return code, out


# Each gamed change: the files it writes, then (rule id, path, the fragment of the line the reason names).
GAMED = {
    'loosened tolerance': ({'tests/ops/test_product.py': GATE.replace('1e-5', '1e-2')},
                           [('LOOP001', 'tests/ops/test_product.py', '1e-2'),
                            ('GATE002', 'tests/ops/test_product.py', '1e-2')]),
    'skipped case': ({'tests/ops/test_product.py': GATE.replace("@pytest.mark.parametrize(('B', 'D'), CASES)",
                                                                "@pytest.mark.skip(reason='slow')\n"
                                                                "@pytest.mark.parametrize(('B', 'D'), CASES)")},
                     [('LOOP001', 'tests/ops/test_product.py', 'pytest.mark.skip'),
                      ('GATE003', 'tests/ops/test_product.py', 'pytest.mark.skip')]),
    'tf32 on the kernel side': ({CHUNK: _kernel(**{'import torch\n': 'import torch\n\n'
                                                   'torch.backends.cuda.matmul.allow_tf32 = True\n'})},
                                [('GATE004', CHUNK, 'allow_tf32')]),
    'vendor routine': ({CHUNK: _kernel(**{'    product_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)\n':
                                          "    out = torch.einsum('bd,bd->bd', x, y)\n"})},
                       [('GAME001', CHUNK, 'torch.einsum')]),
    'cached output': ({CHUNK: _kernel(**{'def product_sum(x, y):\n': '_SEEN = {}\n\n\ndef product_sum(x, y):\n'
                                         '    if x.data_ptr() in _SEEN:\n'
                                         '        return _SEEN[x.data_ptr()]\n',
                                         '    return out.sum(-1)\n': '    _SEEN[x.data_ptr()] = out.sum(-1)\n'
                                                                    '    return _SEEN[x.data_ptr()]\n'})},
                      [('GAME002', CHUNK, '_SEEN[x.data_ptr()] = ')]),
    'side stream': ({CHUNK: _kernel(**{'    out = torch.empty_like(x)\n': '    out = torch.empty_like(x)\n'
                                       '    side = torch.cuda.Stream()\n'})},
                    [('GAME003', CHUNK, 'torch.cuda.Stream()')]),
}


def _reasons(status: dict, number: int) -> list[tuple[str, str, int]]:
    attempt = next(t for t in status['tries'] if t['number'] == number)
    return [(r['rule'], r['path'], r['line']) for r in attempt['reasons']]


def test_a_loop_from_start_to_claim_and_a_second_to_no_go(repo, monkeypatch, capsys, stand_in_gpu, tmp_path):
    repo.commit(files(BASELINE_DELAY))
    monkeypatch.chdir(repo.root)
    code, out, _ = _loop(capsys, 'start', '--op', 'product', '--shapes', 'small', '--rounds', '5', '-q')
    assert code == 0 and 'loop 1 of product started' in out
    assert 'tests/ops/test_product.py, pkg/ops/product/naive.py, tests/conftest.py, pkg/utils.py:assert_close' in out
    assert _loop(capsys, 'start', '--op', 'product')[2].endswith(
        'loop 1 of product is still open: end it with `mrbot loop promote TRY` or `mrbot loop no-go --bound TEXT` '
        'before starting another\n')

    # 1: the NaN poisoning is part of the contract
    code, out = _try(repo, capsys, {'tests/conftest.py': files(0)['tests/conftest.py'].replace(
        "fill_(float('nan'))", 'zero_()')}, 'no poisoning')
    assert code == 1 and 'try 1' in out and ': refused' in out
    # 2: a kernel that writes half its output passes on zeros, and fails on NaN
    code, out = _try(repo, capsys, {CHUNK: _kernel(**{'mask = offsets < n': 'mask = offsets < n // 2'})}, 'half')
    assert code == 1 and 'try 2' in out and ': red' in out
    # 3-8: one gamed change per rule, each refused before anything runs
    for note, (changed, _) in GAMED.items():
        code, out = _try(repo, capsys, changed, note)
        assert code == 1 and ': refused' in out, (note, out)
    # 9: many times faster without a reason is held for review, not believed
    code, out = _try(repo, capsys, {CHUNK: _kernel(0.0)}, 'no delay at all')
    assert code == 1 and ': held' in out and 'LOOP002' in out
    # 10: a clean change that removes half the delay
    code, out = _try(repo, capsys, {CHUNK: _kernel(BASELINE_DELAY / 2)}, 'half the delay')
    assert code == 0 and 'try 10' in out and ': faster' in out

    code, out, _ = _loop(capsys, 'status', '--format', 'json')
    status = json.loads(out)
    assert [t['verdict'] for t in status['tries']] == ['refused', 'red', *['refused'] * len(GAMED), 'held', 'faster']
    assert _reasons(status, 1) == [('LOOP001', 'tests/conftest.py', _line(files(0)['tests/conftest.py'], 'nan'))]
    assert [r[0] for r in _reasons(status, 2)] == ['gate', 'gate']
    # and says why each test failed: the NaN the poisoning left in the half not written
    assert all('relative error nan' in r['message'] for r in status['tries'][1]['reasons'])
    for number, (note, (changed, expected)) in enumerate(GAMED.items(), 3):
        assert _reasons(status, number) == [(rule, path, _line(changed[path], fragment))
                                            for rule, path, fragment in expected], note
    code, out, _ = _loop(capsys, 'status')
    board = out.splitlines()
    assert board[0].startswith('loop 1 of product (open)') and board[0].endswith('10 tries')
    assert board[2].split()[:3] == ['10', status['tries'][9]['sha'][:12], 'faster']

    assert _loop(capsys, 'promote', '9')[2].endswith('try 9 is held: only a try that was faster with a green gate '
                                                     'can be promoted\n')
    code, claim, _ = _loop(capsys, 'promote', '10', '-q')
    assert code == 0
    assert claim.startswith('### Optimization loop 1 of `product`: ') and 'x (equal-weight geomean)' in claim
    assert '| fwd | small | baseline |' in claim and '| | | candidate |' in claim
    assert 'median ms | mean | std | min | p10 | p90' in claim
    assert f"git checkout {status['tries'][9]['sha'][:12]} && mrbot bench --op product --base " in claim
    assert 'mrbot loop promote 10' in claim and 'stored as try 11' in claim
    # the claim rounds the stored numbers once: its attempts show the speed-up that the leaderboard shows
    assert f"| 10 | `{status['tries'][9]['sha'][:10]}` | faster | passed | {board[2].split()[3]} |" in claim
    assert _loop(capsys, 'claim')[1] == claim
    # mrbot prepare puts the claim of a loop the change builds on into the PR body
    outcomes = loop_outcomes(repo.root, ['product'])
    assert [type(o) for o in outcomes] == [Claim] and markdown(outcomes[0]) == claim
    # the ended loop's leaderboard stays readable; what needs an open loop says there is none
    assert _loop(capsys, 'status')[1].startswith('loop 1 of product (promoted), ')
    assert _loop(capsys, 'try')[2].endswith('no open loop: start one with `mrbot loop start --op OP`\n')

    # a second loop from the promoted change: one neutral try, then a no-go naming the bound
    repo.commit({CHUNK: _kernel(BASELINE_DELAY / 2)}, '[Perf] Half the delay')
    assert _loop(capsys, 'start', '--op', 'product', '--shapes', 'small', '--rounds', '5', '-q')[0] == 0
    code, out = _try(repo, capsys, {CHUNK: _kernel(BASELINE_DELAY / 2, **{'    n = x.numel()\n': '    n = x.numel()  '
                                                                           '# the element count\n'})}, 'a comment')
    assert code == 0 and (': same' in out or ': noisy' in out)
    code, no_go, _ = _loop(capsys, 'no-go', '--bound', 'sleep-bound: the delay is the op')
    assert code == 0 and no_go.startswith('### Optimization loop 2 of `product`: no-go')
    assert 'Bound: sleep-bound: the delay is the op' in no_go and '| 1 |' in no_go and 'a comment' in no_go

    # the history holds the baseline and every timed try of both loops
    plot = tmp_path / 'history.svg'
    assert main(['history', '--op', 'product', '--plot', str(plot)]) == 0
    table = capsys.readouterr().out.splitlines()
    # the two baselines and the timed tries: red 2, held 9, faster 10, its re-measure, and the second loop's
    assert table[1].split()[:4] == ['product', 'fwd', 'small', '7']
    svg = ElementTree.parse(plot).getroot()
    texts = {t.text for t in svg.iter('{http://www.w3.org/2000/svg}text')}
    assert {'product', 'median time (ms)', 'try or commit, in the order recorded', 'fwd small'} <= texts
    assert any(g.get('id') == 'product: fwd small' for g in svg.iter('{http://www.w3.org/2000/svg}g'))


def test_on_cpu_numbers_are_no_win_and_the_loop_says_what_it_freezes(repo, monkeypatch, capsys):
    repo.commit(files(BASELINE_DELAY))
    monkeypatch.chdir(repo.root)
    repo.write({CHUNK: _kernel(BASELINE_DELAY / 2)})
    assert _loop(capsys, 'start', '--op', 'product')[2] == (
        'mrbot loop: error: the working tree has uncommitted changes: the baseline is a commit; commit or stash them, '
        'then start the loop\n')
    repo.git('checkout', '-q', '--', '.')
    assert _loop(capsys, 'start', '--op', 'nope')[2].endswith('--op nope: not a benchmarkable op; declared ops: '
                                                              'product\n')
    assert _loop(capsys, 'start', '--op', 'product', '--shapes', 'small', '--rounds', '3', '-q')[0] == 0
    code, out = _try(repo, capsys, {CHUNK: _kernel(BASELINE_DELAY / 2)}, 'half the delay')
    # the interpreter's numbers are no evidence: the try is timed, but no verdict says faster
    assert code == 0 and ': noisy' in out and 'not evidence' in out
    assert _loop(capsys, 'promote', '1')[2].endswith('try 1 is noisy: only a try that was faster with a green gate '
                                                     'can be promoted\n')
    assert _loop(capsys, 'try', '-q')[2].endswith('the candidate is the baseline itself: change the kernel first (a '
                                                  'try is one change)\n')


def test_on_a_gpu_the_gates_kernels_are_compiled_once_before_its_tests(repo, monkeypatch, capsys, stand_in_gpu,
                                                                        tmp_path):
    """The gate's test processes would each compile every kernel their tests launch; compiled first on every core, each
    is compiled once, into the cache the tests then load from."""
    monkeypatch.setattr(bench_stage, 'local_gpu', lambda: Gpu('NVIDIA H100', (9, 0), 80 * 2**30))
    monkeypatch.setenv('TRITON_CACHE_DIR', str(tmp_path / 'triton'))
    repo.commit(files(BASELINE_DELAY))
    monkeypatch.chdir(repo.root)
    code, _, err = _loop(capsys, 'start', '--op', 'product', '--shapes', 'small', '--rounds', '3')
    assert code == 0
    lines = err.splitlines()
    compiled = next(i for i, line in enumerate(lines) if 'compiled ahead' in line)
    said = re.fullmatch(r'gate: (\d+) kernel launches compiled ahead for sm_90 in \d+ s '
                        r'\(\d+ s of it capturing them\), \d+ at a time', lines[compiled])
    assert said and lines[compiled + 1].startswith('[1/1] tests/ops/test_product.py')
    # one binary per launch the gate makes, where a launch on the GPU looks it up
    binaries = [entry for entry in (tmp_path / 'triton').iterdir() if (entry / 'product_kernel.cubin').exists()]
    assert len(binaries) == int(said.group(1)) > 0


def test_a_gate_whose_kernels_cannot_be_compiled_ahead_runs_all_the_same(repo, monkeypatch, capsys, stand_in_gpu):
    """Compiling ahead only saves time: where it fails, the gate's tests compile what they launch, as before."""
    from mrbot.compile import matrix

    def broken(*args, **kwargs):
        raise MrbotError('lib/other.py:5: TARGETS declares the targets a module is written for')

    monkeypatch.setattr(bench_stage, 'local_gpu', lambda: Gpu('NVIDIA H100', (9, 0), 80 * 2**30))
    monkeypatch.setattr(matrix, 'build_matrix', broken)
    repo.commit(files(BASELINE_DELAY))
    monkeypatch.chdir(repo.root)
    code, out, err = _loop(capsys, 'start', '--op', 'product', '--shapes', 'small', '--rounds', '3')
    assert code == 0 and 'loop 1 of product started' in out
    assert ('gate: kernels not compiled ahead (MrbotError: lib/other.py:5: TARGETS declares the targets a module is '
            'written for); the tests compile them') in err.splitlines()
    assert 'gate passed' in err


def test_a_try_stopped_while_timing_is_kept_and_its_kernels_stay_compiled(repo, monkeypatch, capsys, stand_in_gpu):
    """A GPU machine's time limit stops a try after its gate: the try is in the record with the gate it passed, which
    stands when the same files are tried again on the same device, and neither side compiles in a folder of its own
    try: the baseline's kernels are compiled once for the loop, the candidate's once however often it is tried."""
    repo.commit(files(BASELINE_DELAY))
    monkeypatch.chdir(repo.root)
    assert _loop(capsys, 'start', '--op', 'product', '--shapes', 'small', '--rounds', '3', '-q')[0] == 0
    gated = []
    run_gate = bench_stage.execute_with_progress
    monkeypatch.setattr(bench_stage, 'execute_with_progress', lambda files, *a, **k: gated.append(files) or run_gate(
        files, *a, **k))
    interleave = bench_stage.interleave

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_stage, 'interleave', stopped)
    repo.write({CHUNK: _kernel(BASELINE_DELAY / 2)})
    code, _, err = _loop(capsys, 'try', '-q', '--note', 'half the delay')
    repo.git('checkout', '-q', '--', '.')
    assert code == 130 and err.endswith('stopped before the first round finished: nothing timed to keep; kept as try '
                                        '1 (interrupted)\n')
    status = json.loads(_loop(capsys, 'status', '--format', 'json')[1])
    (stopped_try,) = status['tries']
    assert (stopped_try['verdict'], stopped_try['gate']) == ('interrupted', 'passed')
    assert stopped_try['reasons'][0]['message'].startswith('the gate passed, then the timing stopped: ')

    monkeypatch.setattr(bench_stage, 'interleave', interleave)
    code, out, _ = _loop(capsys, 'try', '-q', '--commit', stopped_try['sha'], '--note', 'half the delay, timed')
    assert code == 0 and 'try 2' in out and ': faster' in out
    # the machine's time went to timing: the gate these files passed on this device did not run again
    assert gated == [['tests/ops/test_product.py']]
    assert [t['gate'] for t in json.loads(_loop(capsys, 'status', '--format', 'json')[1])['tries']] == ['passed'] * 2
    # one compile cache per tree, in the loop's repository, none in a try's checkout
    trees = {repo.git('rev-parse', f'{sha}^{{tree}}')[:12] for sha in ('HEAD', stopped_try['sha'])}
    assert {p.name for p in (repo.root / '.mrbot' / 'bench').iterdir()} == trees
    assert not list((repo.root / '.mrbot' / 'worktrees').glob('*/.mrbot/bench'))


def test_the_baseline_is_timed_from_its_own_files_whatever_a_try_left_in_its_checkout(repo, monkeypatch, capsys,
                                                                                      stand_in_gpu):
    """The baseline's checkout is kept for the loop, and a candidate's code runs as the same user: a file it changed
    or planted there is gone before the baseline is timed again."""
    repo.commit(files(BASELINE_DELAY))
    monkeypatch.chdir(repo.root)
    assert _loop(capsys, 'start', '--op', 'product', '--shapes', 'small', '--rounds', '3', '-q')[0] == 0
    assert _try(repo, capsys, {CHUNK: _kernel(BASELINE_DELAY / 2)}, 'half the delay')[0] == 0
    (base,) = [p for p in (repo.root / '.mrbot' / 'worktrees').iterdir()
               if (p / CHUNK).read_text() == _kernel(BASELINE_DELAY)]
    (base / CHUNK).write_text(_kernel(BASELINE_DELAY * 4))
    (base / 'sitecustomize.py').write_text('import time\ntime.sleep(1)\n')
    code, out = _try(repo, capsys, {CHUNK: _kernel(BASELINE_DELAY / 2, **{'    n = x.numel()\n': '    n = x.numel()  '
                                                                           '# the element count\n'})}, 'a comment')
    # against a baseline four times slower the candidate would be held as implausibly fast
    assert code == 0 and ': faster' in out, out
    assert (base / CHUNK).read_text() == _kernel(BASELINE_DELAY) and not (base / 'sitecustomize.py').exists()


def test_a_plan_keeps_its_dispatch_and_variables_and_reads_older_plans():
    """A loop over a backend gates and times it as served, and its claim's commands say how."""
    plan = Plan('product', ('small',), ('fwd',), 5, 0.02, 2, 'on', parse_environment(['PKG_FAST=1']))
    assert Plan.from_json(JsonObject.parse(json.dumps(plan.to_json()), 'store', 'plan')) == plan
    request = plan.request('abc', ('mrbot', 'loop', 'try'))
    assert request.dispatch == 'on' and request.environment == (('PKG_FAST', '1'),)
    assert plan.bench_command('0123456789abcdef').endswith('--rounds 5 --dispatch on --env PKG_FAST=1')
    older = {'op': 'product', 'shapes': [], 'modes': ['fwd'], 'rounds': 5, 'min_effect': 0.02}
    assert Plan.from_json(JsonObject.parse(json.dumps(older), 'store', 'plan')) == Plan('product', (), ('fwd',), 5, 0.02, 1)


BASE = 'a' * 40
H100 = {'gpu': 'NVIDIA H100 80GB HBM3', 'class': 'sm_90 baseline', 'driver': '570.86', 'cuda': '12.8', 'torch': '2.9.1',
        'triton': '3.6.0', 'evidence': True,
        'clocks': {'sm_clock_start': '1980 MHz', 'sm_clock_end': '1755 MHz', 'memory_clock_start': '2619 MHz'},
        'ceilings': {'copy_tbs': 2.9, 'bf16_tflops': 650}}
# A claim and a no-go as the store holds them, written by the mrbot before outcomes were records.
STORED_CLAIM = {
    'kind': 'claim', 'loop': 1, 'op': 'product', 'baseline_sha': BASE, 'candidate_sha': 'c' * 40, 'try': 2,
    'remeasure': 3, 'note': 'half the delay', 'speedup': 1.9371, 'rounds': 5,
    'gate': {'test_files': ['tests/ops/test_product.py'], 'frozen_ok': True, 'partial': False, 'changed_contract': [],
             'status': 'passed', 'seconds': 3.5, 'pytest_args': [], 'reused': [], 'failures': []},
    'rows': [{'op': 'product', 'mode': 'fwd', 'shape': 'small',
              'baseline': {'median': 0.121, 'mean': 0.1234, 'std': 0.004, 'min': 0.119, 'p10': 0.1195, 'p90': 0.1288},
              'candidate': {'median': 0.0625, 'mean': 0.063, 'std': 0.0011, 'min': 0.0619, 'p10': 0.062, 'p90': 0.0644},
              'speedup': 1.936, 'ratio': 0.5165, 'ci': [0.49, 0.54], 'verdict': 'faster',
              'baseline_rates': {'tbs': 0.0521, 'tbs_of_ceiling': 0.018, 'tflops': 2, 'tflops_of_ceiling': 0.003},
              'candidate_rates': {'tbs': 0.1008, 'tbs_of_ceiling': 0.035, 'tflops': 3.9, 'tflops_of_ceiling': 0.006},
              'flags': []}],
    'machine': H100,
    'commands': ['mrbot loop start --op product --modes fwd --shapes small --rounds 5  # at aaaaaaaaaaaa',
                 'git checkout cccccccccccc && mrbot bench --op product --base aaaaaaaaaaaa --modes fwd --shapes small '
                 '--rounds 5', 'mrbot loop promote 2'],
    'attempts': [{'number': 1, 'sha': 'b' * 40, 'note': 'no poisoning', 'verdict': 'refused', 'gate': 'not run',
                  'speedup': None, 'reasons': ['LOOP001 tests/conftest.py:12: the frozen contract changed']},
                 {'number': 2, 'sha': 'c' * 40, 'note': 'half the delay', 'verdict': 'faster', 'gate': 'passed',
                  'speedup': 1.9402, 'reasons': []}]}
STORED_NO_GO = {
    'kind': 'no-go', 'loop': 2, 'op': 'scale', 'baseline_sha': BASE, 'bound': 'memory-bound: one read, one write',
    'baseline': [{'mode': 'fwd', 'shape': 'small', 'median': 0.061, 'mean': 0.0615, 'std': 0.0009, 'min': 0.0601,
                  'p10': 0.0604, 'p90': 0.0627, 'rates': {}}],
    'machine': {**H100, 'gpu': 'cpu', 'class': 'cpu', 'driver': '-', 'cuda': None, 'evidence': False, 'clocks': {},
                'ceilings': None},
    'attempts': [{'number': 1, 'sha': 'd' * 40, 'note': '', 'verdict': 'noisy', 'gate': 'passed', 'speedup': 1.004,
                  'reasons': []}],
    'best': {'try': 1, 'rows': [{'op': 'scale', 'mode': 'fwd', 'shape': 'small',
                                 'baseline': {'median': 0.061, 'mean': 0.0615, 'std': 0.0009, 'min': 0.0601,
                                              'p10': 0.0604, 'p90': 0.0627},
                                 'candidate': {'median': 0.0608, 'mean': 0.0611, 'std': 0.0012, 'min': 0.0597,
                                               'p10': 0.06, 'p90': 0.0629},
                                 'speedup': 1.0033, 'ratio': None, 'ci': [None, None], 'verdict': 'noisy',
                                 'baseline_rates': {}, 'candidate_rates': {}, 'flags': ['unstable']}]},
    'commands': ['mrbot loop start --op scale --modes fwd --shapes small --rounds 5  # at aaaaaaaaaaaa',
                 'git checkout dddddddddddd && mrbot bench --op scale --base aaaaaaaaaaaa --modes fwd --shapes small '
                 '--rounds 5']}
# Their markdown as that mrbot printed it.
CLAIM_MARKDOWN = """\
### Optimization loop 1 of `product`: 1.937x (equal-weight geomean)

Try 2 (`cccccccccc`, half the delay) against the baseline `aaaaaaaaaa`, re-measured in a fresh run of 5 interleaved \
rounds (stored as try 3); full gate passed (tests/ops/test_product.py, no `-k`).

| mode | shape | side | median ms | mean | std | min | p10 | p90 | speed-up | 95% CI of the ratio | rates |
| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |
| fwd | small | baseline | 0.1210 | 0.1234 | 0.0040 | 0.1190 | 0.1195 | 0.1288 | | | 0.05 TB/s (2% of copy), 2.0 \
TFLOP/s (0% of bf16 matmul) |
| | | candidate | 0.0625 | 0.0630 | 0.0011 | 0.0619 | 0.0620 | 0.0644 | 1.936x | 0.490-0.540 (faster) | 0.10 TB/s \
(4% of copy), 3.9 TFLOP/s (1% of bf16 matmul) |

Measured on **NVIDIA H100 80GB HBM3** (sm_90 baseline), driver 570.86, CUDA 12.8, torch 2.9.1, triton 3.6.0; SM clock \
1980 MHz at start and 1755 MHz at end, memory clock 2619 MHz / -.


Every attempt:

| try | commit | verdict | gate | speed-up | note |
| ---: | --- | --- | --- | ---: | --- |
| 1 | `bbbbbbbbbb` | refused: LOOP001 tests/conftest.py:12: the frozen contract changed | not run | - | no poisoning |
| 2 | `cccccccccc` | faster | passed | 1.940x | half the delay |

Commands:
- `mrbot loop start --op product --modes fwd --shapes small --rounds 5  # at aaaaaaaaaaaa`
- `git checkout cccccccccccc && mrbot bench --op product --base aaaaaaaaaaaa --modes fwd --shapes small --rounds 5`
- `mrbot loop promote 2`
"""
NO_GO_MARKDOWN = """\
### Optimization loop 2 of `scale`: no-go

Bound: memory-bound: one read, one write

Baseline `aaaaaaaaaa`:

| mode | shape | median ms | mean | std | min | p10 | p90 | rates |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |
| fwd | small | 0.0610 | 0.0615 | 0.0009 | 0.0601 | 0.0604 | 0.0627 |  |

Best timed attempt with a green gate, try 1: fwd small 1.003x (noisy).

Measured on **cpu** (cpu), driver -, CUDA -, torch 2.9.1, triton 3.6.0. **Not evidence**: timed under the Triton \
interpreter, without a GPU.

Every attempt:

| try | commit | verdict | gate | speed-up | note |
| ---: | --- | --- | --- | ---: | --- |
| 1 | `dddddddddd` | noisy | passed | 1.004x | - |

Commands:
- `mrbot loop start --op scale --modes fwd --shapes small --rounds 5  # at aaaaaaaaaaaa`
- `git checkout dddddddddddd && mrbot bench --op scale --base aaaaaaaaaaaa --modes fwd --shapes small --rounds 5`
"""


def _store_ended_loop(store: Store, outcome: dict) -> None:
    """An ended loop with `outcome` as an earlier mrbot wrote the row: its JSON columns as text."""
    plan = Plan(outcome['op'], ('small',), ('fwd',), 5, 0.02, 1)
    store.connection.execute(
        'INSERT INTO loops (op, started, baseline_sha, contract, request, state, ended, outcome) VALUES '
        "(?, 'now', ?, ?, ?, ?, 'now', ?)",
        (outcome['op'], BASE, json.dumps(Contract({}, {}).to_json()), json.dumps(plan.to_json()),
         'promoted' if outcome['kind'] == 'claim' else 'no-go', json.dumps(outcome)))


def test_an_outcome_stored_by_an_earlier_mrbot_reads_back_and_renders_as_it_did(repo, monkeypatch, capsys):
    repo.commit({'a.txt': 'a\n'})
    monkeypatch.chdir(repo.root)
    with Store.open(repo.root) as store:
        for outcome in (STORED_CLAIM, STORED_NO_GO):
            _store_ended_loop(store, outcome)
        outcomes = [Loop.from_row(row).outcome for row in store.loops()]
    assert [type(o) for o in outcomes] == [Claim, NoGo]
    assert [json.dumps(o.to_json()) for o in outcomes] == [json.dumps(STORED_CLAIM), json.dumps(STORED_NO_GO)]
    assert _loop(capsys, 'claim', '--op', 'product') == (0, CLAIM_MARKDOWN, '')
    assert _loop(capsys, 'claim', '--op', 'scale') == (0, NO_GO_MARKDOWN, '')
    # the PR body of a change carries them as the Evidence file holds them
    change = ChangeSummary(BASE, 'WORKTREE', 'main', '[Perf] Half the delay', 'flag', (), (), (), ())
    record = Evidence('2026-01-01T00:00:00+00:00', 'cpu', change, loops=outcomes,
                      steps=[Step(name, 'skipped') for name in ('select', 'compile', 'check', 'tests', 'breaking')])
    record.conclusion, record.checklist = conclusion(record), checklist(record)
    assert record.to_json()['loops'] == [STORED_CLAIM, STORED_NO_GO]
    assert f'\n\n{CLAIM_MARKDOWN}\n{NO_GO_MARKDOWN}' in render_body(record, repo.root, load_config(repo.root))


def test_a_malformed_stored_outcome_is_one_error_naming_its_field(repo, monkeypatch, capsys):
    repo.commit({'a.txt': 'a\n'})
    monkeypatch.chdir(repo.root)
    with Store.open(repo.root) as store:
        _store_ended_loop(store, {**STORED_CLAIM, 'rows': [{**STORED_CLAIM['rows'][0], 'ci': [0.49]}]})
    assert _loop(capsys, 'claim') == (2, '', 'mrbot loop: error: history.sqlite3: loops[1].outcome.rows[0].ci: expected '
                                             'a list of two numbers or nulls, got a list\n')


def test_prepare_reads_the_outcomes_of_the_touched_ops_only(repo, monkeypatch):
    # BASE is not in this repository, so the touched op's claim does not apply; the other op's would not even read
    repo.commit({'a.txt': 'a\n'})
    with Store.open(repo.root) as store:
        _store_ended_loop(store, STORED_CLAIM)
        _store_ended_loop(store, {**STORED_CLAIM, 'op': 'other', 'rows': [{**STORED_CLAIM['rows'][0], 'ci': [0.49]}]})
    assert loop_outcomes(repo.root, ['product']) == []
    with pytest.raises(MrbotError, match=r'loops\[2\]\.outcome\.rows\[0\]\.ci'):
        loop_outcomes(repo.root, ['other'])
