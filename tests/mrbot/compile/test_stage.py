# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""`mrbot compile` and `mrbot check` on a small kernel library: what passes under the interpreter and cannot compile."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from mrbot.cli import main
from mrbot.compile.launches import Launch, compile_environment
from mrbot.compile.matrix import _cell_key, quick_cells
from mrbot.targets import TARGETS

HEADER = '# Copyright (c) 2026, the mrbot authors.\n# SPDX-License-Identifier: MIT\n'
PYPROJECT = '[tool.mrbot]\nsource-roots = ["lib"]\n'
CONFTEST = HEADER + textwrap.dedent('''
    import os

    os.environ.setdefault('TRITON_INTERPRET', '1')
''')
# A sum whose loop re-assigns `_` (an int from the unpacking) with a mask: fine in the interpreter, a type error when
# compiled. And a matrix square whose second autotune config needs 512 KiB of shared memory.
OPS = HEADER + textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def total_kernel(x, y, n, BLOCK: tl.constexpr):
        i_b, _ = tl.program_id(0), 0
        b_acc = tl.zeros([BLOCK], dtype=tl.float32)
        for i_start in range(0, n, BLOCK):
            o_x = i_start + tl.arange(0, BLOCK)
            _ = o_x < n
            b_acc += tl.load(x + o_x, mask=_, other=0)
        tl.store(y + i_b, tl.sum(b_acc))


    def total(x: torch.Tensor) -> torch.Tensor:
        y = torch.zeros(1, dtype=torch.float32)
        total_kernel[(1,)](x, y, x.numel(), BLOCK=32)
        return y


    @triton.autotune(configs=[triton.Config({'BLOCK': 32}), triton.Config({'BLOCK': 256})], key=['n'])
    @triton.jit
    def square_kernel(x, y, n, BLOCK: tl.constexpr):
        o_i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        o_j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        b_y = tl.zeros([BLOCK, BLOCK], dtype=tl.float32)
        for i_k in range(0, n, BLOCK):
            o_k = i_k + tl.arange(0, BLOCK)
            b_y += tl.dot(tl.load(x + o_i[:, None] * n + o_k[None, :]), tl.load(x + o_k[:, None] * n + o_j[None, :]))
        tl.store(y + o_i[:, None] * n + o_j[None, :], b_y)


    def square(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        square_kernel[lambda meta: (x.shape[0] // meta['BLOCK'], x.shape[0] // meta['BLOCK'])](x, y, x.shape[0])
        return y
''')
TESTS = HEADER + textwrap.dedent('''
    import torch

    from lib.ops import square, total


    def test_total():
        x = torch.arange(100, dtype=torch.float32)
        assert total(x).item() == x.sum().item()


    def test_square():
        square(torch.ones(256, 256))
''')


@pytest.fixture
def library(repo, monkeypatch):
    repo.commit({'pyproject.toml': PYPROJECT, 'lib/__init__.py': HEADER, 'tests/conftest.py': CONFTEST}, '[Test] Base')
    repo.write({'lib/ops.py': OPS, 'tests/test_ops.py': TESTS})
    monkeypatch.chdir(repo.root)
    return repo


def _line(text: str, code: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if code in line)


def test_the_loop_carried_type_change_passes_under_the_interpreter(library):
    done = subprocess.run([sys.executable, '-m', 'pytest', 'tests/test_ops.py::test_total', '-q', '-p', 'no:cacheprovider'],
                          cwd=library.root, env={**os.environ, 'TRITON_INTERPRET': '1'}, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_compile_reports_the_type_change_and_the_config_over_shared_memory(library, capsys):
    assert main(['compile', '--all', '--targets', 'sm_90', '--format', 'json']) == 1
    report = json.loads(capsys.readouterr().out)
    findings = {f['rule']: f for f in report['findings']}
    assert sorted(findings) == ['CMP001', 'CMP002']
    loop_carried = findings['CMP001']
    # Triton points at the loop that carries the variable
    assert (loop_carried['path'], loop_carried['line']) == ('lib/ops.py', _line(OPS, 'for i_start in range'))
    assert loop_carried['message'].startswith(f"total_kernel (lib/ops.py:{_line(OPS, 'def total_kernel')}) does not "
                                              'compile for sm_90 with Triton ')
    assert 'Loop-carried variable _ has initial type int32' in loop_carried['message']
    over = findings['CMP002']
    assert (over['path'], over['line']) == ('lib/ops.py', _line(OPS, 'def square_kernel'))
    assert 'shared memory per block on sm_90, over its 232,448: 1 of 2 specializations, e.g. BLOCK=256' in over['message']
    assert 'launched by tests/test_ops.py::test_square' in over['message']
    cells = report['compile']['cells']
    assert {(c['kernel'], c['launch']['config_index'], c['status']) for c in cells} == {
        ('total_kernel', 0, 'error'), ('square_kernel', 0, 'ok'), ('square_kernel', 1, 'ok')}


def test_a_warm_rerun_compiles_nothing_and_a_changed_kernel_only_itself(library, capsys):
    main(['compile', '--all', '--targets', 'sm_90'])
    capsys.readouterr()
    assert main(['compile', '--all', '--targets', 'sm_90', '--format', 'json']) == 1
    assert [c['cached'] for c in json.loads(capsys.readouterr().out)['compile']['cells']] == [True, True, True]
    library.write({'lib/ops.py': OPS.replace('_ = o_x < n', 'm_x = o_x < n').replace('mask=_', 'mask=m_x')})
    assert main(['compile', '--all', '--targets', 'sm_90', '--format', 'json']) == 1
    cells = json.loads(capsys.readouterr().out)['compile']['cells']
    assert sorted((c['kernel'], c['status'], c['cached']) for c in cells) == [
        ('square_kernel', 'ok', True), ('square_kernel', 'ok', True), ('total_kernel', 'ok', False)]


@pytest.mark.parametrize('jobs', [2, 1], ids=['a-core-left', 'every-core-capturing'])
def test_each_launch_compiles_once_and_while_the_capture_runs_where_a_core_is_left(library, monkeypatch, jobs):
    """With a core the capture does not take, the first test's kernel compiles while the file's later test still runs
    (that test waits for the first compile to start); with every core capturing, nothing compiles before the capture
    ends. Either way each cell compiles once, though the capture hands it in as it runs and again at its end."""
    from mrbot.compile import processes
    from mrbot.compile.stage import compile_change
    from mrbot.repo.workspace import Workspace

    library.write({'tests/test_waits.py': HEADER + textwrap.dedent('''
        import os
        import time

        import torch

        from lib.ops import total


        def test_total():
            total(torch.arange(100, dtype=torch.float32))


        def test_waits_for_a_compile():
            deadline = time.monotonic() + float(os.environ['WAIT_SECONDS'])
            while not os.path.exists('compiling.txt') and time.monotonic() < deadline:
                time.sleep(0.1)
            with open('seen.txt', 'w') as out:
                out.write(str(os.path.exists('compiling.txt')))
    ''')})
    (library.root / 'tests/test_ops.py').unlink()
    monkeypatch.setenv('WAIT_SECONDS', '60' if jobs == 2 else '3')
    compiled = []
    compile_cell = processes.Worker.compile

    def counted(worker, request, timeout):
        compiled.append(request['launch']['kernel'])
        (library.root / 'compiling.txt').write_text('yes')
        return compile_cell(worker, request, timeout)

    monkeypatch.setattr(processes.Worker, 'compile', counted)
    matrix = compile_change(Workspace.load(library.root), ['lib/ops.py'], 'sm_90', depth='ttgir', jobs=jobs,
                            quiet=True)
    assert (library.root / 'seen.txt').read_text() == str(jobs == 2)
    assert [(cell.launch.kernel, cell.result.status, cell.result.cached) for cell in matrix.cells] == [
        ('total_kernel', 'error', False)]
    assert compiled == ['total_kernel']


def test_a_worktree_of_compiled_files_compiles_nothing_where_its_homes_caches_serve(library):
    """A loop compiles each try in a worktree of the try's commit; a try of files compiled before (one a machine's time
    limit stopped, run again) finds every launch and cell in the checkout's caches."""
    from mrbot import git
    from mrbot.compile.stage import compile_change
    from mrbot.repo.workspace import Workspace

    library.commit({}, '[Test] Kernels')
    compile_change(Workspace.load(library.root), None, 'sm_90', quiet=True)
    tree = Workspace.load(git.pristine_worktree(library.root, library.git('rev-parse', 'HEAD')))
    served = compile_change(tree, None, 'sm_90', quiet=True, home=library.root)
    assert served.capture.cached and [c.result.cached for c in served.cells] == [True, True, True]
    # the worktree's own caches, empty, would have compiled everything again
    alone = compile_change(tree, None, 'sm_90', quiet=True)
    assert not alone.capture.cached and not any(c.result.cached for c in alone.cells)


# A GPU launch as far as Triton's compile path can tell without one: a stand-in driver answers for an H100, so the launch
# compiles (or finds its binary in the cache), then stops where it would load the binary.
GPU_LAUNCH = textwrap.dedent('''
    import torch
    import triton

    from mrbot.compile.capture import _StandInDriver

    triton.runtime.driver.set_active(_StandInDriver())
    from lib.ops import total

    try:
        total(torch.arange(100, dtype=torch.float32))
    except AttributeError as stopped:
        print('stopped at loading:', stopped)
''')


def _entries(folder) -> set[str]:
    return {entry.name for entry in folder.iterdir()} if folder.exists() else set()


def test_a_binary_compile_leaves_the_entries_a_gpu_launch_looks_up(library, capsys, monkeypatch, tmp_path):
    library.write({'lib/ops.py': OPS.replace('_ = o_x < n', 'm_x = o_x < n').replace('mask=_', 'mask=m_x')})
    warmed, launched = tmp_path / 'warmed', tmp_path / 'launched'
    monkeypatch.setenv('TRITON_CACHE_DIR', str(warmed))
    main(['compile', '--all', '--targets', 'sm_90', '--depth', 'binary', '--format', 'json'])
    cells = json.loads(capsys.readouterr().out)['compile']['cells']
    assert {(c['kernel'], c['status'], c['depth']) for c in cells} == {('total_kernel', 'ok', 'binary'),
                                                                        ('square_kernel', 'ok', 'binary')}
    assert len(_entries(warmed)) == 3
    for cache in (warmed, launched):
        done = subprocess.run([sys.executable, '-c', GPU_LAUNCH], cwd=library.root, capture_output=True, text=True,
                              env={**os.environ, 'TRITON_INTERPRET': '0', 'TRITON_CACHE_DIR': str(cache),
                                   'PYTHONPATH': str(library.root)})
        assert 'stopped at loading' in done.stdout, done.stderr[-2000:]
    # the launch found its binary among the compiled ones and compiled nothing; alone, it makes one of those entries
    assert len(_entries(warmed)) == 3 and len(_entries(launched)) == 1 and _entries(launched) < _entries(warmed)
    # what a binary compile makes is Triton's cache, so a second run compiles again what that cache lost
    shutil.rmtree(warmed)
    main(['compile', '--all', '--targets', 'sm_90', '--depth', 'binary', '--format', 'json'])
    assert not any(c['cached'] for c in json.loads(capsys.readouterr().out)['compile']['cells'])
    assert len(_entries(warmed)) == 3


def test_check_reports_what_the_change_does_not_compile(library, capsys):
    assert main(['check', '--base', 'HEAD', '--title', '[Ops] Add total and square', '--format', 'json']) == 1
    rules = {f['rule'] for f in json.loads(capsys.readouterr().out)['findings']}
    assert {'CMP001', 'CMP002'} <= rules


def test_check_shows_the_fast_findings_while_the_kernels_compile(library, capsys, monkeypatch):
    from mrbot.compile import stage

    compile_change, seen = stage.compile_change, []

    def compile_once_they_show(*args, **kwargs):
        # a compile that ends only after the fast findings are out: they cannot be waiting for it
        shown, deadline = '', time.monotonic() + 30
        while 'MR-TITLE' not in shown and time.monotonic() < deadline:
            time.sleep(0.05)
            shown += capsys.readouterr().out
        seen.append(shown)
        return compile_change(*args, **kwargs)

    monkeypatch.setattr(stage, 'compile_change', compile_once_they_show)
    assert main(['check', '--base', 'HEAD', '--title', 'add total and square']) == 1
    after = capsys.readouterr().out
    assert 'MR-TITLE' in seen[0] and 'CMP001' not in seen[0]
    assert 'CMP001' in after and 'MR-TITLE' not in after
    # the summary at the end counts the findings shown before the compile too
    assert after.splitlines()[-1].startswith('5 errors in 2 changed files')


def test_a_compiler_that_aborts_costs_only_its_cell(library, capsys):
    # stands in for a compiler assertion: the module aborts the compile process that imports it
    crashing = HEADER + textwrap.dedent('''
        import os
        import sys

        import triton
        import triton.language as tl

        if sys.argv[0].endswith('worker.py'):
            os.abort()


        @triton.jit
        def copy_kernel(x, y):
            tl.store(y, tl.load(x))
    ''')
    library.write({'lib/crash.py': crashing, 'tests/test_crash.py': HEADER + textwrap.dedent('''
        import torch

        from lib.crash import copy_kernel


        def test_copy():
            copy_kernel[(1,)](torch.ones(1), torch.zeros(1))
    ''')})
    assert main(['compile', '--all', '--targets', 'sm_90', '--format', 'json']) == 1
    report = json.loads(capsys.readouterr().out)
    crash = next(f for f in report['findings'] if 'copy_kernel' in f['message'])
    assert crash['rule'] == 'CMP001'
    assert 'the compiler aborted (SIGABRT)' in crash['message']
    assert {c['kernel']: c['status'] for c in report['compile']['cells'] if c['kernel'] != 'total_kernel'} == {
        'copy_kernel': 'crashed', 'square_kernel': 'ok'}


def test_an_unknown_target_is_one_line_naming_the_known(library, capsys):
    assert main(['compile', '--all', '--targets', 'sm_91']) == 2
    assert capsys.readouterr().err.strip() == ("mrbot compile: error: --targets: unknown target 'sm_91'; expected some "
                                               'of sm_80, sm_86, sm_89, sm_90, sm_100, sm_103, sm_120')


def test_the_captured_tests_see_no_credential(library, monkeypatch, capsys):
    monkeypatch.setenv('GITHUB_TOKEN', 'ghs_secret')
    monkeypatch.setenv('CI_JOB_TOKEN', 'glcbt-secret')
    library.write({'tests/test_environment.py': HEADER + textwrap.dedent('''
        import os
        from pathlib import Path

        import lib.ops


        def test_record_the_environment():
            names = sorted(name for name in os.environ if 'TOKEN' in name)
            Path('seen.txt').write_text(' '.join(names) or 'none')
    ''')})
    main(['compile', '--all', '--targets', 'sm_90'])
    assert (library.root / 'seen.txt').read_text() == 'none'


def test_a_test_past_its_seconds_is_stopped_and_its_launches_kept(library, capsys):
    library.write({'pyproject.toml': PYPROJECT + 'compile-test-seconds = 2\n',
                   'tests/test_slow.py': HEADER + textwrap.dedent('''
        import time

        import torch

        from lib.ops import total


        def test_then_wait():
            total(torch.arange(100, dtype=torch.float64))
            time.sleep(120)
    ''')})
    started = time.monotonic()
    main(['compile', '--all', '--targets', 'sm_90', '--format', 'json'])
    assert time.monotonic() - started < 90
    report = json.loads(capsys.readouterr().out)['compile']
    assert report['capture']['problems'] == ['1 test stopped after 2 s each, their launches until then kept: '
                                             'tests/test_slow.py::test_then_wait']
    slow = [cell for cell in report['cells'] if 'tests/test_slow.py::test_then_wait' in cell['launch']['origins']]
    assert [(cell['kernel'], cell['launch']['signature']['x']) for cell in slow] == [('total_kernel', '*fp64')]


def test_what_the_repository_prints_cannot_garble_the_answers(library, capsys):
    library.write({'lib/ops.py': OPS.replace('import torch\n', 'import torch\n\nprint(\'{"status": "ok"}\')\n', 1)})
    assert main(['compile', '--all', '--targets', 'sm_90', '--format', 'json']) == 1
    report = json.loads(capsys.readouterr().out)
    assert {(c['kernel'], c['status']) for c in report['compile']['cells']} == {('total_kernel', 'error'),
                                                                              ('square_kernel', 'ok')}


def test_a_crash_is_compiled_again_on_the_next_run(library, capsys):
    library.write({'lib/ops.py': OPS.replace('import torch\n', "import torch\nimport os, sys\nif sys.argv[0].endswith("
                                             "'worker.py'):\n    os.abort()\n", 1)})
    for _ in range(2):
        main(['compile', '--all', '--targets', 'sm_90', '--format', 'json'])
        cells = json.loads(capsys.readouterr().out)['compile']['cells']
        assert {(c['status'], c['cached']) for c in cells} == {('crashed', False)}


def test_what_a_test_writes_where_the_capture_writes_is_ignored_and_said(library, capsys):
    library.write({'tests/test_scribble.py': HEADER + textwrap.dedent('''
        import os
        from pathlib import Path

        import lib.ops


        def test_scribble():
            folder = Path(os.environ['MRBOT_CAPTURE_DIR'])
            (folder / 'launches-0.jsonl').write_text('{"kernel": \\n[1, 2]\\n{"kernel": "x"}\\n')
    ''')})
    assert main(['compile', '--all', '--targets', 'sm_90', '--format', 'json']) == 1
    problems = json.loads(capsys.readouterr().out)['compile']['capture']['problems']
    assert problems == ["3 launch records in the capture's files ignored: not what the capture writes"]


def test_a_data_file_a_test_reads_is_part_of_what_the_capture_remembers(library, capsys):
    library.write({'tests/sizes.json': '[32]', 'tests/test_sized.py': HEADER + textwrap.dedent('''
        import json
        from pathlib import Path

        import torch

        from lib.ops import total_kernel


        def test_sized():
            block = json.loads((Path(__file__).parent / 'sizes.json').read_text())[0]
            total_kernel[(1,)](torch.ones(8), torch.zeros(1), 8, BLOCK=block)
    ''')})
    blocks = []
    for size in (32, 64):
        library.write({'tests/sizes.json': f'[{size}]'})
        main(['compile', '--all', '--targets', 'sm_90', '--format', 'json'])
        cells = json.loads(capsys.readouterr().out)['compile']['cells']
        blocks.append(sorted(c['launch']['constant_vals'][-1] for c in cells if c['kernel'] == 'total_kernel'))
    assert blocks == [[32], [32, 64]]


def test_a_repository_option_that_stops_at_the_first_failure_does_not_cut_the_capture(library, capsys):
    library.write({'pyproject.toml': PYPROJECT + '[tool.pytest.ini_options]\naddopts = "-x"\n'})
    main(['compile', '--all', '--targets', 'sm_90', '--format', 'json'])
    cells = json.loads(capsys.readouterr().out)['compile']['cells']
    assert {c['kernel'] for c in cells} == {'total_kernel', 'square_kernel'}


def test_a_process_a_test_leaves_running_is_ended(library, capsys, tmp_path):
    alive = tmp_path / 'alive'
    library.write({'tests/test_linger.py': HEADER + textwrap.dedent(f'''
        import subprocess
        import sys


        def test_linger():
            subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3); open({str(alive)!r}, "w").write("x")'])
    ''')})
    main(['compile', '--all', '--targets', 'sm_90'])
    time.sleep(5)
    assert not alive.exists()


def test_state_committed_under_dot_mrbot_is_refused(library, capsys):
    library.write({'.mrbot/cache/compile-cells.json': '{"schema": 1, "cells": {}}'})
    library.git('add', '-f', '.mrbot/cache/compile-cells.json')
    assert main(['compile', '--all', '--targets', 'sm_90']) == 2
    assert capsys.readouterr().err.startswith('mrbot compile: error: .mrbot/ holds files git tracks '
                                              '(.mrbot/cache/compile-cells.json, ...)')


def test_a_link_in_place_of_a_state_folder_is_refused_and_nothing_is_written_through_it(library, capsys, tmp_path):
    victim = tmp_path / 'victim'
    victim.mkdir()
    (victim / 'important.log').write_text('keep me')
    (library.root / '.mrbot' / 'compile').mkdir(parents=True)
    (library.root / '.mrbot' / 'compile' / 'capture').symlink_to(victim)
    assert main(['compile', '--all', '--targets', 'sm_90']) == 2
    assert capsys.readouterr().err.splitlines()[-1] == ('mrbot compile: error: .mrbot/compile/capture is a symbolic '
                                                        'link: mrbot keeps its state in a real folder there; remove the '
                                                        'link')
    assert [p.name for p in victim.iterdir()] == ['important.log']


def _sized(flag: bool, block: int, stages: int = 2) -> Launch:
    specialization = {'signature': {'x': '*fp32', 'USE_G': 'constexpr', 'BT': 'constexpr'},
                      'constant_keys': [[1], [2]], 'constant_vals': [flag, block], 'attrs_keys': [], 'attrs_vals': [],
                      'options': {'num_stages': stages}}
    return Launch('chunk_kernel', 'lib.ops', 'lib/ops.py', 10, 'hash', specialization)


def test_a_quick_compile_takes_each_code_path_at_its_smallest_and_largest_blocks():
    sm90 = TARGETS['sm_90']
    launches = [_sized(True, 64), _sized(True, 16), _sized(True, 32), _sized(False, 32), _sized(True, 128)]
    cached = _sized(True, 256)
    planned = [(launch, sm90, 'ttgir') for launch in [*launches, cached]]
    kept = quick_cells(planned, {_cell_key(cached, sm90, 'ttgir')})
    # what the cache holds costs nothing and stays; a path with one specialization keeps it
    assert sorted((launch.constants()['USE_G'], launch.constants()['BT']) for launch, _, _ in kept) == [
        (False, 32), (True, 16), (True, 256)]
    assert {depth for _, _, depth in kept} == {'ttgir'}
    # one block size in two configs: the one with more stages asks for more shared memory, and is the one compiled
    (kept,) = quick_cells([(launch, sm90, 'ttgir') for launch in (_sized(False, 32, 4), _sized(False, 32, 2))], set())
    assert kept[0].specialization['options'] == {'num_stages': 4}
    # on a later target only the largest blocks: what a target changes is the shared memory a block may have
    sm100 = TARGETS['sm_100']
    both = [(launch, target, 'ttgir') for launch in launches for target in (sm90, sm100)]
    assert sorted((target.name, launch.constants()['USE_G'], launch.constants()['BT'])
                  for launch, target, _ in quick_cells(both, set())) == [
        ('sm_100', False, 32), ('sm_100', True, 128), ('sm_90', False, 32), ('sm_90', True, 16), ('sm_90', True, 128)]


def test_check_compiles_an_edited_kernel_quickly_and_says_what_it_left(library, capsys):
    # three sizes of one kernel on one path: the middle one is left to `mrbot compile`
    ops = OPS.replace("triton.Config({'BLOCK': 256})", "triton.Config({'BLOCK': 64}), triton.Config({'BLOCK': 128})")
    library.write({'lib/ops.py': ops})
    assert main(['check', '--base', 'HEAD', '--title', '[Ops] Add total and square', '--format', 'json']) == 1
    report = json.loads(capsys.readouterr().out)
    left = ('1 specialization not compiled since the kernel changed, left to `mrbot compile`, which compiles every '
            "one: this check compiled each code path's smallest and largest blocks")
    assert left in report['notes']
    # a second check compiles nothing new and leaves the same
    cache = library.root / '.mrbot/cache/compile-cells.json'
    compiled = json.loads(cache.read_text())['cells']
    assert main(['check', '--base', 'HEAD', '--title', '[Ops] Add total and square', '--format', 'json']) == 1
    assert left in json.loads(capsys.readouterr().out)['notes']
    assert json.loads(cache.read_text())['cells'].keys() == compiled.keys()
    assert main(['compile', '--base', 'HEAD', '--targets', 'sm_90', '--format', 'json']) == 1
    assert len(json.loads(capsys.readouterr().out)['compile']['cells']) == 4


def test_a_compile_server_keeps_torch_imported_and_sees_each_edit(library, capsys, monkeypatch):
    from mrbot.compile import matrix, processes

    monkeypatch.setenv(processes.SERVER_SWITCH, '1')
    monkeypatch.setattr(processes, 'SERVER_IDLE_S', 20)
    assert main(['compile', '--all', '--targets', 'sm_90']) == 1
    assert 'a compile server stays' in capsys.readouterr().err
    address = processes.server_address(compile_environment())
    deadline = time.monotonic() + 60
    while not address.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    started = []
    popen = processes.subprocess.Popen
    monkeypatch.setattr(processes.subprocess, 'Popen', lambda command, **kwargs: started.append(command) or popen(command,
                                                                                                                **kwargs))
    # the fix of the loop-carried type: a server that had imported the kernels would still fail it
    library.write({'lib/ops.py': OPS.replace('_ = o_x < n', 'm_x = o_x < n').replace('mask=_', 'mask=m_x')})
    assert main(['compile', '--all', '--targets', 'sm_90', '--format', 'json']) == 1
    cells = json.loads(capsys.readouterr().out)['compile']['cells']
    assert [c['status'] for c in cells if c['kernel'] == 'total_kernel'] == ['ok']
    # no compile process was started: the server forked them
    assert [command for command in started if processes.worker_module.__file__ in command] == []
    # a repository moved away and put back changed at its path: the server's processes compile what the path holds
    moved = library.root.with_name('moved')
    library.root.rename(moved)
    shutil.copytree(moved, library.root, symlinks=True)
    (library.root / 'lib/ops.py').write_text(OPS.replace('b_acc', 'b_total'))
    monkeypatch.chdir(library.root)
    assert main(['compile', '--all', '--targets', 'sm_90', '--format', 'json']) == 1
    cells = json.loads(capsys.readouterr().out)['compile']['cells']
    assert [c['status'] for c in cells if c['kernel'] == 'total_kernel'] == ['error']
    assert [command for command in started if processes.worker_module.__file__ in command] == []
    # a server that was not there is not taken for one
    monkeypatch.setattr(matrix, 'server_address', lambda env: library.root / 'nothing.sock')
    library.write({'lib/ops.py': OPS.replace('b_acc', 'b_sum')})
    assert main(['compile', '--all', '--targets', 'sm_90']) == 1
    assert any(processes.worker_module.__file__ in command for command in started)


@pytest.mark.parametrize(('switch', 'terminal', 'ci', 'pythonpath', 'served'), [
    pytest.param('1', False, 'true', '/abs', True, id='forced-on'),
    pytest.param(None, True, None, None, True, id='a-terminal'),
    pytest.param(None, True, 'true', None, False, id='a-terminal-in-ci'),
    pytest.param(None, False, None, None, False, id='no-terminal'),
    pytest.param('false', True, None, None, False, id='any-other-value-is-off'),
    pytest.param('1', True, None, 'src', False, id='a-relative-pythonpath-entry'),
    pytest.param('1', True, None, '', False, id='an-empty-pythonpath-entry'),
])
def test_where_a_compile_server_may_serve(monkeypatch, switch, terminal, ci, pythonpath, served):
    from mrbot.compile import processes

    for name, value in ((processes.SERVER_SWITCH, switch), ('CI', ci)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.setattr(processes.sys.stderr, 'isatty', lambda: terminal)
    env = {'PATH': '/usr/bin'} if pythonpath is None else {'PATH': '/usr/bin', 'PYTHONPATH': pythonpath}
    assert (processes.server_address(env) is not None) == served
