# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The history store: whole writes only, even when a writer is killed mid-write; writers side by side; versions;
`mrbot bench --record` and `mrbot history`, its sparklines and its plot."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest

from mrbot import store as store_module
from mrbot.cli import main
from mrbot.history import sparkline
from mrbot.records.bench import BenchRow, BenchRun, Gate, Machine, Revision, Shape
from mrbot.records.reading import JsonObject
from mrbot.store import Store

ROOT = Path(__file__).resolve().parents[2]


def _run(sha: str, medians: dict[str, float], evidence: bool = True) -> BenchRun:
    machine = Machine('NVIDIA H200', 'sm_90', 'sm_90 baseline', '2.11', '3.6', evidence=evidence)
    rows = tuple(BenchRow('chunk_simple_gla', mode, Shape(shape, {'B': 8}), (ms,), median_ms=ms, evidence=evidence)
                 for (mode, shape), ms in ((key.split(' '), ms) for key, ms in medians.items()))
    return BenchRun(machine, rows, Gate('passed'), 1, ref=Revision('working tree', sha))


# A writer that stores tries of one loop, each with a large diff and its timings, as fast as it can.
WRITER = textwrap.dedent('''
    import sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from tests.mrbot.test_store import _run
    from mrbot.store import Store

    store = Store.open(Path({repo!r}))
    loop = store.loops()[0].id
    run = _run('a' * 40, {{f'fwd shape{{i}}': 0.1 + i for i in range(400)}})
    for number in range(100000):
        store.add_try(loop, 'a' * 40, f'writer {{number}}', 'x' * 8_000_000, 'same', [], run)
''')


def _in_a_write(path: Path) -> bool:
    """Whether another connection holds the store's write lock right now, that is, is inside a transaction."""
    probe = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        probe.execute('BEGIN IMMEDIATE')
        probe.execute('ROLLBACK')
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        probe.close()


def test_a_writer_killed_mid_write_leaves_every_try_whole(repo):
    repo.commit({'a.txt': 'a\n'})
    with Store.open(repo.root) as store:
        loop = store.add_loop('chunk_simple_gla', 'a' * 40, {}, {})
        writer = subprocess.Popen([sys.executable, '-c', WRITER.format(root=str(ROOT), repo=str(repo.root))])
        deadline = time.monotonic() + 60
        while len(store.tries(loop)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        while not _in_a_write(store.path) and time.monotonic() < deadline:
            pass
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    with Store.open(repo.root) as store:
        assert store.integrity() == 'ok'
        tries = store.tries(loop)
        assert len(tries) >= 2 and all(len(t.diff) == 8_000_000 for t in tries)
        # a try and its timings were written together or not at all
        per_try: dict[str, int] = {}
        for timing in store.timings('chunk_simple_gla', loop):
            per_try[timing.label] = per_try.get(timing.label, 0) + 1
        assert per_try == {f'try {t.number}': 400 for t in tries}
        # and the store takes the next write
        assert store.add_try(loop, 'b' * 40, 'after the kill', '', 'same', [], None) == len(tries) + 1


def test_two_writers_side_by_side_lose_nothing(repo):
    repo.commit({'a.txt': 'a\n'})
    script = textwrap.dedent(f'''
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from tests.mrbot.test_store import _run
        from mrbot.store import Store
        with Store.open(Path({str(repo.root)!r})) as store:
            for i in range(40):
                store.add_bench(_run(sys.argv[1] * 40, {{'fwd small': 0.1}}))
    ''')
    writers = [subprocess.Popen([sys.executable, '-c', script, name]) for name in 'ab']
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    with Store.open(repo.root) as store:
        assert sorted(t.sha[0] for t in store.timings()) == ['a'] * 40 + ['b'] * 40


def test_a_store_of_another_schema_or_not_sqlite_is_refused_with_what_to_do(repo, monkeypatch, capsys):
    repo.commit({'a.txt': 'a\n'})
    monkeypatch.chdir(repo.root)
    Store.open(repo.root).close()
    path = repo.root / '.mrbot' / 'history.sqlite3'
    with sqlite3.connect(path) as connection:
        connection.execute('PRAGMA user_version = 7')
    assert main(['history']) == 2
    assert capsys.readouterr().err == (f'mrbot history: error: {path}: history schema 7, this mrbot reads 2; use the '
                                       'mrbot that wrote it, or move the file aside to start a new history\n')
    for name in ('history.sqlite3', 'history.sqlite3-wal', 'history.sqlite3-shm'):
        (repo.root / '.mrbot' / name).unlink(missing_ok=True)
    path.write_text('not a database, just text ' * 100)
    assert main(['history']) == 2
    assert capsys.readouterr().err.startswith(f'mrbot history: error: {path}: not a readable history store (')


def test_a_store_of_the_first_schema_is_read_and_keeps_its_tries_while_gaining_the_gate_of_each(tmp_path):
    # the stores that GPU sessions hand back between machines are of the schema they were written with
    path = tmp_path / 'history.sqlite3'
    first = store_module._TABLES.replace('    gate TEXT,\n', '')
    with sqlite3.connect(path) as connection:
        connection.executescript(first)
        connection.execute('PRAGMA user_version = 1')
        connection.execute("INSERT INTO loops (op, started, baseline_sha, contract, request, state) VALUES "
                           "('chunk_kda', 'now', ?, '{}', '{}', 'open')", ('a' * 40,))
        connection.execute("INSERT INTO tries (loop_id, number, created, candidate_sha, note, diff, verdict, reasons) "
                           "VALUES (1, 1, 'now', ?, 'bf16', '', 'interrupted', '[]')", ('b' * 40,))
    with Store.at(path) as store:
        [old] = store.tries(1)
        assert (old.note, old.gate) == ('bf16', None)
        gate = Gate('passed', ('tests/ops/test_kda.py',), seconds=186.7, device='compiled on NVIDIA H100 (sm_90)')
        store.add_try(1, 'b' * 40, 'bf16 again', '', 'interrupted', [], None, gate)
        assert Gate.from_json(JsonObject(store.tries(1)[1].gate, 'a try')) == gate
    with sqlite3.connect(path) as connection:
        assert connection.execute('PRAGMA user_version').fetchone()[0] == 2


def test_history_without_a_store_and_bad_flags_say_so(repo, monkeypatch, capsys):
    repo.commit({'a.txt': 'a\n'})
    monkeypatch.chdir(repo.root)
    assert main(['history']) == 2
    assert capsys.readouterr().err == ('mrbot history: error: no history here yet: `mrbot loop` and `mrbot bench '
                                       '--record` write it\n')
    assert not (repo.root / '.mrbot').exists()
    assert main(['history', '--plot', 'out.pdf']) == 2
    assert capsys.readouterr().err == 'mrbot history: error: --plot out.pdf: expected a file ending in .png or .svg\n'


def test_sparkline_scales_between_the_extremes():
    assert sparkline([1.0, 2.0, 3.0, 2.0]) == '▁▅█▅'
    assert sparkline([0.5, 0.5]) == '▁▁'


def test_bench_record_and_history_table_plot(repo, monkeypatch, capsys, tmp_path):
    repo.commit({'a.txt': 'a\n'})
    monkeypatch.chdir(repo.root)
    with Store.open(repo.root) as store:
        for i, ms in enumerate((0.20, 0.18, 0.15)):
            store.add_bench(_run(f'{i}' * 40, {'fwd B8': ms, 'fwdbwd B8': 4 * ms}))
        store.add_bench(_run('9' * 40, {'fwd B8': 9.0}, evidence=False))
    svg, png = tmp_path / 'h.svg', tmp_path / 'h.png'
    assert main(['history', '--plot', str(svg), '--last', '3']) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ['chunk_simple_gla', 'fwd', 'B8', '4', '9.0000', '▁▁█', '(some', 'not', 'evidence:',
                              'interpreter)']
    assert out[2].split() == ['chunk_simple_gla', 'fwdbwd', 'B8', '3', '0.6000', '█▅▁']
    root = ElementTree.parse(svg).getroot()
    texts = {t.text for t in root.iter('{http://www.w3.org/2000/svg}text')}
    assert {'chunk_simple_gla', 'median time (ms)', 'fwd B8', 'fwdbwd B8', '000000000000', '222222222222'} <= texts
    series = {g.get('id') for g in root.iter('{http://www.w3.org/2000/svg}g')}
    assert {'chunk_simple_gla: fwd B8', 'chunk_simple_gla: fwdbwd B8'} <= series
    assert main(['history', '--plot', str(png)]) == 0
    from matplotlib import image

    pixels = image.imread(png)
    assert pixels.shape[0] > 200 and pixels.shape[1] > 400 and pixels.std() > 0.05


def test_bench_record_appends_the_base_and_head_medians(repo, monkeypatch):
    repo.commit({'a.txt': 'a\n'})
    run = _run('1' * 40, {'fwd small': 0.5})
    paired = BenchRun(run.machine, tuple(BenchRow(r.op, r.mode, r.shape, r.samples_ms, median_ms=r.median_ms,
                                                  base_ms=(0.6,), base_median_ms=0.6, evidence=True) for r in run.rows),
                      run.gate, 1, base=Revision('main', '0' * 40), head=Revision('working tree', '1' * 40, True))
    with Store.open(repo.root) as store:
        assert store.add_bench(paired) == 2
        assert [(t.label, t.sha[:1], t.median_ms) for t in store.timings()] == [('000000000000', '0', 0.6),
                                                                                 ('111111111111 +dirty', '1', 0.5)]


@pytest.mark.parametrize('record', [True, False])
def test_bench_json_record_is_what_history_stores(record, repo, monkeypatch, capsys, tmp_path):
    """`mrbot bench --record` stores the run it prints; without the flag nothing is written."""
    from tests.mrbot.bench.test_stage import _files

    repo.commit(_files())
    monkeypatch.chdir(repo.root)
    target = tmp_path / 'r.json'
    flags = ['--record'] if record else []
    assert main(['bench', '--rounds', '3', '--shapes', 'small', '--modes', 'fwd', '--no-gate', '-q', '--json',
                 str(target), *flags]) == 0
    capsys.readouterr()
    printed = json.loads(target.read_text())
    store = Store.open(repo.root, create=False)
    if not record:
        assert store is None
        return
    with store:
        timings = store.timings('scaled_sum')
    assert [(t.source, t.mode, t.shape, t.evidence, t.median_ms) for t in timings] == [
        ('bench', 'fwd', 'small', False, printed['rows'][0]['median_ms'])]
