"""The cpu backend's load checks name the condition that failed
(backends/cpu/loader.h): read from the loaders' sources, no check joins two
conditions with && under one message (TERN_CPU_CHECK and TERN_CPU_NEED
append the condition's text, so each condition is a check of its own), and
no `if (a || b) return ...fail/refuse(...)` refuses two ways at once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CPU = ROOT / "backends" / "cpu"
LOADERS = sorted([CPU / "loader.cpp", CPU / "program.cpp", *(CPU / "ops").glob("*.cpp")])


def _balanced(code: str, start: int) -> int:
    """The index just past the parenthesis that closes the one at code[start]."""
    depth = 0
    for i in range(start, len(code)):
        depth += {"(": 1, ")": -1}.get(code[i], 0)
        if depth == 0:
            return i + 1
    raise ValueError("unbalanced parentheses")


def _top_level(expr: str, op: str) -> bool:
    """Whether `op` ("&&", "||") joins expr's operands outside any parentheses."""
    depth = 0
    for i, ch in enumerate(expr):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and expr.startswith(op, i):
            return True
    return False


def compound_checks(text: str) -> list[str]:
    """The checks of a loader's source that join conditions under one message."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.DOTALL)
    found = []
    for m in re.finditer(r"\b(TERN_CPU_CHECK_AS|TERN_CPU_CHECK|TERN_CPU_NEED)\s*\(", code):
        args = code[m.end() - 1 + 1:_balanced(code, m.end() - 1) - 1]
        parts, depth, last = [], 0, 0
        for i, ch in enumerate(args):  # the macro's arguments, split at top-level commas
            depth += {"(": 1, ")": -1, "{": 1, "}": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                parts.append(args[last:i])
                last = i + 1
        parts.append(args[last:])
        cond = parts[2] if m.group(1) == "TERN_CPU_CHECK_AS" else parts[1]
        if _top_level(cond, "&&"):
            found.append(f"{m.group(1)}({cond.strip()})")
    for m in re.finditer(r"\bif\s*\(", code):
        end = _balanced(code, m.end() - 1)
        cond = code[m.end():end - 1]
        statement = code[end:code.find(";", end) + 1]
        negated = re.fullmatch(r"\s*!\s*(\(.*\))\s*", cond, flags=re.DOTALL)  # !(a && b): refused two ways
        if negated and _balanced(negated.group(1), 0) == len(negated.group(1)):
            cond = negated.group(1)[1:-1]
        if re.search(r"\b(fail|refuse|refuse_as)\s*\(", statement) and (_top_level(cond, "&&") or _top_level(cond, "||")):
            found.append(f"if ({' '.join(cond.split())})")
    return found


@pytest.mark.parametrize("source", LOADERS, ids=lambda p: str(p.relative_to(CPU)))
def test_no_load_check_joins_conditions_under_one_message(source: Path) -> None:
    found = compound_checks(source.read_text())
    assert not found, f"{source.relative_to(ROOT)}: split into one check per condition: {found}"


@pytest.mark.parametrize(("code", "found"), [
    ("TERN_CPU_NEED(failed, a >= 1 && b >= 1);", 1),
    ("TERN_CPU_CHECK(ld, x->numel == y->numel && x->numel >= 1, \"op %u\", oi);", 1),
    ("TERN_CPU_CHECK_AS(ld, Error::NotSupported, v >= 1 && v <= 3, \"v %u\", v);", 1),
    ("if (p == nullptr || p->size() != 2) return ld.ctx.fail(Error::InvalidProgram, \"op %u\", oi);", 1),
    ("if (a && b) {\n  return ld.refuse(failed, \"op %u\", oi);\n}", 1),
    ("TERN_CPU_NEED(failed, !g.depthwise || g.oc == g.c);", 0),
    ("TERN_CPU_CHECK(ld, f(a && b), \"op %u\", oi);", 0),
    ("if (failed) return ld.refuse(failed, \"op %u (%s)\", oi, a && b ? \"x\" : \"y\");", 0),
    ("if (!(a <= k && b <= k)) {\n  return ld.ctx.fail(Error::InvalidProgram, \"op %u\", oi);\n}", 1),
    ("if (!(a <= k) || !ok(b)) return ld.ctx.fail(Error::InvalidProgram, \"op %u\", oi);", 1),
    ("if (!f(a && b)) return ld.ctx.fail(Error::InvalidProgram, \"op %u\", oi);", 0),
    ("if (a || b) continue;", 0),
], ids=["need-and", "check-and", "check-as-and", "if-or-fail", "if-and-refuse", "implication", "nested",
        "message-argument", "if-not-and", "if-not-or-not", "if-not-call", "not-a-check"])
def test_the_scan_finds_exactly_the_compound_checks(code: str, found: int) -> None:
    assert len(compound_checks(code)) == found, compound_checks(code)
