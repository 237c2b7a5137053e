import os
import sys
from pathlib import Path

# Tests run against the installed package (make python); the repo's python/
# folder is only a fallback for the pure-Python parts.
try:
    import tern  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

# Under pytest-xdist (`make test`: one worker per core), eager PyTorch's own
# thread pool would put JOBS x cores threads on the cores: each worker's eager
# reference runs on one thread instead.
if os.environ.get("PYTEST_XDIST_WORKER"):
    import torch

    torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    """`make test` runs pytest-xdist with --dist loadgroup: each test file stays
    on one worker (module-scoped fixtures export their models once), except
    test_opinfo.py, whose ~700 OpInfo tests alone would otherwise set the wall
    time of the run: they go to whichever worker is free."""
    import pytest

    for item in items:
        if item.path.name != "test_opinfo.py":
            item.add_marker(pytest.mark.xdist_group(item.path.name))
