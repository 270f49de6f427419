# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""Verdicts of `mrbot bench` on simulated runs: false alarms, detection, drift, Holm, edge cases and summaries."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from mrbot.bench.stats import compare, compare_rows, geomean, noise, summary

ROUNDS = 10
# Per-round medians of a GPU timing scatter by a few percent; 2.5% is a noisy but usable runner.
SIGMA = 0.025


def _lognormal_pairs(seed: int, trials: int, effect: float = 1.0, sigma: float = SIGMA) -> list[tuple[list, list]]:
    """(base, head) per-round times of `trials` rows drawn from one log-normal, head scaled by `effect`."""
    draws = np.random.default_rng(seed).lognormal(0.0, sigma, size=(trials, 2, ROUNDS))
    return [(list(base), list(head * effect)) for base, head in draws]


def _verdicts(pairs: list[tuple[list, list]]) -> Counter:
    return Counter(compare(base, head).verdict for base, head in pairs)


def test_aa_rows_are_rarely_called_faster_or_slower():
    verdicts = _verdicts(_lognormal_pairs(seed=1, trials=2000))
    false_alarms = verdicts['faster'] + verdicts['slower']
    assert false_alarms / 2000 < 0.01, verdicts


def test_planted_eight_percent_slowdown_is_called_slower():
    verdicts = _verdicts(_lognormal_pairs(seed=2, trials=500, effect=1.08))
    assert verdicts['slower'] / 500 >= 0.95, verdicts
    assert verdicts['faster'] == 0


def test_planted_speedup_is_called_faster():
    verdicts = _verdicts(_lognormal_pairs(seed=3, trials=200, effect=1 / 1.08))
    assert verdicts['faster'] / 200 >= 0.95, verdicts


def test_drift_shared_by_interleaved_rounds_cancels():
    # Both sides slow down 0.5% per round (0.25% per timing slot); base runs first in even rounds, head in odd ones.
    rounds = np.arange(ROUNDS)
    base_slot, head_slot = 2 * rounds + rounds % 2, 2 * rounds + 1 - rounds % 2
    drift = 0.005 / 2
    pairs = [(list(base * (1 + drift * base_slot)), list(head * (1 + drift * head_slot)))
             for base, head in _lognormal_pairs(seed=4, trials=500, sigma=0.005)]
    verdicts = _verdicts(pairs)
    assert verdicts['faster'] + verdicts['slower'] == 0, verdicts
    # Resampling the two sides apart would spread the 4.5% drift into the interval and leave most rows 'noisy'.
    assert verdicts['same'] / 500 >= 0.95, verdicts


def test_p_value_is_within_the_level_exactly_when_the_verdict_is_faster_or_slower():
    pairs = [pair for effect in (0.95, 1.0, 1.04, 1.05) for pair in _lognormal_pairs(seed=5, trials=100, effect=effect)]
    comparisons = [compare(base, head) for base, head in pairs]
    called = [c.verdict in ('faster', 'slower') for c in comparisons]
    assert 0 < sum(called) < len(called)
    assert [c.p_value <= 0.05 for c in comparisons] == called


def test_holm_keeps_a_strong_effect_among_null_rows():
    nulls = _lognormal_pairs(seed=6, trials=40)
    strong_base, strong_head = _lognormal_pairs(seed=7, trials=1, effect=1.3)[0]
    comparisons, note = compare_rows([*nulls, (strong_base, strong_head)])
    assert comparisons[-1].verdict == 'slower'
    assert not any(c.verdict in ('faster', 'slower') for c in comparisons[:-1])
    assert note.startswith('Holm correction over 41 rows')


def test_holm_withdraws_a_verdict_that_holds_only_for_one_row_alone():
    # Two rounds of ten at the base time: alone that is 'slower' at p = 0.014, too weak against ten rows.
    moderate = ([1.0] * ROUNDS, [1.06, 1.06, 1.0, 1.06, 1.06, 1.06, 1.0, 1.06, 1.06, 1.06])
    alone = compare(*moderate)
    assert alone.verdict == 'slower' and 0 < alone.p_value <= 0.05
    strong = ([1.0] * ROUNDS, [1.3] * ROUNDS)
    nulls = [([1.0] * ROUNDS, [1.0] * ROUNDS)] * 8
    comparisons, note = compare_rows([strong, moderate, *nulls])
    assert [c.verdict for c in comparisons[:2]] == ['slower', 'noisy']
    assert comparisons[1].ratio == alone.ratio and comparisons[1].p_value == alone.p_value
    assert note == 'Holm correction over 10 rows at family-wise level 5%: 1 verdict withdrawn'


def test_per_row_minimum_effects():
    row = ([1.0] * ROUNDS, [1.06] * ROUNDS)
    comparisons, _ = compare_rows([row, row], min_effect=[0.02, 0.08])
    assert [c.verdict for c in comparisons] == ['slower', 'same']
    with pytest.raises(ValueError, match='2 rows but 3 minimum effects'):
        compare_rows([row, row], min_effect=[0.02, 0.02, 0.02])


def test_fewer_than_three_rounds_is_noisy_but_keeps_the_ratio():
    comparison = compare([1.0, 1.0], [2.0, 2.2])
    assert comparison.verdict == 'noisy'
    assert comparison.ratio == pytest.approx(2.1)
    assert comparison.p_value == 1.0


@pytest.mark.parametrize(('head', 'verdict', 'p_value'), [(1.0, 'same', 1.0), (1.1, 'slower', 0.0),
                                                          (0.9, 'faster', 0.0)])
def test_constant_samples_collapse_the_interval_to_the_ratio(head, verdict, p_value):
    comparison = compare([1.0] * 5, [head] * 5)
    assert comparison.ratio == pytest.approx(head)
    assert comparison.ci_low == pytest.approx(head) and comparison.ci_high == pytest.approx(head)
    assert (comparison.verdict, comparison.p_value) == (verdict, p_value)


def test_mismatched_lengths_name_both():
    with pytest.raises(ValueError, match='base has 5 rounds but head has 4'):
        compare([1.0] * 5, [1.0] * 4)


def test_non_positive_time_is_refused():
    with pytest.raises(ValueError, match='head: .* positive and finite, got 0.0 at index 2'):
        compare([1.0] * 3, [1.0, 1.0, 0.0])


def test_same_seed_same_result_and_seed_matters():
    base, head = _lognormal_pairs(seed=8, trials=1, effect=1.03)[0]
    assert compare(base, head, seed=5) == compare(base, head, seed=5)
    assert compare(base, head, seed=5).ci_low != compare(base, head, seed=6).ci_low


def test_noise_is_the_round_to_round_band_when_centred_on_one():
    ratios = [0.995 + 0.001 * i for i in range(11)]  # 0.995 ... 1.005: p10 0.996, p90 1.004
    assert noise(ratios) == pytest.approx(0.008)
    assert noise([1.0, 1.0, 1.0]) == 0.0
    with pytest.raises(ValueError, match='at least 3 rounds'):
        noise([1.0, 1.1])


def test_noise_covers_a_steady_offset_between_identical_sides():
    # measured on an H200: two processes of the same code, fwd+bwd B8-T2048-H16-K128, tight but 1.3% apart
    ratios = [0.9878, 0.987, 0.9859, 0.9879, 0.9877, 0.9873, 0.9862, 0.9872, 0.9881, 0.9889]
    assert noise(ratios) == pytest.approx(1 - float(np.percentile(ratios, 10)))
    assert noise(ratios) > 0.013


def test_summary_of_known_samples():
    assert summary([4.0, 1.0, 3.0, 2.0]) == pytest.approx(
        {'median': 2.5, 'mean': 2.5, 'std': (5 / 3) ** 0.5, 'min': 1.0, 'p10': 1.3, 'p90': 3.7})
    assert summary([2.0])['std'] == 0.0


def test_geomean_weighs_speedups_and_slowdowns_alike():
    assert geomean([0.5, 2.0]) == pytest.approx(1.0)
    assert geomean([1.1, 0.9, 1.2]) == pytest.approx((1.1 * 0.9 * 1.2) ** (1 / 3))
    with pytest.raises(ValueError):
        geomean([])
