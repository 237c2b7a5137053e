"""The Python side of an application in examples/<app>/, imported under a
name of its own: every app has a convert.py, and the tests of two apps can
run in one pytest worker, where a plain `import convert` would hand the
second the first one's module."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def app_module(app: str, name: str) -> ModuleType:
    """examples/<app>/<name>.py as the module `<app>_<name>` (imported once)."""
    key = f"{app}_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, EXAMPLES / app / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
