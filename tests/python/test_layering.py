"""The architecture's dependency rules (DESIGN.md, "Layout"), read from the
sources' #include lines: each folder includes only the folders below it, and
nothing outside runtime/ includes the generated file-format code (an
application reads a method through MethodMeta instead)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)

# folder -> the project folders its files may include (besides itself): the
# "may depend on" column of DESIGN.md's layout table. tools/, python/src and
# examples/ also include kernels/portable/register.h: the application, not
# extension/Module, picks the kernel libraries it registers.
ALLOWED = {
    "runtime/core": set(),
    "runtime/kernel": {"runtime/core"},
    "runtime/backend": {"runtime/core"},
    "runtime/format": {"runtime/core", "schema"},
    "runtime/executor": {"runtime/core", "runtime/kernel", "runtime/backend", "runtime/format", "schema"},
    "kernels/portable": {"runtime/core", "runtime/kernel", "kernels/portable"},
    "backends/cpu": {"runtime/core", "runtime/backend", "backends/cpu"},
    "extension": {"runtime/core", "runtime/executor", "runtime/format", "runtime/kernel"},
    "tools": {"runtime/core", "runtime/executor", "runtime/format", "runtime/kernel",
              "runtime/backend", "extension", "kernels/portable", "backends/cpu"},
    "python/src": {"runtime/core", "runtime/executor", "runtime/format", "runtime/kernel",
                   "runtime/backend", "extension", "kernels/portable", "backends/cpu"},
    "examples/cpp": {"runtime/core", "runtime/executor", "runtime/kernel", "extension", "kernels/portable"},
}


def _owner(path: str) -> str | None:
    """The ALLOWED folder a path ("runtime/core/error.h") belongs to."""
    return max((f for f in ALLOWED if path == f or path.startswith(f + "/")), key=len, default=None)


def _sources() -> list[Path]:
    return sorted(p for f in ALLOWED for p in (ROOT / f).rglob("*") if p.suffix in (".h", ".cpp", ".def"))


def _includes(path: Path) -> list[str]:
    return INCLUDE.findall(path.read_text())


def violations(rel: str, includes: list[str]) -> list[str]:
    """The includes of the file at `rel` (from the root) that break ALLOWED."""
    me = _owner(str(Path(rel).parent))
    assert me is not None, rel
    bad = []
    for inc in includes:
        target = _owner(str(Path(inc).parent)) or ("schema" if inc.startswith("schema/") else None)
        if target is None:
            continue  # a header beside it, or outside the project
        if target != me and target not in ALLOWED[me]:
            bad.append(inc)
    return bad


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_includes_flow_down_the_layers(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    bad = violations(rel, _includes(path))
    assert not bad, f"{rel} includes {bad}; allowed: {sorted(ALLOWED[_owner(str(Path(rel).parent)) or ''])}"


def test_only_the_runtime_includes_the_generated_schema() -> None:
    users = [str(p.relative_to(ROOT)) for p in _sources() if "schema/tern_generated.h" in _includes(p)]
    assert users and all(u.startswith(("runtime/format/", "runtime/executor/")) for u in users), users
    public = [u for u in users if u.endswith(".h")]
    assert not public, f"public headers include the generated code: {public}"


def test_the_check_flags_upward_includes_and_passes_downward_ones(tmp_path: Path) -> None:
    f = tmp_path / "x.cpp"
    f.write_text('#include <vector>\n#include "extension/module.h"\n  #  include "runtime/core/error.h"\n')
    assert _includes(f) == ["extension/module.h", "runtime/core/error.h"]
    assert violations("runtime/executor/x.cpp", _includes(f)) == ["extension/module.h"]
    assert violations("kernels/portable/op_x.cpp", ["runtime/executor/method.h", "runtime/kernel/kernel.h"]) == [
        "runtime/executor/method.h"
    ]
    assert violations("tools/x.cpp", _includes(f)) == []


def test_the_python_package_has_no_assert_statements() -> None:
    # python -O removes them: every check the exporter relies on must raise.
    found = []
    for path in sorted((ROOT / "python" / "tern").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assert):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


# Python: no import cycle among python/tern's modules, whether the import is
# at the top of a file or inside a function (an import inside a function only
# hides a cycle until someone moves it).

PYTHON = ROOT / "python"


def python_modules(root: Path, package: str = "tern") -> dict[str, Path]:
    """Dotted module name -> its file, for every .py under root/package."""
    mods = {}
    for p in sorted((root / package).rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = p
    return mods


def import_edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of `mods` it imports, at any depth of its code:
    `import a.b` is an edge to a.b; `from a.b import c` to a.b and, if a.b.c
    is a module, to a.b.c (relative imports resolved)."""
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        package = m if path.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            edges[m].update(t for t in targets if t in mods and t != m)
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_python_modules_import_no_cycle() -> None:
    mods = python_modules(PYTHON)
    assert "tern.backends.cpu.compile" in mods and "tern.export" in mods, sorted(mods)
    cycle = find_cycle(import_edges(mods))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_sees_imports_inside_functions_and_from_packages(tmp_path: Path) -> None:
    pkg = tmp_path / "tern"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from tern.a import f\n")
    (pkg / "a.py").write_text("def f():\n    from tern.sub import b\n    return b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("import math\nfrom . import c\n")
    (pkg / "sub" / "c.py").write_text("from tern import version\n")
    (pkg / "version.py").write_text("")
    edges = import_edges(python_modules(tmp_path))
    assert edges["tern.a"] == {"tern.sub", "tern.sub.b"} and edges["tern.sub.b"] == {"tern.sub", "tern.sub.c"}
    # tern -> tern.a (at the top) -> tern.sub.b (in a function) -> tern.sub.c -> tern (the package)
    assert find_cycle(edges) == ["tern", "tern.a", "tern.sub.b", "tern.sub.c", "tern"]
    (pkg / "sub" / "c.py").write_text("from tern.version import x\n")
    assert find_cycle(import_edges(python_modules(tmp_path))) is None
