"""The cold targets are judged by the median pair of adjacent floor and resolve runs
(``bench.resolve_bench``), not by the ratio of medians taken apart: a slow spell of the
host that falls on one side of one pair moves one pair, not the verdict."""

from __future__ import annotations

from typing import Any

from bench.reports import p50_over_floor, rps_over_floor
from bench.resolve_bench import _pair_ratios, median_of_rounds
from bench.run_all import targets


def _run(p50: float, rps: float) -> dict[str, Any]:
    return {
        "p50_ms": p50,
        "p95_ms": p50 * 2,
        "p99_ms": p50 * 3,
        "mean_ms": p50,
        "rps": rps,
        "requests": int(rps),
        "non_2xx": 0,
        "socket_errors": 0,
    }


def _round(pairs: list[tuple[float, float]]) -> dict[str, Any]:
    """A round whose pairs are (floor p50, resolve p50), with throughput their inverse; its
    figures for each endpoint taken apart are those of its last pair."""
    runs = [{"floor": _run(f, 1000 / f), "resolve": _run(r, 1000 / r)} for f, r in pairs]
    by_clients = {
        "floor": runs[-1]["floor"],
        "resolve": runs[-1]["resolve"],
        "pairs": [_pair_ratios(p) for p in runs],
    }
    return {"load_average": 1.0, "c1": by_clients, "c8": by_clients}


def test_a_slow_spell_on_one_side_of_a_pair_does_not_decide_the_ratio() -> None:
    # Three pairs at 2.5x; in the fourth the floor ran in a fast spell and resolve in a
    # slow one (6x). The ratio of the rounds' medians would be whatever run landed in it.
    rounds = [_round([(0.4, 1.0), (0.4, 1.0), (0.2, 1.2)]), _round([(0.4, 1.0)])]

    paired = median_of_rounds(rounds)["c1"]["paired"]

    assert paired["pairs"] == 4
    assert paired["p50_ratio"] == 2.5
    assert paired["p50_ratio_range"] == [2.5, 6.0]
    assert paired["rps_ratio"] == 0.4


def test_a_report_from_before_pairs_is_judged_by_its_medians() -> None:
    http = {"floor": _run(0.5, 2000), "resolve": _run(1.6, 500)}

    assert p50_over_floor(http) == 1.6 / 0.5
    assert rps_over_floor(http) == 0.25


def test_make_bench_reads_the_cold_targets_from_the_pairs() -> None:
    # Taken apart, this round's figures are its last pair's: 3.5x, and 0.29 of the floor.
    http = median_of_rounds([_round([(0.4, 1.0), (0.4, 1.0), (0.4, 1.4)])])
    sizes = {"10k": {"http": http, "rounds": [{"load_average": 1.0}]}}

    lines = {line["target"]: line for line in targets({"resolve": {"sizes": sizes}})}

    one_client = lines["cold resolve p50 / floor p50, 1 client, 10k"]
    assert one_client["measured"] == 2.5
    assert one_client["met"] is True
    eight_clients = lines["cold resolve req/s / floor req/s, 8 clients, 10k"]
    assert eight_clients["measured"] == 0.4


def _governed_round(triples: list[tuple[float, float, float]]) -> dict[str, Any]:
    """A round whose turns are (floor p50, governed floor p50, resolve p50)."""
    runs = [
        {"floor": _run(f, 1000 / f), "governed": _run(g, 1000 / g), "resolve": _run(r, 1000 / r)}
        for f, g, r in triples
    ]
    by_clients = {**runs[-1], "pairs": [_pair_ratios(p) for p in runs]}
    return {"load_average": 1.0, "c1": by_clients, "c8": by_clients}


def test_cold_resolve_is_judged_against_the_governed_floor_of_the_same_turns() -> None:
    # Issue 46: the key read and one Redis round trip make the governed floor.
    http = median_of_rounds([_governed_round([(0.4, 0.6, 1.0), (0.4, 0.5, 1.0), (0.4, 0.5, 1.1)])])
    sizes = {"10k": {"http": http, "rounds": [{"load_average": 1.0}]}}

    lines = {line["target"]: line for line in targets({"resolve": {"sizes": sizes}})}

    one_client = lines["cold resolve p50 / governed floor p50, 1 client, 10k"]
    assert one_client["measured"] == 2.0
    assert one_client["met"] is True
    eight_clients = lines["cold resolve req/s / governed floor req/s, 8 clients, 10k"]
    assert eight_clients["measured"] == 0.5
    assert eight_clients["met"] is True
    assert lines["cold resolve p50 / floor p50, 1 client, 10k"]["measured"] == 2.5
