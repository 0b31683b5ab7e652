"""The handwritten digits data set that scikit-learn ships inside its package.

`sklearn/datasets/data/digits.csv.gz` holds 1,797 rows of 65 integers: the 8x8 image
(pixel intensities 0..16, row by row) and the digit (0..9). It is read straight from the
installed package (scikit-learn itself is not imported, and nothing is downloaded).
"""

import gzip
import importlib.util
import pathlib
import sys

import numpy as np

N_IMAGES = 1797
N_PIXELS = 64
N_CLASSES = 10


class DataMissing(RuntimeError):
    """The data file is not there; the message says what to install."""


def digits_path():
    """Path of digits.csv.gz inside the installed scikit-learn; DataMissing when absent."""
    spec = importlib.util.find_spec("sklearn")
    install = f"{sys.executable} -m pip install scikit-learn"
    if spec is None or not spec.submodule_search_locations:
        raise DataMissing(
            "the digits data set ships with scikit-learn, which this Python lacks; "
            f"install it with:  {install}   (or run `make demo`, which does)"
        )
    for root in spec.submodule_search_locations:
        path = pathlib.Path(root) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            return path
    raise DataMissing(
        f"scikit-learn is installed but has no datasets/data/digits.csv.gz under "
        f"{list(spec.submodule_search_locations)}; reinstall it with:  {install} --force-reinstall"
    )


def load_digits(path=None):
    """(images, labels): float32 (1797, 64) scaled to [0, 1] and int32 (1797,)."""
    path = pathlib.Path(path) if path else digits_path()
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    if table.shape != (N_IMAGES, N_PIXELS + 1):
        raise DataMissing(f"{path} holds a table of shape {table.shape}; expected (1797, 65)")
    return table[:, :N_PIXELS] / 16.0, table[:, N_PIXELS].astype(np.int32)


def train_test_split(x, y, test_fraction=0.2, seed=0):
    """A shuffled split with a fixed seed: (x_train, y_train, x_test, y_test)."""
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(len(x) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]
