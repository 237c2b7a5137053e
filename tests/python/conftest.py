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

