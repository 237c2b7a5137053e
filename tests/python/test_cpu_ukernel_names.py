"""The cpu backend's microkernel names, read from the sources: every function
with external linkage that backends/cpu/ukernels/<isa>/ defines ends in
__<isa> and follows <dtype>_<op>_ukernel[_<tile>]__<isa> (ukernels/ukernels.h;
dtype f32, qs8, or qb for GGUF's blocks, ukernels/qb.h),
the GEMMs and Winograd transforms with their tile; isa.cpp assigns kernels
only through TERN_CPU_USE, which records each name with its pointer; and the
code the ISA folders share through headers has internal linkage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UKERNELS = ROOT / "backends" / "cpu" / "ukernels"
ISAS = sorted(p.name for p in UKERNELS.iterdir() if p.is_dir() and p.name != "common")

# A definition's head: what stands between the last ';', '{' or '}' and its '{'.
FUNCTION_HEAD = re.compile(r"^(?P<pre>[\w\s:<>,*&]*?)\b(?P<name>\w+)\s*\([^;{}]*\)\s*(?:const\s*)?$", re.DOTALL)
NAME = re.compile(r"^(?:f32|qs8|qb)_[a-z0-9_]+?(?:_(?P<tile>\d+x\d+))?__(?P<isa>[a-z0-9]+)$")
TILED = ("igemm_ukernel", "igemm_f32_ukernel", "winograd_in_ukernel", "winograd_out_ukernel", "gemm_ukernel")


def _code(text: str) -> str:
    """text without comments, string and character literals, or preprocessor lines."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.DOTALL)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"' + r"|'(?:\\.|[^'\\\n])*'", '""', text)
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.MULTILINE)


def namespace_scope_functions(text: str) -> list[tuple[str, bool, bool]]:
    """(name, external, in an unnamed namespace) of each function a C++ file
    defines at namespace scope; external: with external linkage and not
    inline (nor static, nor a template, nor in an unnamed namespace)."""
    code = _code(text)
    scopes: list[str] = []  # "named", "anonymous" or "other", innermost last
    found, start = [], 0
    for i, ch in enumerate(code):
        if ch in ";{}":
            head = code[start:i].strip()
            start = i + 1
            if ch == "{":
                if re.fullmatch(r"(?:inline\s+)?namespace", head):
                    scopes.append("anonymous")
                    continue
                if re.fullmatch(r"(?:inline\s+)?namespace\s+[\w:]+", head):
                    scopes.append("named")
                    continue
                m = FUNCTION_HEAD.match(re.sub(r"^template\s*<[^{};]*?>\s*", "", head))
                if m and m.group("pre").strip() and "other" not in scopes:
                    anonymous = "anonymous" in scopes
                    words = set(m.group("pre").split())
                    external = not anonymous and not {"static", "inline"} & words and not head.startswith("template")
                    found.append((m.group("name"), external, anonymous))
                scopes.append("other")
            elif ch == "}" and scopes:
                scopes.pop()
    return found


def external_functions(text: str) -> list[str]:
    """The functions a C++ file defines with external linkage (not inline)."""
    return [name for name, external, _ in namespace_scope_functions(text) if external]


def _problems(isa: str, text: str, where: str) -> list[str]:
    """What is wrong with the kernel names a file of ukernels/<isa>/ defines."""
    problems = []
    if "##" in _code(text):
        problems.append(f"{where}: pastes tokens (##); define each kernel by its full name")
    for name in external_functions(text):
        m = NAME.match(name)
        if m is None or m.group("isa") != isa:
            problems.append(f"{where}: {name} does not follow <dtype>_<op>_ukernel[_<tile>]__{isa}")
        elif any(t in name for t in TILED) and m.group("tile") is None:
            problems.append(f"{where}: {name} has no tile (_<rows>x<columns>__{isa})")
    return problems


@pytest.mark.parametrize("isa", ISAS)
def test_every_kernel_an_isa_folder_defines_is_named_for_that_isa(isa: str) -> None:
    files = sorted((UKERNELS / isa).glob("*.cpp"))
    names = [n for f in files for n in external_functions(f.read_text())]
    assert names, f"found no kernels in ukernels/{isa}/ (does the parser still read them?)"
    problems = [p for f in files for p in _problems(isa, f.read_text(), str(f.relative_to(ROOT)))]
    assert not problems, "\n".join(problems)


def test_every_defined_kernel_is_declared_in_the_ukernel_headers() -> None:
    headers = "".join((UKERNELS / h).read_text() for h in ("ukernels.h", "qs8.h", "qb.h"))
    missing = [n for isa in ISAS for f in sorted((UKERNELS / isa).glob("*.cpp"))
               for n in external_functions(f.read_text()) if not re.search(rf"\b{n}\b", headers)]
    assert not missing, missing


def test_isa_cpp_assigns_kernels_only_through_the_naming_macro() -> None:
    """A kernel set's pointer set without TERN_CPU_USE would keep the name
    of the kernel it replaced (the one tern-run --verbose reports)."""
    code = _code((ROOT / "backends" / "cpu" / "isa.cpp").read_text())
    direct = re.findall(r"\b\w+\.\w+(?:\[\d+\])?\s*=\s*(?:\w+\s*\{\s*|\{\s*)?\w+__\w+", code)
    assert not direct, direct


@pytest.mark.parametrize("header", sorted((UKERNELS / "common").glob("*.h")) + [UKERNELS / "qs8.h", UKERNELS / "qb.h"],
                         ids=lambda p: p.name)
def test_code_the_isa_files_share_through_headers_is_internal_to_each(header: Path) -> None:
    """A header's inline function of external linkage, compiled into files
    built with different -m flags, is one symbol to the linker, which keeps
    one file's copy for all of them (ukernels/common/avx512.h)."""
    shared = [name for name, _, anonymous in namespace_scope_functions(header.read_text()) if not anonymous]
    assert not shared, f"{header.relative_to(ROOT)}: {shared} outside an unnamed namespace"


@pytest.mark.parametrize(("source", "names"), [
    ("namespace tern {\nnamespace cpu {\nnamespace {\nvoid helper(int) {}\n}  // namespace\n"
     "void f32_vact_ukernel__avx2(int kind, float* v, size_t n) { helper(kind); }\n"
     "static void alone() {}\ninline int twice(int x) { return 2 * x; }\n"
     "template <int N>\nvoid tiled(float* v) { for (int i = 0; i < N; ++i) { v[i] = 0; } }\n"
     "struct Row { void store(float* p) const { *p = 0; } };\n"
     "void qs8_igemm_ukernel_3x16__avx2(size_t mr,\n    const int8_t* const* a) {\n  if (mr) { return; }\n}\n"
     "}  // namespace cpu\n}  // namespace tern\n",
     ["f32_vact_ukernel__avx2", "qs8_igemm_ukernel_3x16__avx2"]),
], ids=["mixed"])
def test_the_parser_finds_exactly_the_external_definitions(source: str, names: list[str]) -> None:
    assert external_functions(source) == names
    shared = [n for n, _, anonymous in namespace_scope_functions(source) if not anonymous]
    assert shared == ["f32_vact_ukernel__avx2", "alone", "twice", "tiled", "qs8_igemm_ukernel_3x16__avx2"]


@pytest.mark.parametrize(("name", "isa", "why"), [
    ("f32_vact_ukernel__avx512", "avx512vnni", "does not follow"),
    ("qs8_igemm_ukernel__avx2_3x16", "avx2", "does not follow"),
    ("qs8_igemm_ukernel__avx2", "avx2", "has no tile"),
    ("f32_winograd_in_ukernel__neon", "neon", "has no tile"),
], ids=["other-isa", "tile-after-isa", "igemm-without-tile", "winograd-without-tile"])
def test_a_misnamed_kernel_is_reported(name: str, isa: str, why: str) -> None:
    source = f"namespace tern {{\nvoid {name}(int n) {{ (void)n; }}\n}}  // namespace tern\n"
    problems = _problems(isa, source, "k.cpp")
    assert len(problems) == 1 and why in problems[0], problems
