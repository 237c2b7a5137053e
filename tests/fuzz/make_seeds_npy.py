"""Writes the seed corpus of fuzz_npy in tests/fuzz/seeds_npy/: tiny .npy
files as numpy writes them, one per kind of header the reader takes (each
.npy dtype it knows, 0-d, 1-d, a zero-size dim, the most dims, versions 2.0
and 3.0 of the format).

    .venv/bin/python tests/fuzz/make_seeds_npy.py
"""

from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

OUT = Path(__file__).resolve().parent / "seeds_npy"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    arrays = {
        "float32_2x3": np.arange(6, dtype=np.float32).reshape(2, 3),
        "int64_4": np.array([-1, 0, 1, 2**40], dtype=np.int64),
        "bool_5": np.array([True, False, True, True, False]),
        "float64_0d": np.array(3.5),
        "int32_0x3": np.zeros((0, 3), dtype=np.int32),
        "float16_2x2x2": np.linspace(-1, 1, 8, dtype=np.float16).reshape(2, 2, 2),
        "uint8_8dims": np.arange(2, dtype=np.uint8).reshape(1, 1, 1, 1, 1, 1, 1, 2),
        "int8_3": np.array([-128, 0, 127], dtype=np.int8),
        "int16_2": np.array([-300, 300], dtype=np.int16),
    }
    for name, a in arrays.items():
        np.save(OUT / f"{name}.npy", a)
    for version in ((2, 0), (3, 0)):
        with open(OUT / f"float32_2x3_v{version[0]}.npy", "wb") as f:
            npy_format.write_array(f, arrays["float32_2x3"], version=version)


if __name__ == "__main__":
    main()
