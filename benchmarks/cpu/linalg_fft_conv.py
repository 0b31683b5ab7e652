#!/usr/bin/env python3
"""Linear algebra, FFT and convolution on the CPU: kiln against NumPy and PyTorch-CPU (when
installed), the workloads of benchmarks/gpu/linalg_fft_conv.py at sizes a CPU finishes.

    python benchmarks/cpu/linalg_fft_conv.py [--quick] [--out-dir DIR]
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "gpu"))

from linalg_fft_conv import main  # noqa: E402

if __name__ == "__main__":
    main(default_device="cpu")
