import sys
from pathlib import Path

# Tests run against the installed package (make python); the repo's python/
# folder is only a fallback for the pure-Python parts.
try:
    import tern  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
