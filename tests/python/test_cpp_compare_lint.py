"""The C++ tests compare floating-point results through tests/cpp/compare.h only.

An error accumulated as ``err = std::max(err, fabs(got - want))`` (or with
``fmax``) ignores a NaN: ``std::max(err, NaN)`` is ``err``, and a check such as
``err > tol`` is false for a NaN, so a kernel writing NaN passes. compare.h's
``all_close()`` checks each element and fails on a NaN or infinity the oracle
does not have. This lint fails if a file under tests/cpp/ other than compare.h
accumulates an error, difference or deviation with a max (standard library
only; no build needed).
"""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
CPP = ROOT / "tests" / "cpp"
ALLOWED = {"compare.h"}

# `x = std::max(x, ...)`, `x = fmax(x, ...)`, `x = std::max<double>(x, ...)`,
# `x = std::fmax(x, ...)`, and the arguments swapped (`std::max(..., x)` at the end).
_MAX = r"(?:std\s*::\s*)?f?max\s*(?:<[^<>()]*>)?\s*\("
_SELF_MAX = re.compile(r"(?P<var>[A-Za-z_]\w*(?:\[[^\]]*\])?)\s*=\s*" + _MAX + r"(?P<args>[^;]*);")
# A name that says it holds an error.
_ERROR_NAME = re.compile(r"err|diff|dev|delta|dist|mismatch|ulp|worst", re.IGNORECASE)
# An argument that is the size of a difference: fabs(a - b), abs(a - b).
_ABS_DIFF = re.compile(r"\babs\s*\([^;]*[^eE\s(,]\s*-\s*[^;]*\)|\bfabsf?\s*\([^;]*[^eE\s(,]\s*-")


def _strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def violations(text):
    """(line number, source line) of each error accumulated with a max."""
    out = []
    code = _strip_comments(text)
    lines = text.splitlines()
    for m in _SELF_MAX.finditer(code):
        var, args = m.group("var"), m.group("args")
        first = args.split(",", 1)[0].strip()
        last = args.rsplit(",", 1)[-1].strip().rstrip(")").strip()
        if var not in (first, last):
            continue  # not an accumulation into var
        if _ERROR_NAME.search(var) or _ABS_DIFF.search(args):
            line = code.count("\n", 0, m.start()) + 1
            out.append((line, lines[line - 1].strip()))
    return out


def test_lint_flags_the_nan_blind_patterns():
    bad = [
        "err = std::max(err, double(std::fabs(gf[k] - w[k])));",
        "max_err = std::fmax(max_err, e);",
        "worst = std::max<double>(worst, d);",
        "m = fmax(m, fabs(got[i] - want[i]));",
        "e = std::max(std::abs(a[i] - b[i]), e);",
        "total_diff = std::max(\n    total_diff,\n    x);",
    ]
    for line in bad:
        assert violations(line), line
    good = [
        "mx = std::max(mx, s[j]);",  # a softmax's running max, not an error
        "want_hi = std::fmax(want_hi, v);",
        "scale = std::max(scale, std::fabs(r));",  # a magnitude, not a difference
        "acc = g.max ? std::max(acc, v) : acc + v;",
        "// err = std::max(err, fabs(a - b));",
        "EXPECT_TRUE(test::all_close(got, want, 1e-4));",
    ]
    for line in good:
        assert not violations(line), line


def test_no_cpp_test_accumulates_an_error_with_max_outside_compare_h():
    files = sorted(p for p in CPP.iterdir() if p.suffix in (".cpp", ".h") and p.name not in ALLOWED)
    assert files, f"no C++ tests under {CPP}"
    found = []
    for path in files:
        for line, src in violations(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(ROOT)}:{line}: {src}")
    assert not found, (
        "errors accumulated with std::max/fmax ignore NaN (std::max(err, NaN) is err); "
        "compare through tests/cpp/compare.h's all_close() instead:\n  " + "\n  ".join(found)
    )
