"""The package's version (pyproject.toml's), written into every file's producer string."""

__version__ = "0.1.0"
