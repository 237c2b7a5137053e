"""What each of the runtime's error codes means (runtime/core/error.h, enum
tern::Error, in its order: the number is the enum's value), what usually
causes it and what to do: `tern explain CODE` prints a row, docs/errors.md
is the same table (tests/python/test_error_codes.py checks both against
error.h).

    from tern.error_codes import explain
    print(explain("ExecutionFailed"))      # or explain(11), or a whole error message
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorCode:
    number: int
    name: str
    meaning: str
    causes: str
    todo: str


CODES = [ErrorCode(i, *row) for i, row in enumerate([
    ("Ok", "success", "-", "-"),
    ("InvalidArgument", "the caller passed something wrong",
     "an input of another dtype or shape than the method takes, a method or input index that does not "
     "exist, a thread count of 0, an option out of its range",
     "read the message: it names the input and what was expected (tern inspect FILE lists the inputs)"),
    ("NotATernFile", "the bytes are not a Tern file (no 'TERN' magic)",
     "the wrong path, a file cut at its start, another format (.pte, .onnx, .tflite, .gguf)",
     "check the path; export the model with tern.export (or tern llm-export for a GGUF)"),
    ("UnsupportedVersion", "the file's major format version is newer than this runtime reads",
     "a file exported by a newer Tern than the runtime built into the application",
     "update the runtime, or export with the Tern version the application ships"),
    ("Truncated", "the file is shorter than its header says",
     "a download or copy that stopped early, a file still being written",
     "copy the file again; compare its size with the exporter's"),
    ("ChecksumMismatch", "the file's checksum does not match its contents",
     "bytes changed after export: a damaged download, storage corruption, a file edited by hand",
     "copy the file again from its source; never patch a .tern file in place"),
    ("InvalidProgram", "the file is malformed",
     "a failed FlatBuffers verification, an index or size out of range, a misaligned segment, a backend "
     "payload that does not fit its delegate: a damaged or hostile file, or a bug in the exporter",
     "re-export; if a freshly exported file fails, report it with the message (it names the value)"),
    ("NotFound", "something asked for is not in the file",
     "a method name the file does not have, a metadata key that is not there",
     "tern inspect FILE lists the methods and metadata"),
    ("OperatorMissing", "an operator in the file has no kernel for its arguments in this runtime",
     "a runtime built with a selection of ops (TERN_SELECT_OPS) that leaves one out, a dtype a kernel "
     "does not take, a backend the runtime was built without",
     "tern ops --for FILE lists the ops the file needs; rebuild with them"),
    ("OutOfMemory", "an allocator ran out of memory",
     "the memory the application gave the runtime is smaller than the plan (tern inspect shows the "
     "planned bytes), or the system allocator failed",
     "give the method more memory, or export with smaller maximum sizes (dynamic dims' max)"),
    ("MemoryTooSmall", "memory the caller provided is too small or misaligned",
     "fewer planned arenas than the method plans, an arena of fewer bytes than planned or not 64-byte "
     "aligned, scratch reserved at load smaller than new dynamic sizes need",
     "size the arenas from the method's plan (tern inspect FILE, MethodMeta) and align them to 64 bytes"),
    ("ExecutionFailed", "a failure that depends on the data, while running",
     "an index out of range in aten::index, gather, index_select, embedding or scatter (the message names "
     "the index, the dim and its size), an integer division by zero, a loop that ran past "
     "MethodOptions::max_loop_instructions",
     "the message names the instruction, op, node and the value: check that input (eager PyTorch raises "
     "on the same values)"),
    ("AccessFailed", "a loader could not read the file from its source",
     "a path that does not exist or cannot be read, an I/O error, mmap refused",
     "check the path and its permissions"),
    ("NotSupported", "the file uses a feature this runtime does not implement",
     "a backend payload of a newer version, a dtype or format feature compiled out, a platform without "
     "threads asked for several",
     "update the runtime, or export without the feature (the message names it)"),
    ("SelfTestFailed", "an output of a bundled self-test differs from the expected one beyond its tolerance",
     "expected outputs changed after export (their bytes edited and the checksum recomputed), a kernel or "
     "backend that computes wrong results on this device, a runtime built with other kernels than the one "
     "the file was checked with",
     "the message (tern-run MODEL --self-test prints every output) names the output, its error and "
     "tolerance; do not use the model; re-export, or report it with the message"),
])]
BY_NAME = {c.name.lower(): c for c in CODES}


def lookup(code: str | int) -> ErrorCode | None:
    """The code of a name ("ExecutionFailed", any case), a number ("11"), or
    the first name found in a whole message; None if there is none."""
    if isinstance(code, int) or str(code).strip().isdigit():
        n = int(code)
        return CODES[n] if 0 <= n < len(CODES) else None
    text = str(code).strip()
    if text.lower() in BY_NAME:
        return BY_NAME[text.lower()]
    for word in re.findall(r"[A-Za-z]+", text):  # "method 'forward' failed: ExecutionFailed: ..."
        c = BY_NAME.get(word.lower())
        if c is not None and c.name != "Ok":
            return c
    return None


def explain(code: str | int) -> str:
    """A few lines on `code` (see lookup); ValueError if it names no code."""
    c = lookup(code)
    if c is None:
        raise ValueError(f"{code!r} is no Tern error code: the codes are "
                         + ", ".join(f"{x.name} ({x.number})" for x in CODES))
    return (f"{c.name} ({c.number}): {c.meaning}\n"
            f"  usual causes: {c.causes}\n"
            f"  what to do:   {c.todo}")


def markdown_table() -> str:
    """docs/errors.md's table."""
    rows = ["| code | name | meaning | usual causes | what to do |", "|---|---|---|---|---|"]
    rows += [f"| {c.number} | `{c.name}` | {c.meaning} | {c.causes} | {c.todo} |" for c in CODES]
    return "\n".join(rows)
