"""The `tern` command: look inside .tern files and at what the runtime supports.

    tern inspect model.tern     # header, inputs, outputs, ops, memory plan
    tern ops                    # the operators the runtime has kernels for

To run and time a file, use `tern-run` (installed beside this command).
Does not import torch.
"""

from __future__ import annotations

import argparse
import collections
import signal
import sys

_DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]


def _tensor(v: dict) -> str:
    return f"{_DTYPES[v['scalar_type']]}{v['sizes']}"


def inspect_file(path: str) -> str:
    from tern.inspect import read_program

    info = read_program(path)
    h = info["header"]
    lines = [
        f"{path}: Tern format {h['version_major']}.{h['version_minor']}, {h['file_size']:,} bytes, "
        f"written by {info['producer'] or '?'}",
        f"  segments: {len(info['segments'])} ({sum(s['size'] for s in info['segments']):,} bytes of constants)",
    ]
    for m in info["methods"]:
        values = m["values"]
        ins = ", ".join(_tensor(values[i]) for i in m["inputs"])
        outs = ", ".join(_tensor(values[i]) for i in m["outputs"])
        lines.append(f"  method {m['name']}({ins}) -> ({outs})")
        lines.append(f"    {len(m['instructions'])} instructions, {len(values)} values, "
                     f"planned arenas {[f'{a:,} B' for a in m['arena_sizes']]}")
        counts = collections.Counter(m["operators"][i["op"]] for i in m["instructions"] if i["kind"] == "KernelCall")
        for op, n in counts.most_common():
            lines.append(f"    {n:5d} x {op}")
    return "\n".join(lines)


def _runtime_verdict(path: str) -> str | None:
    """The C++ runtime's error for a file it rejects, or None if it loads."""
    from tern.runtime import load

    try:
        load(path)
    except ValueError as e:
        return str(e)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tern", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="describe a .tern file")
    p.add_argument("file")
    sub.add_parser("ops", help="list the operators the runtime has kernels for")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `tern ops | head` ends quietly
    if args.command == "inspect":
        try:
            print(inspect_file(args.file))
        except OSError as e:
            print(f"tern inspect: {e}", file=sys.stderr)
            return 1
        except Exception as e:  # the Python reader does not verify: ask the runtime's verifier why
            print(f"tern inspect: {args.file}: {_runtime_verdict(args.file) or e}", file=sys.stderr)
            return 1
    else:
        from tern.ops import supported_ops

        print("\n".join(sorted(supported_ops())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
