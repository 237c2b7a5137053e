"""Tern as it was at an earlier commit, for a same-run A/B (`run.py --baseline REV`).

    pylib, sha = install_baseline("7ea43ed", cache_root, log)
    # PYTHONPATH=pylib imports that commit's tern (exporter and runtime) before the installed one

The commit's tree (`git archive`, so the work tree is not touched) is built
and installed with pip into <cache_root>/baseline/<sha>/pylib, once per
commit; a later run finds it there. The build uses the main environment's
build requirements (scikit-build-core, nanobind, cmake, ninja in .venv), as
`make python` does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv" / "bin"


def commit_of(rev: str) -> str:
    """The full hash of `rev` in this repository; a clear error if it names no commit."""
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                          stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"--baseline {rev}: not a commit of {ROOT} (git rev-parse found none)")
    return proc.stdout.strip()


def install_baseline(rev: str, cache_root: Path, log: Callable[[str], None]) -> tuple[Path, str]:
    """(the folder to put on PYTHONPATH, the commit's hash) for Tern at `rev`."""
    sha = commit_of(rev)
    home = cache_root / "baseline" / sha[:12]
    pylib = home / "pylib"
    done = home / "installed"
    if done.exists():
        log(f"baseline {rev} ({sha[:12]}): installed in {pylib}")
        return pylib, sha
    home.mkdir(parents=True, exist_ok=True)
    log(f"baseline {rev} ({sha[:12]}): building and installing into {pylib} (a few minutes, once) ...")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tern-baseline-") as tmp:
        archive = Path(tmp) / "src.tar"
        with open(archive, "wb") as f:
            subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", sha], stdout=f, check=True)
        src = Path(tmp) / "src"
        with tarfile.open(archive) as t:
            t.extractall(src, filter="data")
        env = dict(os.environ, PATH=f"{VENV}{os.pathsep}{os.environ.get('PATH', '')}")
        env.pop("PYTHONPATH", None)
        cmd = [str(VENV / "python"), "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-q",
               "--target", str(pylib), "--upgrade", f"--config-settings=build-dir={home / 'build'}", str(src)]
        with open(home / "install.log", "w") as out:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        if proc.returncode != 0:
            sys.exit(f"baseline {rev}: pip install failed ({proc.returncode}); see {home / 'install.log'}")
    done.write_text(sha + "\n")
    log(f"baseline {rev}: installed in {time.perf_counter() - t0:.0f} s")
    return pylib, sha
