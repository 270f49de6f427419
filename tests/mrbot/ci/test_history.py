# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The benchmark history in CI: the GPU job reports the base medians it measured, the poster refuses malformed ones,
and only the poster records them, ending each /bench result with the trend of its op on the base branch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mrbot.bench import stage as bench_stage
from mrbot.ci import grammar, job
from mrbot.ci.artifacts import ARTIFACT, read_artifact
from mrbot.cli import main
from mrbot.records import MrbotError
from mrbot.records.bench import BenchRow, BenchRun, Gate, Machine, Revision, Shape, Statistics
from mrbot.store import Store
from mrbot.testing import Gpu
from tests.mrbot.ci.fakerunner import Bot

TREND = 'Trend on the base branch (base medians of /bench runs on NVIDIA H200, oldest first, last 12):'


def _timed(bot: Bot, base_ms: dict[str, float], evidence: bool = True) -> BenchRun:
    """What `/bench scale` measured: per `mode shape`, the base's median (0 where no round finished), the head 0.1."""
    machine = Machine('NVIDIA H200', 'sm_90', 'sm_90 baseline', '2.11', '3.6', evidence=evidence)
    rows = tuple(BenchRow('scale', series.split()[0], Shape(series.split()[1], {'B': 2, 'D': 4}), (0.1,) * 3,
                          median_ms=0.1, evidence=evidence, base_ms=(ms,) * 3, base_median_ms=ms,
                          ratio=0.1 / ms if ms else None, ci_low=0.5, ci_high=0.9, verdict='faster' if ms else 'noisy')
                 for series, ms in base_ms.items())
    return BenchRun(machine, rows, Gate('passed'), 3, base=Revision(bot.base, bot.base),
                    head=Revision('HEAD', bot.head), statistics=Statistics(0.02, 'Holm'))


def _bench(bot: Bot, monkeypatch, run_id: int, user: str, timed: BenchRun) -> Path:
    """`/bench scale` by `user`, accepted in run `run_id`, and the GPU job's result of it timed as `timed`; the folder
    the poster downloads."""
    downloaded = bot.tmp / f'run{run_id}'
    _, outputs, _ = bot.act('issue_comment', bot.comment_payload('/bench scale', login=user), '--artifact',
                            str(downloaded / 'mrbot-accepted'), run_id=run_id)
    assert outputs['authorized'] == 'true', bot.server.comments_on(bot.number)[-1][1]
    # stands in for an H200 that timed the run: the bench itself is tested where it lives
    monkeypatch.setattr(job, 'local_gpu', lambda: Gpu('NVIDIA H200', (9, 0), 141 * 2**30))
    monkeypatch.setattr(bench_stage, 'measure', lambda request, workspace: timed)
    for name, value in {'MRBOT_COMMAND': 'bench', 'MRBOT_SHA': bot.head, 'MRBOT_RUNNER': 'hopper',
                        'MRBOT_PR': str(bot.number), 'GITHUB_RUN_ID': str(run_id),
                        'MRBOT_ARGS': outputs['args']}.items():
        monkeypatch.setenv(name, value)
    assert main(['action', 'run', '--out', str(downloaded / 'mrbot-result-hopper')]) == 0
    return downloaded


def _result(bot: Bot) -> str:
    [body] = [body for _, body in bot.server.comments_on(bot.number) if body.startswith('<!-- mrbot:bench-hopper')]
    return body


def test_the_gpu_job_reports_the_base_medians_it_measured_and_no_head_median(bot, monkeypatch):
    downloaded = _bench(bot, monkeypatch, 81, 'alice', _timed(bot, {'fwd small': 0.15, 'fwdbwd small': 0.0}))
    artifact = json.loads((downloaded / 'mrbot-result-hopper' / ARTIFACT).read_text())
    # the fwdbwd row finished no round: it has no median to report
    assert artifact['base'] == bot.base and artifact['timings'] == [
        {'op': 'scale', 'mode': 'fwd', 'shape': 'small', 'median_ms': 0.15, 'gpu': 'NVIDIA H200', 'evidence': True}]


def test_the_poster_records_the_base_medians_and_ends_the_result_with_their_trend(bot, monkeypatch):
    history = bot.tmp / 'mrbot-history' / 'history.sqlite3'
    first = _bench(bot, monkeypatch, 82, 'alice', _timed(bot, {'fwd small': 0.15, 'fwdbwd small': 0.4}))
    # as the poster runs it: with nothing installed beyond the hash-pinned set
    assert bot.act('workflow_run', bot.command_run(82), '--artifact', str(first), '--history', str(history),
                   pinned_only=True)[0] == 0
    assert _result(bot).endswith(f'\n\n{TREND}\n\n- scale fwd small: ▁ 0.1500 ms\n- scale fwdbwd small: ▁ 0.4000 ms\n')
    # a later run on the same base: two points, oldest first
    later = _bench(bot, monkeypatch, 83, 'olivia', _timed(bot, {'fwd small': 0.12, 'fwdbwd small': 0.4}))
    assert bot.act('workflow_run', bot.command_run(83), '--artifact', str(later), '--history', str(history))[0] == 0
    assert _result(bot).endswith(f'\n\n{TREND}\n\n- scale fwd small: █▁ 0.1200 ms\n- scale fwdbwd small: ▁▁ 0.4000 ms\n')
    with Store.at(history) as store:
        assert [(t.source, t.label, t.sha, t.op, t.mode, t.shape, t.gpu, t.evidence, t.median_ms)
                for t in store.timings()] == [
            ('bench', bot.base[:12], bot.base, 'scale', mode, 'small', 'NVIDIA H200', True, ms)
            for mode, ms in (('fwd', 0.15), ('fwdbwd', 0.4), ('fwd', 0.12), ('fwdbwd', 0.4))]
    # both jobs are done, whatever the history did
    assert grammar.markers([b for _, b in bot.server.comments_on(bot.number)], 'done', bot.seal) == [{'run': '82'},
                                                                                           {'run': '83'}]


def test_a_run_posted_twice_records_each_point_once(bot, monkeypatch):
    # the poster's run re-run posts the same artifacts of the same run: one trend point must not fill the history
    history = bot.tmp / 'mrbot-history' / 'history.sqlite3'
    downloaded = _bench(bot, monkeypatch, 82, 'alice', _timed(bot, {'fwd small': 0.15}))
    for attempt in ('1', '2'):
        monkeypatch.setenv('GITHUB_RUN_ATTEMPT', attempt)
        assert bot.act('workflow_run', bot.command_run(82), '--artifact', str(downloaded), '--history', str(history))[0] == 0
    with Store.at(history) as store:
        assert [t.median_ms for t in store.timings()] == [0.15]


def test_a_re_run_of_a_commands_run_posts_nothing(bot, monkeypatch, capsys):
    # its attempt 2 ran nothing (authorize refuses it) and holds the first attempt's artifacts
    history = bot.tmp / 'mrbot-history' / 'history.sqlite3'
    downloaded = _bench(bot, monkeypatch, 82, 'alice', _timed(bot, {'fwd small': 0.15}))
    run = bot.command_run(82)
    run['workflow_run']['run_attempt'] = 2
    assert bot.act('workflow_run', run, '--artifact', str(downloaded), '--history', str(history))[0] == 0
    assert "attempt 2 of a command's run" in capsys.readouterr().out and not history.exists()


def test_interpreter_medians_are_no_trend_and_are_not_recorded(bot, monkeypatch):
    history = bot.tmp / 'mrbot-history' / 'history.sqlite3'
    downloaded = _bench(bot, monkeypatch, 84, 'alice', _timed(bot, {'fwd small': 0.15}, evidence=False))
    assert json.loads((downloaded / 'mrbot-result-hopper' / ARTIFACT).read_text())['timings'][0]['evidence'] is False
    assert bot.act('workflow_run', bot.command_run(84), '--artifact', str(downloaded), '--history', str(history))[0] == 0
    assert 'Trend on the base branch' not in _result(bot) and not history.parent.exists()


def test_without_history_nothing_is_recorded_and_no_trend_is_posted(bot, monkeypatch):
    downloaded = _bench(bot, monkeypatch, 85, 'alice', _timed(bot, {'fwd small': 0.15}))
    assert bot.act('workflow_run', bot.command_run(85), '--artifact', str(downloaded))[0] == 0
    assert 'Trend on the base branch' not in _result(bot) and '| scale | fwd | small | 0.1500 |' in _result(bot)
    assert [path for path in (bot.tmp, bot.repo.root) for path in path.rglob('*.sqlite3')] == []


def test_a_history_that_cannot_be_read_loses_the_trend_but_not_the_post(bot, monkeypatch, capsys):
    history = bot.tmp / 'history.sqlite3'
    history.write_text('not a database\n' * 100)
    downloaded = _bench(bot, monkeypatch, 86, 'alice', _timed(bot, {'fwd small': 0.15}))
    capsys.readouterr()
    assert bot.act('workflow_run', bot.command_run(86), '--artifact', str(downloaded), '--history', str(history))[0] == 0
    # one line, beside the forge client's own log
    assert (f'mrbot action: no trend posted, the history store failed: {history}: not a readable history store (file '
            'is not a database); move it aside and mrbot starts a new one') in capsys.readouterr().err.splitlines()
    assert 'Trend on the base branch' not in _result(bot) and '| scale | fwd | small | 0.1500 |' in _result(bot)


@pytest.mark.parametrize(('argv', 'message'), [
    (['--history', 'h.sqlite3'], '--history FILE goes with --artifact DIR on GitHub: only the poster records the '
                                 'history'),
    (['run', '--out', 'out', '--artifact', 'a', '--history', 'h.sqlite3'],
     '--history FILE goes with --artifact DIR on GitHub: only the poster records the history'),
    (['--forge', 'gitlab', '--artifact', 'a', '--history', 'h.sqlite3'],
     '--history FILE goes with --artifact DIR on GitHub: only the poster records the history'),
])
def test_history_goes_with_the_poster_alone(bot, capsys, argv, message):
    assert main(['action', *argv]) == 2
    assert capsys.readouterr().err == f'mrbot action: error: {message}\n'


def test_a_job_that_checks_a_pr_records_no_history(bot, capsys):
    history = bot.tmp / 'history.sqlite3'
    code, _, _ = bot.act('pull_request', bot.pull_request_payload(), '--artifact', str(bot.tmp / 'report'),
                         '--history', str(history))
    assert code == 2 and capsys.readouterr().err == ('mrbot action: error: --history: only the poster of a '
                                                     'workflow_run event records timings, not a pull_request job\n')
    assert not history.exists() and not (bot.tmp / 'report').exists()


TIMING = {'op': 'scale', 'mode': 'fwd', 'shape': 'small', 'median_ms': 0.15, 'gpu': 'NVIDIA H200', 'evidence': True}


@pytest.mark.parametrize(('changes', 'problem'), [
    ({'timings': [TIMING] * 501}, 'timings must be a list of at most 500 entries'),
    ({'timings': {'0': TIMING}}, 'timings must be a list of at most 500 entries'),
    ({'timings': [TIMING, 'scale']}, 'timings[1] must be an object'),
    ({'timings': [{**TIMING, 'mode': 'bwd'}]}, 'timings[0].mode must be fwd or fwdbwd'),
    ({'timings': [{**TIMING, 'median_ms': -0.15}]},
     'timings[0].median_ms must be a number of milliseconds above 0 and below 1e6'),
    ({'timings': [{**TIMING, 'median_ms': float('nan')}]},
     'timings[0].median_ms must be a number of milliseconds above 0 and below 1e6'),
    ({'timings': [{**TIMING, 'median_ms': True}]},
     'timings[0].median_ms must be a number of milliseconds above 0 and below 1e6'),
    ({'timings': [{**TIMING, 'median_ms': 1e6}]},
     'timings[0].median_ms must be a number of milliseconds above 0 and below 1e6'),
    ({'timings': [{**TIMING, 'op': 'scale; rm -rf'}]}, 'timings[0].op must be 1 to 80 letters, digits, _, . or -'),
    ({'timings': [{**TIMING, 'shape': 's' * 81}]}, 'timings[0].shape must be 1 to 80 letters, digits, _, . or -'),
    ({'timings': [{**TIMING, 'gpu': 'NVIDIA H200\n@all'}]}, 'timings[0].gpu must be printable text of 1 to 100 '
                                                              'characters'),
    ({'timings': [{**TIMING, 'evidence': 'yes'}]}, 'timings[0].evidence must be true or false'),
    # PR code on the runner writes the result: twelve copies of one point would fill a series' trend on their own
    ({'timings': [TIMING] * 12}, 'timings name one op, mode and shape more than once'),
    ({'timings': [TIMING, {**TIMING, 'mode': 'fwdbwd', 'gpu': 'NVIDIA B200'}]}, 'timings name more than one GPU'),
    ({'base': None}, 'base must be a full commit id (40 or 64 hexadecimal digits) where timings are'),
    ({'base': 'abc123'}, 'base must be a full commit id (40 or 64 hexadecimal digits) where timings are'),
    ({'purpose': 'test-hopper'}, 'only the result of a bench carries timings'),
    ({'kind': 'accepted'}, 'only the result of a bench carries timings'),
])
def test_each_malformed_timing_is_refused_with_what_is_wrong(tmp_path, changes, problem):
    artifact = {'schema': 1, 'kind': 'result', 'pr': 1, 'sha': 'a' * 40, 'run': '9', 'purpose': 'bench-hopper',
                'body': 'numbers', 'check': None, 'base': 'b' * 40, 'timings': [TIMING]}
    (tmp_path / ARTIFACT).write_text(json.dumps({**artifact, **changes}))
    with pytest.raises(MrbotError) as error:
        read_artifact(tmp_path)
    assert str(error.value) == f'{tmp_path / ARTIFACT}: not a valid mrbot artifact: {problem}'
    (tmp_path / ARTIFACT).write_text(json.dumps(artifact))
    assert read_artifact(tmp_path)['timings'] == [TIMING]


def test_an_artifact_takes_the_commit_ids_the_command_grammar_takes(tmp_path):
    """A SHA-256 repository's commit ids are 64 hexadecimal digits; `/bench --sha` takes them, and so does its result."""
    artifact = {'schema': 1, 'kind': 'result', 'pr': 1, 'sha': 'a' * 64, 'run': '9', 'purpose': 'bench-hopper',
                'body': 'numbers', 'check': None, 'base': 'b' * 64, 'timings': [TIMING]}
    (tmp_path / ARTIFACT).write_text(json.dumps(artifact))
    assert read_artifact(tmp_path)['sha'] == 'a' * 64
    (tmp_path / ARTIFACT).write_text(json.dumps({**artifact, 'sha': 'a' * 50}))
    with pytest.raises(MrbotError, match='sha must be a full commit id'):
        read_artifact(tmp_path)


def test_a_result_with_malformed_timings_is_not_posted_and_still_frees_the_queue(bot, monkeypatch, capsys):
    downloaded = _bench(bot, monkeypatch, 87, 'alice', _timed(bot, {'fwd small': 0.15}))
    path = downloaded / 'mrbot-result-hopper' / ARTIFACT
    artifact = json.loads(path.read_text())
    path.write_text(json.dumps({**artifact, 'timings': [{**artifact['timings'][0], 'median_ms': 0}]}))
    capsys.readouterr()
    history = bot.tmp / 'history.sqlite3'
    code, _, _ = bot.act('workflow_run', bot.command_run(87), '--artifact', str(downloaded), '--history', str(history))
    assert code == 2 and (f'mrbot action: error: {path}: not a valid mrbot artifact: timings[0].median_ms must be a '
                          'number of milliseconds above 0 and below 1e6 (posted: ') in capsys.readouterr().err
    # in its place, the note of a job that left no result
    assert '**The job ended without leaving a result**' in _result(bot)
    assert not history.exists()
    assert grammar.markers([b for _, b in bot.server.comments_on(bot.number)], 'done', bot.seal) == [{'run': '87'}]
