# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The statistics of `mrbot bench`: paired bootstrap verdicts per row, Holm across rows, runner noise, final claims.

A row (op x mode x shape) has one number per round and side, the median of many repetitions in ms. The two numbers of a
round were timed back to back in alternating order (AB, BA, AB, ...), so whatever drifts during a run (clocks,
temperature, other tenants) moves both alike; everything here resamples whole rounds to keep that pairing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import TYPE_CHECKING, Literal

from mrbot.records import MrbotError
from mrbot.words import plural

if TYPE_CHECKING:
    import numpy as np

Verdict = Literal['faster', 'slower', 'same', 'noisy']
MIN_ROUNDS = 3
# Float noise in `1 - confidence` must not split a p-value from the interval it was read off.
_LEVEL_SLACK = 1e-9


def _numpy() -> ModuleType:
    """numpy, imported where a statistic is computed: the light core (check, post) installs none."""
    try:
        import numpy
    except ModuleNotFoundError:
        raise MrbotError("the benchmark statistics need numpy (not installed): pip install 'mrbot[kernels]'") from None
    return numpy


@dataclass(frozen=True)
class Comparison:
    """Head against base on one row; a ratio below 1 means head is faster.

    `ratio` is median(head) / median(base); `ci_low` and `ci_high` are its paired percentile bootstrap interval;
    `p_value` tests "the true ratio is within the minimum effect of 1" (see `compare`); `verdict` reads the interval.
    """

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: Verdict


def compare(base: Sequence[float], head: Sequence[float], min_effect: float = 0.02, confidence: float = 0.95,
            resamples: int = 2000, seed: int = 0) -> Comparison:
    """Judge head against base from the per-round times of one row, paired by round.

    Interval: each of `resamples` bootstrap resamples draws round indices with replacement and applies the same indices
    to both sides, so a round's pair stays together and drift shared by the pair cancels instead of widening the
    interval. With alpha = 1 - confidence and k = floor(alpha / 2 * resamples), the interval runs from the (k+1)-th
    smallest to the (k+1)-th largest resampled ratio: the percentile interval with alpha / 2 in each tail.

    Verdict: 'faster' when the whole interval lies below 1 - min_effect, 'slower' when it lies above 1 + min_effect,
    'same' when it lies inside [1 - min_effect, 1 + min_effect], 'noisy' otherwise, and always 'noisy' below
    MIN_ROUNDS rounds (the ratio and the interval are still reported; p_value is then 1).

    P-value of the null "the true ratio lies within [1 - min_effect, 1 + min_effect]": for each direction, the share
    of resampled ratios on the null side of that direction's threshold (at or above 1 - min_effect for 'faster', at or
    below 1 + min_effect for 'slower') is the percentile bootstrap's one-sided p-value against that threshold. Both
    one-sided tests reject most often when the truth sits on a threshold, where each rejects at rate alpha / 2, so the
    null holds as a whole; the direction is picked after seeing the data, so the smaller share is doubled (Bonferroni
    over the two directions): p = min(1, 2 * min(share_faster, share_slower)). By construction p <= alpha exactly when
    the verdict is 'faster' or 'slower', so the p-value adds no second opinion; it ranks rows for Holm (`compare_rows`).
    It moves in steps of 2 / resamples; 0 means no resample reached the margin.

    Args:
        base (Sequence[float]):
            Per-round times of the base side in ms, positive and finite.
        head (Sequence[float]):
            Per-round times of the head side, as many as `base`, round i of one paired with round i of the other.
        min_effect (float, Optional):
            The relative change below which a difference does not count, in [0, 1).
            Default: `0.02`.
        confidence (float, Optional):
            Two-sided confidence of the interval, in (0, 1).
            Default: `0.95`.
        resamples (int, Optional):
            Number of bootstrap resamples.
            Default: `2000`.
        seed (int, Optional):
            Seed of the numpy Generator that draws the resamples; the same inputs and seed give the same result.
            Default: `0`.

    Raises:
        ValueError: the sides differ in length or are empty, a time is not positive and finite, or a setting is out of
            range.
    """
    np = _numpy()
    base_ms, head_ms = _paired(base, head)
    _check_settings(min_effect, confidence, resamples)
    rounds = len(base_ms)
    ratio = float(np.median(head_ms) / np.median(base_ms))
    picks = np.random.default_rng(seed).integers(0, rounds, size=(resamples, rounds))
    resampled = np.sort(np.median(head_ms[picks], axis=1) / np.median(base_ms[picks], axis=1))
    tail = math.floor((1 - confidence) / 2 * resamples + _LEVEL_SLACK)
    ci_low, ci_high = float(resampled[tail]), float(resampled[resamples - 1 - tail])
    if rounds < MIN_ROUNDS:
        return Comparison(ratio, ci_low, ci_high, 1.0, 'noisy')
    share_faster = np.count_nonzero(resampled >= 1 - min_effect) / resamples
    share_slower = np.count_nonzero(resampled <= 1 + min_effect) / resamples
    p_value = min(1.0, 2 * min(share_faster, share_slower))
    return Comparison(ratio, ci_low, ci_high, p_value, _verdict(ci_low, ci_high, min_effect))


def compare_rows(rows: Sequence[tuple[Sequence[float], Sequence[float]]], min_effect: float | Sequence[float] = 0.02,
                 confidence: float = 0.95, resamples: int = 2000, seed: int = 0) -> tuple[list[Comparison], str]:
    """Compare every row, then keep the family-wise false-alarm rate over all rows at 1 - confidence.

    Each row is `compare`d on its own, with the same seed, so a row's interval does not depend on the other rows. Holm's
    step-down then runs over all rows' p-values at level alpha = 1 - confidence: sorted ascending, the i-th smallest
    (from 0) must be at most alpha / (rows - i), and the first that is not stops the walk. A 'faster' or 'slower' row
    that Holm does not reject becomes 'noisy'; its ratio, interval and p-value stay as they were. Holm holds under any
    dependence between rows, so rows sharing a GPU and a run need no independence assumption. 'same' is a per-row
    reading and is not corrected.

    Args:
        rows (Sequence[tuple[Sequence[float], Sequence[float]]]):
            (base, head) per-round times of each row, as `compare` takes them.
        min_effect (float | Sequence[float], Optional):
            One minimum effect for all rows, or one per row (a noisy runner's rows get their measured noise).
            Default: `0.02`.
        confidence (float, Optional):
            Per-row interval confidence; 1 - confidence is also the family-wise level.
            Default: `0.95`.
        resamples (int, Optional):
            Bootstrap resamples per row.
            Default: `2000`.
        seed (int, Optional):
            Seed of every row's resampling.
            Default: `0`.

    Returns:
        The comparisons in row order, and one line saying what the correction did, such as
        'Holm correction over 8 rows at family-wise level 5%: 1 verdict withdrawn'.
    """
    effects = [min_effect] * len(rows) if isinstance(min_effect, (int, float)) else list(min_effect)
    if len(effects) != len(rows):
        raise ValueError(f"{plural(len(rows), 'row')} but {plural(len(effects), 'minimum effect')}: give one for all rows "
                         'or one per row')
    comparisons = [compare(base, head, effect, confidence, resamples, seed)
                   for (base, head), effect in zip(rows, effects, strict=True)]
    alpha = 1 - confidence
    rejected = _holm_rejections([c.p_value for c in comparisons], alpha)
    withdrawn = 0
    for index, comparison in enumerate(comparisons):
        if comparison.verdict in ('faster', 'slower') and index not in rejected:
            comparisons[index] = replace(comparison, verdict='noisy')
            withdrawn += 1
    note = (f"Holm correction over {len(rows)} row{'s' * (len(rows) != 1)} at family-wise level {alpha * 100:.3g}%: "
            f"{withdrawn} verdict{'s' * (withdrawn != 1)} withdrawn")
    return comparisons, note


def noise(ratios: Sequence[float]) -> float:
    """Runner noise of one row from the per-round head/base ratios of an A/A run (base timed against itself).

    The larger of two things identical code showed: the swing of one round, (p90 - p10) / median of the ratios, and
    the farthest of p10 and p90 from 1. The second catches a steady offset between two processes running the same code
    (1.3% on one row of an H200 A/A run, docs/gpu-runs.md), which interleaving cannot cancel and a band alone would
    miss. Used as a row's minimum effect when it exceeds the default, it keeps the runner from claiming
    changes the same code could produce. Percentiles interpolate linearly, so at 10 rounds a single wild round moves
    p90 by a tenth of its excess.

    Raises:
        ValueError: fewer than MIN_ROUNDS ratios, or a ratio that is not positive and finite.
    """
    np = _numpy()
    values = _positive(ratios, 'ratios')
    if len(values) < MIN_ROUNDS:
        raise ValueError(f'noise needs at least {MIN_ROUNDS} rounds of an A/A run, got {len(values)}')
    p10, median, p90 = np.percentile(values, [10, 50, 90])
    return float(max((p90 - p10) / median, abs(p10 - 1), abs(p90 - 1)))


def summary(samples: Sequence[float]) -> dict[str, float]:
    """The final-claim statistics of a row's per-round times: median, mean, std, min, p10 and p90.

    `std` is the sample standard deviation (n - 1 in the denominator; 0 for a single value); percentiles interpolate
    linearly between rounds.

    Raises:
        ValueError: no values, or a value that is not positive and finite.
    """
    np = _numpy()
    values = _positive(samples, 'samples')
    p10, median, p90 = np.percentile(values, [10, 50, 90])
    std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return {'median': float(median), 'mean': float(np.mean(values)), 'std': std, 'min': float(np.min(values)),
            'p10': float(p10), 'p90': float(p90)}


def geomean(ratios: Sequence[float]) -> float:
    """The equal-weight geometric mean of per-row ratios (or speedups), the headline number of a final claim.

    Raises:
        ValueError: no ratios, or a ratio that is not positive and finite.
    """
    np = _numpy()
    return float(np.exp(np.mean(np.log(_positive(ratios, 'ratios')))))


def _verdict(ci_low: float, ci_high: float, min_effect: float) -> Verdict:
    if ci_high < 1 - min_effect:
        return 'faster'
    if ci_low > 1 + min_effect:
        return 'slower'
    if 1 - min_effect <= ci_low and ci_high <= 1 + min_effect:
        return 'same'
    return 'noisy'


def _holm_rejections(p_values: list[float], alpha: float) -> set[int]:
    """Indices of the hypotheses Holm's step-down rejects at family-wise level alpha."""
    order = sorted(range(len(p_values)), key=p_values.__getitem__)
    rejected = set()
    for rank, index in enumerate(order):
        if p_values[index] > alpha / (len(p_values) - rank) + _LEVEL_SLACK:
            break
        rejected.add(index)
    return rejected


def _paired(base: Sequence[float], head: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    if len(base) != len(head):
        raise ValueError(f"base has {plural(len(base), 'round')} but head has {len(head)}: the sides must be paired "
                         'round by round')
    return _positive(base, 'base'), _positive(head, 'head')


def _positive(values: Sequence[float], name: str) -> np.ndarray:
    np = _numpy()
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f'{name}: expected a non-empty sequence of numbers')
    bad = np.flatnonzero(~(np.isfinite(array) & (array > 0)))
    if bad.size:
        raise ValueError(f'{name}: every value must be positive and finite, got {array[bad[0]]} at index {bad[0]}')
    return array


def _check_settings(min_effect: float, confidence: float, resamples: int) -> None:
    if not 0 <= min_effect < 1:
        raise ValueError(f'min_effect must be in [0, 1), got {min_effect}')
    if not 0 < confidence < 1:
        raise ValueError(f'confidence must be in (0, 1), got {confidence}')
    if resamples < 1:
        raise ValueError(f'resamples must be at least 1, got {resamples}')
