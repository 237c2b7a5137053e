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


# ---- issue 26: dynamic against static, first run, file against weights ------


def _issue26_results() -> dict:
    def ok(median: float, first: float, size: int) -> dict:
        return {"status": "ok", "median_ms": median, "first_run_ms": first, "file_bytes": size}

    export = {rt: {"status": "ok"} for rt in report.RUNTIMES}
    return {"settings": {"runtimes": ["tern", "torch", "et_xnnpack"], "threads": [1]},
            "models": {
                "s": {"weights_bytes": 1000, "export": export, "threads": {"1": {
                    "tern": ok(10.0, 11.0, 1010), "torch": ok(20.0, 30.0, 1000), "et_xnnpack": ok(8.0, 40.0, 1000)}}},
                "d": {"weights_bytes": 1000, "static": "s", "description": "s, dynamic",
                      "export": {**export, "et_xnnpack": {"status": "unsupported: dynamic dim"}}, "threads": {"1": {
                    "tern": ok(30.0, 30.0, 1100), "torch": ok(21.0, 21.0, 1000),
                    "et_xnnpack": {"status": "unsupported: XnnpackPartitioner: dynamic dim | refused"}}}}}}


def test_dynamic_table_gives_ratio_to_static_and_why_not() -> None:
    text = "\n".join(report._dynamic_table(_issue26_results(), ["1"]))
    # Tern 30 / 10 misses 1.1x (bold); eager 21 / 20 within; ExecuTorch says why, a pipe escaped
    assert "| d | s | 1 | **3.00x** (30.0 / 10.0) | 1.05x (21.0 / 20.0) | dynamic: unsupported: " \
           "XnnpackPartitioner: dynamic dim / refused |" in text


def test_first_run_table_and_size_table_give_ratios() -> None:
    results = _issue26_results()
    first = "\n".join(report._first_run_table(results, ["s"], ["1"]))
    assert "| s | 1 | 1.10x (11.0) | **1.50x** (30.0) | **5.00x** (40.0) |" in first
    size = "\n".join(report._size_table(results, ["s", "d"]))
    assert "| d | 0.0 | 0.0 (**1.100x**) | 0.0 (1.000x) | unsupported |" in size


def test_goals_26_lists_misses() -> None:
    text = "\n".join(report._goals_26(_issue26_results(), ["s", "d"], ["1"]))
    assert "Dynamic export at most 1.1x the static one's median at the same size: not met (0 of 1 met; " \
           "misses: d 1t 3.00x)" in text
    assert "First run at most 1.2x the median: met (2 of 2 met)" in text
    assert "File at most 1.02x the float weights' bytes: not met (1 of 2 met; misses: d 1.10x)" in text


def test_older_results_without_weights_keep_the_size_table() -> None:
    results = _issue26_results()
    for entry in results["models"].values():
        del entry["weights_bytes"]
    size = "\n".join(report._size_table(results, ["s"]))
    assert "| model | Tern | PyTorch eager | ExecuTorch XNNPACK |" in size and "| s | 0.0 | 0.0 | 0.0 |" in size
    assert "File at most 1.02x the float weights' bytes: no figures." in "\n".join(
        report._goals_26(results, ["s"], ["1"]))


def test_dynamic_models_are_timed_with_their_static_twin() -> None:
    import run  # noqa: E402  bench/run.py

    class Art:
        def __init__(self, name: str) -> None:
            self.name = name

    names = ["bert_minilm_dyn_32", "resnet18", "bert_minilm_32", "bert_minilm_dyn_128"]
    groups = [[a.name for a in g] for g in run._groups([Art(n) for n in names])]
    # the static model leads its group; a dynamic model without its twin runs alone
    assert groups == [["bert_minilm_32", "bert_minilm_dyn_32"], ["resnet18"], ["bert_minilm_dyn_128"]]


def test_float_weight_bytes_counts_tied_weights_once() -> None:
    import torch
    from models import float_weight_bytes  # noqa: E402  bench/models.py

    emb = torch.nn.Embedding(10, 4)
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = emb.weight  # tied
    model = torch.nn.Sequential(emb, head)
    model.register_buffer("ids", torch.arange(3))  # not float: not counted
    model.register_buffer("scale", torch.ones(5))
    assert float_weight_bytes(model) == (40 + 5) * 4


def test_dynamic_cell_gives_the_per_round_ratios() -> None:
    static = _res([[10.0, 10.0], [20.0], [10.0]])  # a noisy middle round falls on both
    dynamic = _res([[11.0, 11.0], [24.0], [10.5]])
    # 1.1x is within the goal ("at most"): not bold
    assert report._dynamic_cell(dynamic, static) == "1.10x (11.0 / 10.0); rounds 1.10x (1.05-1.20)"
