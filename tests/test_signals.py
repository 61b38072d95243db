"""The recall signals: exact values at the points the spec names, and their bounds."""

from __future__ import annotations

import math

import pytest

from orcamem.recall.signals import (
    above_floor,
    base_level,
    ebbinghaus_retention,
    hawkes_intensity,
    idf,
    minmax,
    recency,
    rrf,
    usage,
)


def test_minmax() -> None:
    assert minmax({}) == {}
    assert minmax({"a": 3.7}) == {"a": 1.0}
    assert minmax({"a": 2.0, "b": 2.0}) == {"a": 1.0, "b": 1.0}
    assert minmax({"a": -1.0, "b": 0.0, "c": 3.0}) == {"a": 0.0, "b": 0.25, "c": 1.0}


def test_rrf_is_the_seeds_reciprocal_rank_term() -> None:
    scores = rrf(["x", "y", "z"])
    assert scores == {"x": pytest.approx(1 / 61), "y": pytest.approx(1 / 62), "z": 1 / 63}
    assert rrf(["x", "y"], k=1) == {"x": 0.5, "y": pytest.approx(1 / 3)}
    assert rrf([]) == {}


def test_base_level_is_the_log_of_power_law_decayed_mentions() -> None:
    assert base_level([0.0]) == 0.0  # one mention today: ln 1
    assert base_level([3.0]) == pytest.approx(-math.log(2))  # (3 + 1) ** -0.5 = 1/2
    assert base_level([0.0, 0.0]) == pytest.approx(math.log(2))  # frequency raises it
    assert base_level([3.0, 8.0]) == pytest.approx(math.log(1 / 2 + 1 / 3))
    assert base_level([3.0], decay=1.0) == pytest.approx(-math.log(4))
    assert base_level([-5.0]) == 0.0  # the future counts as now
    assert base_level([]) == -math.inf


def test_above_floor() -> None:
    assert above_floor(0.1, 0.3) == 0.0
    assert above_floor(0.3, 0.3) == 0.0
    assert above_floor(0.65, 0.3) == pytest.approx(0.5)
    assert above_floor(1.0, 0.3) == pytest.approx(1.0)
    assert above_floor(0.5, 1.0) == 0.0  # a degenerate floor never divides by zero


def test_recency_halves_every_half_life() -> None:
    assert recency(0, 30) == 1.0
    assert recency(30, 30) == pytest.approx(0.5)
    assert recency(90, 30) == pytest.approx(0.125)
    assert recency(-5, 30) == 1.0  # the future counts as now


def test_usage_is_log_scaled_and_saturates() -> None:
    assert usage(0) == 0.0
    assert usage(-3) == 0.0
    assert 0 < usage(1) < usage(10) < usage(49) < 1.0
    assert usage(50) == pytest.approx(1.0)
    assert usage(10_000) == 1.0


def test_hawkes_intensity() -> None:
    assert hawkes_intensity(0, alpha=0.4, half_life_seconds=1800) == pytest.approx(0.4)
    assert hawkes_intensity(1800, alpha=0.4, half_life_seconds=1800) == pytest.approx(0.2)
    assert hawkes_intensity(3600) == pytest.approx(0.1)  # defaults are alpha 0.4, 30 min
    assert hawkes_intensity(-60) == pytest.approx(0.4)
    assert hawkes_intensity(86_400) < 1e-9


def test_ebbinghaus_retention() -> None:
    assert ebbinghaus_retention(0, 1) == 1.0
    assert ebbinghaus_retention(2, 1, s0_days=2, gain=0.5) == pytest.approx(math.exp(-1))
    # n = 3 rehearsals: S = 2 * (1 + 0.5 * 2) = 4 days
    assert ebbinghaus_retention(4, 3, s0_days=2, gain=0.5) == pytest.approx(math.exp(-1))
    assert ebbinghaus_retention(2, 3, s0_days=2, gain=0.5) == pytest.approx(math.exp(-0.5))
    assert ebbinghaus_retention(2, 0) == ebbinghaus_retention(2, 1)  # never below one
    assert ebbinghaus_retention(-1, 1) == 1.0
    assert ebbinghaus_retention(10, 5) > ebbinghaus_retention(10, 1)  # rehearsal helps


@pytest.mark.parametrize("dt", [0.0, 0.5, 3.0, 100.0])
@pytest.mark.parametrize("n", [1, 2, 10])
def test_signals_stay_in_their_range(dt: float, n: int) -> None:
    assert 0.0 <= recency(dt, 7) <= 1.0
    assert 0.0 <= ebbinghaus_retention(dt, n) <= 1.0
    assert 0.0 <= hawkes_intensity(dt * 3600) <= 0.4
    assert 0.0 <= usage(n) <= 1.0


def test_idf_weighs_an_unseen_word_most() -> None:
    assert idf(0, 100) > idf(2, 100) > idf(40, 100) > 0
    assert idf(0, 100) == pytest.approx(math.log(101 / 0.5))
