"""bench/report.py's A/B table (run.py --baseline): per-round medians and the
verdict, on made-up samples whose answer is known."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import report  # noqa: E402


def _res(rounds: list[list[float]]) -> dict:
    samples = [x for r in rounds for x in r]
    return {"status": "ok", "median_ms": sorted(samples)[len(samples) // 2], "samples_ms": samples,
            "round_sizes": [len(r) for r in rounds]}


def _results(tern: dict, base: dict) -> dict:
    return {"settings": {"baseline": "abc1234", "baseline_commit": "abc1234" + "0" * 33, "threads": [1]},
            "models": {"m": {"threads": {"1": {"tern": tern, "tern_base": base}}}}}


def test_round_medians_split_by_round() -> None:
    # three rounds of 3, 2 and 1 runs: medians 2, 15 (even count: the mean of the middle two), 7
    assert report._round_medians(_res([[3.0, 1.0, 2.0], [10.0, 20.0], [7.0]])) == [2.0, 15.0, 7.0]


def test_slower_in_every_round_is_listed() -> None:
    base = _res([[10.0, 10.2], [20.0, 19.8], [10.1, 9.9]])  # a noisy middle round falls on both
    tern = _res([[10.5, 10.7], [21.0, 20.8], [10.6, 10.4]])
    text = "\n".join(report._baseline_table(_results(tern, base), ["m"], ["1"]))
    assert "Slower in every round: m 1t" in text
    assert "| 1.050x (1.050-1.050) |" in text


def test_within_noise_is_not_listed() -> None:
    base = _res([[10.0], [10.0], [10.0]])
    tern = _res([[10.3], [9.8], [10.0]])  # faster in one round
    text = "\n".join(report._baseline_table(_results(tern, base), ["m"], ["1"]))
    assert "Slower in every round: none." in text
    assert "| 1.000x (0.980-1.030) |" in text


def test_no_table_without_a_baseline() -> None:
    results = _results(_res([[1.0]]), _res([[1.0]]))
    results["settings"]["baseline"] = None
    assert report._baseline_table(results, ["m"], ["1"]) == []
    assert "tern_base" not in report._runtimes(results)


def test_run_py_default_arguments_parse(monkeypatch) -> None:
    # `make bench` passes no arguments: the default runtimes must not ask for --baseline
    import run  # noqa: E402  bench/run.py

    monkeypatch.setattr(sys, "argv", ["run.py"])
    args = run.parse_args()
    assert "tern" in args.runtimes and "tern_base" not in args.runtimes
    monkeypatch.setattr(sys, "argv", ["run.py", "--baseline", "abc1234"])
    assert "tern_base" in run.parse_args().runtimes
