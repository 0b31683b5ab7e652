"""kiln.core.random gives MLX's numbers for the same key or seed.

Each case below is a list of Python expressions over ``mx`` (kiln.core here, mlx.core when
the golden values are made); the value of every expression that returns an array is
compared with GOLDEN, which holds what MLX 0.32.4's CPU build returned for the same
expressions: dtype, shape and values (floats as the exact float64 of each element, complex
as (real, imag) pairs). MLX's Python API has no ``random.bits``; its values come from MLX's
C++ ``mlx::core::random::bits``.

To regenerate GOLDEN (after changing CASES), with MLX's CPU wheel in a virtual
environment (its headers and libmlx.so are used for ``bits``) and a C++ compiler:

    /path/to/mlx-venv/bin/python python/tests/gen_random_mlx_golden.py

which rewrites the block between the GOLDEN markers of this file.

On the GPU, the samplers whose values pass through a logarithm (normal, laplace, gumbel,
truncated_normal, categorical, multivariate_normal) are compared within a few ulp: the
CPU, as MLX's CPU backend, uses the C library's logf and log1pf, which no GPU function
reproduces bit for bit. Everything else is compared exactly on every device.
"""

import math

import numpy as np
import pytest

import kiln.core as mx

inf, nan = math.inf, math.nan

# name -> expressions; `k(n)` is mx.random.key(n).
CASES = {
    # ------------------------------------------------------------ keys and split
    "key": [f"mx.random.key({s})" for s in (0, 3, 7, 2**40 + 17, 2**64 - 1)],
    "split": [
        "mx.random.split(k(3))",
        "mx.random.split(k(0))",
        "mx.random.split(k(2**40 + 17))",
        "mx.random.split(k(2**64 - 1))",
        "mx.random.split(k(7), 5)",
        "mx.random.split(k(7), 3)",
        "mx.random.split(k(7), 1)",
        "mx.random.split(k(7), 0)",
        "mx.random.split(mx.random.split(k(7), 3)[1], 4)",
    ],
    # ------------------------------------------------------------ bits: every width, odd sizes
    "bits_w1": [
        f"mx.random.bits({s}, 1, key=k({seed}))"
        for seed in (3, 2**40 + 17)
        for s in ("()", "(1,)", "(2,)", "(3,)", "(5,)", "(7,)", "(9,)", "(13,)", "(2, 3)", "(0,)")
    ],
    "bits_w2": [
        f"mx.random.bits({s}, 2, key=k({seed}))"
        for seed in (3, 2**40 + 17)
        for s in ("()", "(1,)", "(2,)", "(3,)", "(5,)", "(2, 3)", "(4, 0)")
    ],
    "bits_w4": [
        f"mx.random.bits({s}, 4, key=k({seed}))"
        for seed in (3, 2**40 + 17)
        for s in ("()", "(1,)", "(2,)", "(3,)", "(5,)", "(2, 3)", "(33,)", "(0,)")
    ]
    + ["mx.random.bits((4,), key=k(0))"],
    # ------------------------------------------------------------ uniform
    "uniform": [
        "mx.random.uniform(key=k(1))",
        "mx.random.uniform(shape=(5,), key=k(1))",
        "mx.random.uniform(-2, 3, (2, 3), key=k(1))",
        "mx.random.uniform(-2, 3, (7,), dtype=mx.float16, key=k(1))",
        "mx.random.uniform(-2, 3, (7,), dtype=mx.bfloat16, key=k(1))",
        "mx.random.uniform(0.1, 0.7, (5,), dtype=mx.float16, key=k(1))",
        "mx.random.uniform(3, -2, (5,), key=k(2))",
        "mx.random.uniform(mx.array([[0.0], [10.0]]), mx.array([1.0, 2.0, 30.0]), (2, 3), key=k(2))",
        "mx.random.uniform(mx.array([-1, 4]), 9, (3, 2), key=k(2))",
        "mx.random.uniform(shape=(0, 3), key=k(2))",
        "mx.random.uniform(1.0, 1.0000001, (6,), key=k(2))",
    ],
    # ------------------------------------------------------------ normal
    "normal": [
        "mx.random.normal(key=k(2))",
        "mx.random.normal((7,), key=k(2))",
        "mx.random.normal((2, 3), dtype=mx.float16, key=k(2))",
        "mx.random.normal((2, 3), dtype=mx.bfloat16, key=k(2))",
        "mx.random.normal((5,), dtype=mx.float64, key=k(2))",
        "mx.random.normal((5,), loc=1.5, scale=0.5, key=k(3))",
        "mx.random.normal((5,), dtype=mx.float16, loc=1.5, scale=0.5, key=k(3))",
        "mx.random.normal((5,), dtype=mx.bfloat16, loc=-3.0, scale=4.0, key=k(3))",
        "mx.random.normal((2, 3), loc=mx.array([1.0, 2.0, 3.0]), scale=mx.array([[1.0], [0.1]]), key=k(3))",
        "mx.random.normal((0,), key=k(3))",
        "mx.random.normal((33,), key=k(4))",
    ],
    "normal_complex": [
        "mx.random.normal(dtype=mx.complex64, key=k(2))",
        "mx.random.normal((5,), dtype=mx.complex64, key=k(2))",
        "mx.random.normal((2, 2), dtype=mx.complex64, loc=3.0, scale=2.0, key=k(2))",
        "mx.random.normal((3,), dtype=mx.complex64, loc=1 + 1j, key=k(0))",
    ],
    # ------------------------------------------------------------ integers and bools
    "randint": [
        "mx.random.randint(-5, 20, (9,), key=k(4))",
        "mx.random.randint(-5, 20, (9,), dtype=mx.int64, key=k(4))",
        "mx.random.randint(0, 200, (9,), dtype=mx.uint8, key=k(4))",
        "mx.random.randint(-100, 100, (9,), dtype=mx.int8, key=k(4))",
        "mx.random.randint(0, 2, (9,), dtype=mx.bool_, key=k(4))",
        "mx.random.randint(0, 7, key=k(4))",
        "mx.random.randint(mx.array([[0], [100]]), mx.array([3, 50, 1000]), (2, 3), key=k(5))",
        "mx.random.randint(10, -10, (4,), key=k(5))",
        "mx.random.randint(-(2**30), 2**30, (6,), key=k(5))",
        "mx.random.randint(0, 2**20, (6,), dtype=mx.uint32, key=k(5))",
    ],
    "bernoulli": [
        "mx.random.bernoulli(key=k(5))",
        "mx.random.bernoulli(0.3, (11,), key=k(5))",
        "mx.random.bernoulli(mx.array([0.1, 0.5, 0.9]), (2, 3), key=k(5))",
        "mx.random.bernoulli(mx.array([0.0, 1.0, 0.25, 0.75]), key=k(6))",
        "mx.random.bernoulli(mx.array(0.5, dtype=mx.float16), (7,), key=k(6))",
    ],
    # ------------------------------------------------------------ other distributions
    "truncated_normal": [
        "mx.random.truncated_normal(-1, 2, (9,), key=k(6))",
        "mx.random.truncated_normal(-1, 2, (9,), dtype=mx.float16, key=k(6))",
        "mx.random.truncated_normal(-1, 2, (9,), dtype=mx.bfloat16, key=k(6))",
        "mx.random.truncated_normal(mx.array([-2.0, 0.0]), mx.array([[0.0], [1.0], [3.0]]), key=k(7))",
        "mx.random.truncated_normal(2.0, -2.0, (3,), key=k(7))",
        "mx.random.truncated_normal(0.5, 0.75, key=k(7))",
    ],
    "gumbel": [
        "mx.random.gumbel((9,), key=k(8))",
        "mx.random.gumbel((2, 3), dtype=mx.float16, key=k(8))",
        "mx.random.gumbel((5,), dtype=mx.bfloat16, key=k(8))",
        "mx.random.gumbel(key=k(9))",
    ],
    "categorical": [
        "mx.random.categorical(mx.array([0.0, 1.0, 2.0]), key=k(9))",
        "mx.random.categorical(mx.array([0.0, 1.0, 2.0]), num_samples=12, key=k(9))",
        "mx.random.categorical(mx.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), key=k(9))",
        "mx.random.categorical(mx.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), axis=0, key=k(9))",
        "mx.random.categorical(mx.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), shape=(5, 3), key=k(9))",
        "mx.random.categorical(mx.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), axis=0, num_samples=5, key=k(9))",
        "mx.random.categorical(mx.array([[0.5, -1.0], [2.0, 0.0]], dtype=mx.float16), num_samples=6, key=k(10))",
        # One distribution with num_samples: inverse-CDF sampling.
        "mx.random.categorical(mx.array([[0.0, 1.0, 2.0]]), num_samples=5, key=k(11))",
        "mx.random.categorical(mx.array([[0.0], [1.0], [2.0]]), axis=0, num_samples=5, key=k(11))",
        "mx.random.categorical(mx.array([0.0, 1.0, 2.0]), num_samples=1, key=k(11))",
        "mx.random.categorical(mx.array([float('-inf')] * 3), num_samples=8, key=k(12))",
        "mx.random.categorical(mx.array([0.0, float('inf'), 1.0, float('inf')]), num_samples=8, key=k(12))",
        "mx.random.categorical(mx.log(mx.array([0.1, 0.0, 0.6, 0.3])), num_samples=20, key=k(13))",
        "mx.random.categorical(mx.array([0.5, -1.0, 3.0], dtype=mx.float64), num_samples=6, key=k(13))",
        "mx.random.categorical(mx.array([0.5, -1.0, 3.0], dtype=mx.bfloat16), num_samples=6, key=k(13))",
    ],
    "laplace": [
        "mx.random.laplace(key=k(10))",
        "mx.random.laplace((9,), key=k(10))",
        "mx.random.laplace((2, 3), dtype=mx.float16, key=k(10))",
        "mx.random.laplace((5,), dtype=mx.bfloat16, key=k(10))",
        "mx.random.laplace((5,), dtype=mx.float64, key=k(10))",
        "mx.random.laplace((5,), loc=1.5, scale=0.25, key=k(11))",
        "mx.random.laplace((5,), dtype=mx.float16, loc=-2.0, scale=3.0, key=k(11))",
    ],
    "permutation": [
        "mx.random.permutation(10, key=k(11))",
        "mx.random.permutation(1, key=k(11))",
        "mx.random.permutation(0, key=k(11))",
        "mx.random.permutation(33, key=k(12))",
        "mx.random.permutation(mx.arange(12).reshape(3, 4), key=k(12))",
        "mx.random.permutation(mx.arange(12).reshape(3, 4), axis=1, key=k(12))",
        "mx.random.permutation(mx.arange(12).reshape(3, 4), axis=-1, key=k(13))",
        "mx.random.permutation(mx.array([2.5, -1.0, 4.0, 0.5]), key=k(13))",
    ],
    "multivariate_normal": [
        "mx.random.multivariate_normal(mx.array([1.0, -1.0]), mx.array([[2.0, 0.5], [0.5, 1.0]]), (4,), key=k(12), stream=mx.cpu)",
        "mx.random.multivariate_normal(mx.array([[0.0, 7.0], [1.0, 2.0], [3.0, 4.0]]), mx.array([[1.0, 0.5], [0.5, 1.0]]), (2, 3), key=k(13), stream=mx.cpu)",
    ],
    # ------------------------------------------------------------ the global key
    "global_seed": [
        "mx.random.seed(7)",
        "mx.random.normal((3,))",
        "mx.random.uniform(shape=(2,))",
        "mx.random.randint(0, 10, (4,))",
        "mx.random.bernoulli(0.5, (3,))",
        "mx.random.gumbel((2,))",
        "mx.random.categorical(mx.array([0.0, 1.0, 2.0]), num_samples=3)",
        "mx.random.categorical(mx.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]), num_samples=3)",
        "mx.random.truncated_normal(-1, 1, (2,))",
        "mx.random.laplace((2,))",
        "mx.random.permutation(5)",
        "mx.random.normal((2,), dtype=mx.complex64)",
        "mx.random.uniform()",
        "mx.random.seed(7)",
        "mx.random.normal((3,))",
        "mx.random.seed(0)",
        "mx.random.uniform(shape=(3,))",
        "mx.random.uniform(shape=(3,))",
        "mx.random.seed(2**40 + 5)",
        "mx.random.normal((2, 2), dtype=mx.float16)",
    ],
}

# Samplers whose values pass through logf/log1pf (compared within a few ulp on the GPU).
THROUGH_LOG = {
    "normal",
    "normal_complex",
    "truncated_normal",
    "gumbel",
    "categorical",
    "laplace",
    "multivariate_normal",
    "global_seed",
}

# BEGIN GOLDEN (generated by gen_random_mlx_golden.py from MLX 0.32.4's CPU build; do not edit)
# fmt: off
GOLDEN = {
    'key': [
        ('mx.random.key(0)', {'dtype': 'uint32', 'shape': [2], 'values': [0, 0]}),
        ('mx.random.key(3)', {'dtype': 'uint32', 'shape': [2], 'values': [0, 3]}),
        ('mx.random.key(7)', {'dtype': 'uint32', 'shape': [2], 'values': [0, 7]}),
        ('mx.random.key(1099511627793)', {'dtype': 'uint32', 'shape': [2], 'values': [256, 17]}),
        ('mx.random.key(18446744073709551615)', {'dtype': 'uint32', 'shape': [2], 'values': [4294967295, 4294967295]}),
    ],
    'split': [
        ('mx.random.split(k(3))', {'dtype': 'uint32', 'shape': [2, 2], 'values': [1024511538, 47757680, 2603795180, 1437962712]}),
        ('mx.random.split(k(0))', {'dtype': 'uint32', 'shape': [2, 2], 'values': [4146024105, 967050713, 2718843009, 1272950319]}),
        ('mx.random.split(k(2**40 + 17))', {'dtype': 'uint32', 'shape': [2, 2], 'values': [3241490160, 1159520170, 2036465702, 2728043904]}),
        ('mx.random.split(k(2**64 - 1))', {'dtype': 'uint32', 'shape': [2, 2], 'values': [399813750, 2724076130, 1719144391, 478544778]}),
        ('mx.random.split(k(7), 5)', {'dtype': 'uint32', 'shape': [5, 2], 'values': [3583082021, 1059767885, 1158596951, 3570483602, 902484696, 1947592014, 964771841, 2936027381, 2956069637, 3584898772]}),
        ('mx.random.split(k(7), 3)', {'dtype': 'uint32', 'shape': [3, 2], 'values': [276534068, 861967409, 1905761346, 1641862660, 2900896126, 1402713516]}),
        ('mx.random.split(k(7), 1)', {'dtype': 'uint32', 'shape': [1, 2], 'values': [195045567, 4062205631]}),
        ('mx.random.split(k(7), 0)', {'dtype': 'uint32', 'shape': [0, 2], 'values': []}),
        ('mx.random.split(mx.random.split(k(7), 3)[1], 4)', {'dtype': 'uint32', 'shape': [4, 2], 'values': [3113830705, 2473566846, 3484903687, 885295984, 4142712990, 688303238, 3538723366, 2648135451]}),
    ],
    'bits_w1': [
        ('mx.random.bits((), 1, key=k(3))', {'dtype': 'uint8', 'shape': [], 'values': [155]}),
        ('mx.random.bits((1,), 1, key=k(3))', {'dtype': 'uint8', 'shape': [1], 'values': [155]}),
        ('mx.random.bits((2,), 1, key=k(3))', {'dtype': 'uint8', 'shape': [2], 'values': [155, 99]}),
        ('mx.random.bits((3,), 1, key=k(3))', {'dtype': 'uint8', 'shape': [3], 'values': [155, 99, 138]}),
        ('mx.random.bits((5,), 1, key=k(3))', {'dtype': 'uint8', 'shape': [5], 'values': [75, 52, 5, 116, 142]}),
        ('mx.random.bits((7,), 1, key=k(3))', {'dtype': 'uint8', 'shape': [7], 'values': [75, 52, 5, 116, 142, 14, 47]}),
        ('mx.random.bits((9,), 1, key=k(3))', {'dtype': 'uint8', 'shape': [9], 'values': [50, 206, 16, 61, 147, 182, 96, 5, 236]}),
        ('mx.random.bits((13,), 1, key=k(3))', {'dtype': 'uint8', 'shape': [13], 'values': [50, 206, 16, 61, 112, 185, 216, 2, 236, 194, 50, 155, 216]}),
        ('mx.random.bits((2, 3), 1, key=k(3))', {'dtype': 'uint8', 'shape': [2, 3], 'values': [75, 52, 5, 116, 142, 14]}),
        ('mx.random.bits((0,), 1, key=k(3))', {'dtype': 'uint8', 'shape': [0], 'values': []}),
        ('mx.random.bits((), 1, key=k(1099511627793))', {'dtype': 'uint8', 'shape': [], 'values': [25]}),
        ('mx.random.bits((1,), 1, key=k(1099511627793))', {'dtype': 'uint8', 'shape': [1], 'values': [25]}),
        ('mx.random.bits((2,), 1, key=k(1099511627793))', {'dtype': 'uint8', 'shape': [2], 'values': [25, 153]}),
        ('mx.random.bits((3,), 1, key=k(1099511627793))', {'dtype': 'uint8', 'shape': [3], 'values': [25, 153, 15]}),
        ('mx.random.bits((5,), 1, key=k(1099511627793))', {'dtype': 'uint8', 'shape': [5], 'values': [36, 34, 177, 203, 238]}),
        ('mx.random.bits((7,), 1, key=k(1099511627793))', {'dtype': 'uint8', 'shape': [7], 'values': [36, 34, 177, 203, 238, 177, 125]}),
        ('mx.random.bits((9,), 1, key=k(1099511627793))', {'dtype': 'uint8', 'shape': [9], 'values': [240, 54, 53, 193, 137, 218, 148, 89, 38]}),
        ('mx.random.bits((13,), 1, key=k(1099511627793))', {'dtype': 'uint8', 'shape': [13], 'values': [240, 54, 53, 193, 170, 223, 28, 69, 38, 0, 98, 121, 128]}),
        ('mx.random.bits((2, 3), 1, key=k(1099511627793))', {'dtype': 'uint8', 'shape': [2, 3], 'values': [36, 34, 177, 203, 238, 177]}),
        ('mx.random.bits((0,), 1, key=k(1099511627793))', {'dtype': 'uint8', 'shape': [0], 'values': []}),
    ],
    'bits_w2': [
        ('mx.random.bits((), 2, key=k(3))', {'dtype': 'uint16', 'shape': [], 'values': [25499]}),
        ('mx.random.bits((1,), 2, key=k(3))', {'dtype': 'uint16', 'shape': [1], 'values': [25499]}),
        ('mx.random.bits((2,), 2, key=k(3))', {'dtype': 'uint16', 'shape': [2], 'values': [25499, 56714]}),
        ('mx.random.bits((3,), 2, key=k(3))', {'dtype': 'uint16', 'shape': [3], 'values': [13387, 29701, 3726]}),
        ('mx.random.bits((5,), 2, key=k(3))', {'dtype': 'uint16', 'shape': [5], 'values': [52786, 15632, 46739, 1376, 49900]}),
        ('mx.random.bits((2, 3), 2, key=k(3))', {'dtype': 'uint16', 'shape': [2, 3], 'values': [52786, 15632, 46739, 1376, 49900, 39730]}),
        ('mx.random.bits((4, 0), 2, key=k(3))', {'dtype': 'uint16', 'shape': [4, 0], 'values': []}),
        ('mx.random.bits((), 2, key=k(1099511627793))', {'dtype': 'uint16', 'shape': [], 'values': [39193]}),
        ('mx.random.bits((1,), 2, key=k(1099511627793))', {'dtype': 'uint16', 'shape': [1], 'values': [39193]}),
        ('mx.random.bits((2,), 2, key=k(1099511627793))', {'dtype': 'uint16', 'shape': [2], 'values': [39193, 58127]}),
        ('mx.random.bits((3,), 2, key=k(1099511627793))', {'dtype': 'uint16', 'shape': [3], 'values': [8740, 52145, 45550]}),
        ('mx.random.bits((5,), 2, key=k(1099511627793))', {'dtype': 'uint16', 'shape': [5], 'values': [14064, 49461, 55945, 22932, 38]}),
        ('mx.random.bits((2, 3), 2, key=k(1099511627793))', {'dtype': 'uint16', 'shape': [2, 3], 'values': [14064, 49461, 55945, 22932, 38, 31074]}),
        ('mx.random.bits((4, 0), 2, key=k(1099511627793))', {'dtype': 'uint16', 'shape': [4, 0], 'values': []}),
    ],
    'bits_w4': [
        ('mx.random.bits((), 4, key=k(3))', {'dtype': 'uint32', 'shape': [], 'values': [3716834203]}),
        ('mx.random.bits((1,), 4, key=k(3))', {'dtype': 'uint32', 'shape': [1], 'values': [3716834203]}),
        ('mx.random.bits((2,), 4, key=k(3))', {'dtype': 'uint32', 'shape': [2], 'values': [1946498123, 2217676430]}),
        ('mx.random.bits((3,), 4, key=k(3))', {'dtype': 'uint32', 'shape': [3], 'values': [1024511538, 90224275, 2603795180]}),
        ('mx.random.bits((5,), 4, key=k(3))', {'dtype': 'uint32', 'shape': [5], 'values': [877192987, 1614509672, 4140764773, 3448417067, 2823528474]}),
        ('mx.random.bits((2, 3), 4, key=k(3))', {'dtype': 'uint32', 'shape': [2, 3], 'values': [877192987, 1614509672, 1950127089, 3448417067, 2823528474, 3529024829]}),
        ('mx.random.bits((33,), 4, key=k(3))', {'dtype': 'uint32', 'shape': [33], 'values': [3297648638, 4017466653, 213646877, 99053180, 3579022075, 3626304677, 326903520, 1795690607, 994770366, 3064291003, 3400126039, 969576575, 1666271913, 605019367, 3074752828, 2668836808, 1298432533, 1387884871, 2374542891, 1505687670, 4107652824, 1798822981, 2351807211, 1197398104, 2866041075, 1418914715, 3840519061, 56925635, 2001782313, 816967420, 3199849647, 1890171374, 990662509]}),
        ('mx.random.bits((0,), 4, key=k(3))', {'dtype': 'uint32', 'shape': [0], 'values': []}),
        ('mx.random.bits((), 4, key=k(1099511627793))', {'dtype': 'uint32', 'shape': [], 'values': [3809450265]}),
        ('mx.random.bits((1,), 4, key=k(1099511627793))', {'dtype': 'uint32', 'shape': [1], 'values': [3809450265]}),
        ('mx.random.bits((2,), 4, key=k(1099511627793))', {'dtype': 'uint32', 'shape': [2], 'values': [3417383460, 2776478190]}),
        ('mx.random.bits((3,), 4, key=k(1099511627793))', {'dtype': 'uint32', 'shape': [3], 'values': [3241490160, 1502927497, 2036465702]}),
        ('mx.random.bits((5,), 4, key=k(1099511627793))', {'dtype': 'uint32', 'shape': [5], 'values': [2665657308, 776528475, 3080752962, 1221090017, 3693322014]}),
        ('mx.random.bits((2, 3), 4, key=k(1099511627793))', {'dtype': 'uint32', 'shape': [2, 3], 'values': [2665657308, 776528475, 2970701879, 1221090017, 3693322014, 3360475184]}),
        ('mx.random.bits((33,), 4, key=k(1099511627793))', {'dtype': 'uint32', 'shape': [33], 'values': [1168915863, 774647073, 154989099, 3987760365, 145745172, 2832257038, 937350692, 2848302598, 416708230, 983534630, 2363601523, 1368562205, 3338514403, 248275393, 2907083923, 258619833, 3290394977, 3759031734, 1682784516, 2922146298, 1673237094, 978012635, 930015829, 3647413971, 1296945078, 2048610677, 2227640438, 1004401532, 2700070542, 3869996487, 2680532147, 898371608, 3484027263]}),
        ('mx.random.bits((0,), 4, key=k(1099511627793))', {'dtype': 'uint32', 'shape': [0], 'values': []}),
        ('mx.random.bits((4,), key=k(0))', {'dtype': 'uint32', 'shape': [4], 'values': [4146024105, 967050713, 2718843009, 1272950319]}),
    ],
    'uniform': [
        ('mx.random.uniform(key=k(1))', {'dtype': 'float32', 'shape': [], 'values': [0.1181502491235733]}),
        ('mx.random.uniform(shape=(5,), key=k(1))', {'dtype': 'float32', 'shape': [5], 'values': [0.8307938575744629, 0.16604094207286835, 0.45611220598220825, 0.6428885459899902, 0.5686540603637695]}),
        ('mx.random.uniform(-2, 3, (2, 3), key=k(1))', {'dtype': 'float32', 'shape': [2, 3], 'values': [2.1539692878723145, -1.169795274734497, 2.215242862701416, 1.2144427299499512, 0.8432703018188477, 1.072223424911499]}),
        ('mx.random.uniform(-2, 3, (7,), dtype=mx.float16, key=k(1))', {'dtype': 'float16', 'shape': [7], 'values': [-0.98828125, 2.8125, -1.6953125, 2.92578125, 2.1875, -1.7041015625, -1.8857421875]}),
        ('mx.random.uniform(-2, 3, (7,), dtype=mx.bfloat16, key=k(1))', {'dtype': 'bfloat16', 'shape': [7], 'values': [-0.9921875, 2.8125, -1.6953125, 2.9375, 2.1875, -1.703125, -1.8828125]}),
        ('mx.random.uniform(0.1, 0.7, (5,), dtype=mx.float16, key=k(1))', {'dtype': 'float16', 'shape': [5], 'values': [0.5986328125, 0.1995849609375, 0.37353515625, 0.48583984375, 0.44140625]}),
        ('mx.random.uniform(3, -2, (5,), key=k(2))', {'dtype': 'float32', 'shape': [5], 'values': [0.808114767074585, -1.7100586891174316, 1.2380304336547852, 0.15756893157958984, 1.6371948719024658]}),
        ('mx.random.uniform(mx.array([[0.0], [10.0]]), mx.array([1.0, 2.0, 30.0]), (2, 3), key=k(2))', {'dtype': 'float32', 'shape': [2, 3], 'values': [0.4383770525455475, 1.8840235471725464, 21.260438919067383, 4.883624076843262, 7.819511890411377, 29.07784080505371]}),
        ('mx.random.uniform(mx.array([-1, 4]), 9, (3, 2), key=k(2))', {'dtype': 'float32', 'shape': [3, 2], 'values': [3.38377046585083, 8.710058212280273, 6.086812973022461, 6.84243106842041, 1.7256102561950684, 8.769460678100586]}),
        ('mx.random.uniform(shape=(0, 3), key=k(2))', {'dtype': 'float32', 'shape': [0, 3], 'values': []}),
        ('mx.random.uniform(1.0, 1.0000001, (6,), key=k(2))', {'dtype': 'float32', 'shape': [6], 'values': [1.0, 1.0000001192092896, 1.0000001192092896, 1.0000001192092896, 1.0, 1.0000001192092896]}),
    ],
    'normal': [
        ('mx.random.normal(key=k(2))', {'dtype': 'float32', 'shape': [], 'values': [-0.1916155219078064]}),
        ('mx.random.normal((7,), key=k(2))', {'dtype': 'float32', 'shape': [7], 'values': [-0.6997805237770081, -0.5052542090415955, -1.3155035972595215, -1.484385371208191, -0.41401734948158264, 0.04084502160549164, 1.5706311464309692]}),
        ('mx.random.normal((2, 3), dtype=mx.float16, key=k(2))', {'dtype': 'float16', 'shape': [2, 3], 'values': [-0.1551513671875, 1.5712890625, 0.5498046875, 0.1724853515625, -0.60498046875, 1.68359375]}),
        ('mx.random.normal((2, 3), dtype=mx.bfloat16, key=k(2))', {'dtype': 'bfloat16', 'shape': [2, 3], 'values': [-0.1552734375, 1.5703125, 0.55078125, 0.1728515625, -0.60546875, 1.6796875]}),
        ('mx.random.normal((5,), dtype=mx.float64, key=k(2))', {'dtype': 'float64', 'shape': [5], 'values': [-0.1550851769710655, 1.5718884629876246, -0.37886531266921886, 0.17252156000768915, -0.6050856982125924]}),
        ('mx.random.normal((5,), loc=1.5, scale=0.5, key=k(3))', {'dtype': 'float32', 'shape': [5], 'values': [1.08670973777771, 1.3418762683868408, 2.400172472000122, 1.926007628440857, 1.7026941776275635]}),
        ('mx.random.normal((5,), dtype=mx.float16, loc=1.5, scale=0.5, key=k(3))', {'dtype': 'float16', 'shape': [5], 'values': [1.0869140625, 1.341796875, 2.400390625, 1.92578125, 1.703125]}),
        ('mx.random.normal((5,), dtype=mx.bfloat16, loc=-3.0, scale=4.0, key=k(3))', {'dtype': 'bfloat16', 'shape': [5], 'values': [-6.3125, -4.25, 4.1875, 0.40625, -1.375]}),
        ('mx.random.normal((2, 3), loc=mx.array([1.0, 2.0, 3.0]), scale=mx.array([[1.0], [0.1]]), key=k(3))', {'dtype': 'float32', 'shape': [2, 3], 'values': [0.1734195351600647, 1.6837525367736816, 2.8845629692077637, 1.0852015018463135, 2.040538787841797, 3.092172861099243]}),
        ('mx.random.normal((0,), key=k(3))', {'dtype': 'float32', 'shape': [0], 'values': []}),
        ('mx.random.normal((33,), key=k(4))', {'dtype': 'float32', 'shape': [33], 'values': [1.2510660886764526, -0.11813651770353317, -0.28745701909065247, 0.8237957954406738, 0.14930522441864014, -2.09285831451416, 1.414800763130188, -0.731006383895874, 0.6588749289512634, -0.0645778551697731, 1.0733407735824585, -1.229567289352417, -0.5218384861946106, -0.2886416018009186, 0.4026075601577759, 2.4838356971740723, -1.2702054977416992, -2.720743179321289, 0.08308199793100357, -1.1197081804275513, 0.10137630999088287, -0.09349390864372253, 0.8242661356925964, -1.1242674589157104, -0.7194731831550598, -0.6558464169502258, 0.023935817182064056, -0.7124937176704407, -1.5904299020767212, -1.0972539186477661, -0.5951222777366638, 1.3366127014160156, -0.9032006859779358]}),
    ],
    'normal_complex': [
        ('mx.random.normal(dtype=mx.complex64, key=k(2))', {'dtype': 'complex64', 'shape': [], 'values': [[-0.737765908241272, 0.5073000192642212]]}),
        ('mx.random.normal((5,), dtype=mx.complex64, key=k(2))', {'dtype': 'complex64', 'shape': [5], 'values': [[-1.1905052661895752, 0.43677347898483276], [0.06830250471830368, -1.102170467376709], [-0.540023922920227, -0.5488060712814331], [-0.06943219900131226, 0.4179476797580719], [0.7205585241317749, -0.11855151504278183]]}),
        ('mx.random.normal((2, 2), dtype=mx.complex64, loc=3.0, scale=2.0, key=k(2))', {'dtype': 'complex64', 'shape': [2, 2], 'values': [[2.0103609561920166, -0.7145373821258545], [1.139596939086914, -4.075903415679932], [2.4144911766052246, 0.057763583958148956], [5.221207618713379, -0.2709825932979584]]}),
        ('mx.random.normal((3,), dtype=mx.complex64, loc=1 + 1j, key=k(0))', {'dtype': 'complex64', 'shape': [3], 'values': [[1.1328258514404297, 0.09254008531570435], [1.4592081308364868, 1.883218765258789], [1.1728663444519043, 0.9169507026672363]]}),
    ],
    'randint': [
        ('mx.random.randint(-5, 20, (9,), key=k(4))', {'dtype': 'int32', 'shape': [9], 'values': [12, 4, 4, 13, 11, -2, 9, 1, 13]}),
        ('mx.random.randint(-5, 20, (9,), dtype=mx.int64, key=k(4))', {'dtype': 'int64', 'shape': [9], 'values': [12, 4, 4, 13, 11, -2, 9, 1, 13]}),
        ('mx.random.randint(0, 200, (9,), dtype=mx.uint8, key=k(4))', {'dtype': 'uint8', 'shape': [9], 'values': [142, 74, 78, 151, 134, 26, 114, 54, 145]}),
        ('mx.random.randint(-100, 100, (9,), dtype=mx.int8, key=k(4))', {'dtype': 'int8', 'shape': [9], 'values': [42, -26, -22, 51, 34, -74, 14, -46, 45]}),
        ('mx.random.randint(0, 2, (9,), dtype=mx.bool_, key=k(4))', {'dtype': 'bool', 'shape': [9], 'values': [True, False, False, True, True, False, True, False, True]}),
        ('mx.random.randint(0, 7, key=k(4))', {'dtype': 'int32', 'shape': [], 'values': [1]}),
        ('mx.random.randint(mx.array([[0], [100]]), mx.array([3, 50, 1000]), (2, 3), key=k(5))', {'dtype': 'int32', 'shape': [2, 3], 'values': [2, 34, 707, 100, 100, 627]}),
        ('mx.random.randint(10, -10, (4,), key=k(5))', {'dtype': 'int32', 'shape': [4], 'values': [10, 10, 10, 10]}),
        ('mx.random.randint(-(2**30), 2**30, (6,), key=k(5))', {'dtype': 'int32', 'shape': [6], 'values': [396028544, 429363584, 445406208, 464603904, -934057472, 184739712]}),
        ('mx.random.randint(0, 2**20, (6,), dtype=mx.uint32, key=k(5))', {'dtype': 'uint32', 'shape': [6], 'values': [717661, 733938, 741771, 751145, 68205, 614492]}),
    ],
    'bernoulli': [
        ('mx.random.bernoulli(key=k(5))', {'dtype': 'bool', 'shape': [], 'values': [False]}),
        ('mx.random.bernoulli(0.3, (11,), key=k(5))', {'dtype': 'bool', 'shape': [11], 'values': [True, False, False, False, False, False, True, False, False, False, True]}),
        ('mx.random.bernoulli(mx.array([0.1, 0.5, 0.9]), (2, 3), key=k(5))', {'dtype': 'bool', 'shape': [2, 3], 'values': [False, False, True, False, True, True]}),
        ('mx.random.bernoulli(mx.array([0.0, 1.0, 0.25, 0.75]), key=k(6))', {'dtype': 'bool', 'shape': [4], 'values': [False, True, True, True]}),
        ('mx.random.bernoulli(mx.array(0.5, dtype=mx.float16), (7,), key=k(6))', {'dtype': 'bool', 'shape': [7], 'values': [False, False, False, False, True, True, False]}),
    ],
    'truncated_normal': [
        ('mx.random.truncated_normal(-1, 2, (9,), key=k(6))', {'dtype': 'float32', 'shape': [9], 'values': [0.001264727907255292, -0.14903321862220764, 1.258657455444336, -0.055995721369981766, 1.7123039960861206, -0.36217018961906433, -0.274690717458725, 0.8600366115570068, 1.2279644012451172]}),
        ('mx.random.truncated_normal(-1, 2, (9,), dtype=mx.float16, key=k(6))', {'dtype': 'float16', 'shape': [9], 'values': [0.0012235641479492188, -0.148681640625, 1.2587890625, -0.056304931640625, 1.70703125, -0.362060546875, -0.275146484375, 0.8583984375, 1.2265625]}),
        ('mx.random.truncated_normal(-1, 2, (9,), dtype=mx.bfloat16, key=k(6))', {'dtype': 'bfloat16', 'shape': [9], 'values': [0.0048828125, -0.15234375, 1.2578125, -0.053955078125, 1.734375, -0.361328125, -0.271484375, 0.8671875, 1.2421875]}),
        ('mx.random.truncated_normal(mx.array([-2.0, 0.0]), mx.array([[0.0], [1.0], [3.0]]), key=k(7))', {'dtype': 'float32', 'shape': [3, 2], 'values': [-1.6120264530181885, 0.0, -0.28982096910476685, 0.33314579725265503, 0.47299033403396606, 0.42027154564857483]}),
        ('mx.random.truncated_normal(2.0, -2.0, (3,), key=k(7))', {'dtype': 'float32', 'shape': [3], 'values': [2.0, 2.0, 2.0]}),
        ('mx.random.truncated_normal(0.5, 0.75, key=k(7))', {'dtype': 'float32', 'shape': [], 'values': [0.7082450985908508]}),
    ],
    'gumbel': [
        ('mx.random.gumbel((9,), key=k(8))', {'dtype': 'float32', 'shape': [9], 'values': [-0.17774313688278198, 1.0416861772537231, -0.026770485565066338, -1.1443449258804321, 2.9924795627593994, 0.16080285608768463, 0.17861954867839813, 1.203913927078247, -0.1242590844631195]}),
        ('mx.random.gumbel((2, 3), dtype=mx.float16, key=k(8))', {'dtype': 'float16', 'shape': [2, 3], 'values': [-0.308349609375, 0.361328125, 0.7705078125, 3.330078125, 1.2392578125, 3.43359375]}),
        ('mx.random.gumbel((5,), dtype=mx.bfloat16, key=k(8))', {'dtype': 'bfloat16', 'shape': [5], 'values': [-0.306640625, 0.36328125, 0.271484375, 3.328125, 1.25]}),
        ('mx.random.gumbel(key=k(9))', {'dtype': 'float32', 'shape': [], 'values': [0.8677452206611633]}),
    ],
    'categorical': [
        ('mx.random.categorical(mx.array([0.0, 1.0, 2.0]), key=k(9))', {'dtype': 'uint32', 'shape': [], 'values': [2]}),
        ('mx.random.categorical(mx.array([0.0, 1.0, 2.0]), num_samples=12, key=k(9))', {'dtype': 'uint32', 'shape': [12], 'values': [1, 2, 0, 2, 1, 1, 1, 2, 2, 2, 1, 2]}),
        ('mx.random.categorical(mx.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), key=k(9))', {'dtype': 'uint32', 'shape': [3], 'values': [3, 0, 1]}),
        ('mx.random.categorical(mx.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), axis=0, key=k(9))', {'dtype': 'uint32', 'shape': [4], 'values': [1, 2, 0, 0]}),
        ('mx.random.categorical(mx.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), shape=(5, 3), key=k(9))', {'dtype': 'uint32', 'shape': [5, 3], 'values': [1, 0, 1, 0, 1, 0, 3, 0, 1, 3, 1, 3, 3, 0, 3]}),
        ('mx.random.categorical(mx.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), axis=0, num_samples=5, key=k(9))', {'dtype': 'uint32', 'shape': [4, 5], 'values': [1, 2, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]}),
        ('mx.random.categorical(mx.array([[0.5, -1.0], [2.0, 0.0]], dtype=mx.float16), num_samples=6, key=k(10))', {'dtype': 'uint32', 'shape': [2, 6], 'values': [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]}),
        ('mx.random.categorical(mx.array([[0.0, 1.0, 2.0]]), num_samples=5, key=k(11))', {'dtype': 'uint32', 'shape': [1, 5], 'values': [2, 2, 1, 2, 1]}),
        ('mx.random.categorical(mx.array([[0.0], [1.0], [2.0]]), axis=0, num_samples=5, key=k(11))', {'dtype': 'uint32', 'shape': [1, 5], 'values': [2, 2, 1, 2, 1]}),
        ('mx.random.categorical(mx.array([0.0, 1.0, 2.0]), num_samples=1, key=k(11))', {'dtype': 'uint32', 'shape': [1], 'values': [2]}),
        ("mx.random.categorical(mx.array([float('-inf')] * 3), num_samples=8, key=k(12))", {'dtype': 'uint32', 'shape': [8], 'values': [0, 2, 2, 1, 1, 0, 0, 0]}),
        ("mx.random.categorical(mx.array([0.0, float('inf'), 1.0, float('inf')]), num_samples=8, key=k(12))", {'dtype': 'uint32', 'shape': [8], 'values': [1, 3, 3, 1, 3, 1, 1, 1]}),
        ('mx.random.categorical(mx.log(mx.array([0.1, 0.0, 0.6, 0.3])), num_samples=20, key=k(13))', {'dtype': 'uint32', 'shape': [20], 'values': [2, 0, 3, 2, 0, 2, 3, 2, 2, 3, 2, 2, 3, 0, 2, 2, 2, 2, 0, 3]}),
        ('mx.random.categorical(mx.array([0.5, -1.0, 3.0], dtype=mx.float64), num_samples=6, key=k(13))', {'dtype': 'uint32', 'shape': [6], 'values': [2, 2, 2, 2, 2, 2]}),
        ('mx.random.categorical(mx.array([0.5, -1.0, 3.0], dtype=mx.bfloat16), num_samples=6, key=k(13))', {'dtype': 'uint32', 'shape': [6], 'values': [2, 2, 2, 2, 2, 2]}),
    ],
    'laplace': [
        ('mx.random.laplace(key=k(10))', {'dtype': 'float32', 'shape': [], 'values': [1.7216345071792603]}),
        ('mx.random.laplace((9,), key=k(10))', {'dtype': 'float32', 'shape': [9], 'values': [-0.44622015953063965, 0.23624183237552643, -1.4163480997085571, 0.46296676993370056, -0.053141627460718155, -0.3815132975578308, 0.10597578436136246, 0.13653609156608582, -0.9650241732597351]}),
        ('mx.random.laplace((2, 3), dtype=mx.float16, key=k(10))', {'dtype': 'float16', 'shape': [2, 3], 'values': [0.482666015625, 0.01294708251953125, 1.662109375, -0.86669921875, -0.23828125, 1.4931640625]}),
        ('mx.random.laplace((5,), dtype=mx.bfloat16, key=k(10))', {'dtype': 'bfloat16', 'shape': [5], 'values': [0.482421875, 0.012939453125, -2.328125, -0.8671875, -0.23828125]}),
        ('mx.random.laplace((5,), dtype=mx.float64, key=k(10))', {'dtype': 'float64', 'shape': [5], 'values': [0.48261795154220677, 0.01294533796973209, -2.3333620080592254, -0.8666286935258573, -0.23832399757302816]}),
        ('mx.random.laplace((5,), loc=1.5, scale=0.25, key=k(11))', {'dtype': 'float32', 'shape': [5], 'values': [1.31600022315979, 1.2198436260223389, 1.6715322732925415, 1.4408403635025024, 1.7740858793258667]}),
        ('mx.random.laplace((5,), dtype=mx.float16, loc=-2.0, scale=3.0, key=k(11))', {'dtype': 'float16', 'shape': [5], 'values': [-4.20703125, -5.36328125, 0.05859375, -2.7109375, 1.2890625]}),
    ],
    'permutation': [
        ('mx.random.permutation(10, key=k(11))', {'dtype': 'uint32', 'shape': [10], 'values': [0, 7, 9, 5, 1, 3, 4, 6, 2, 8]}),
        ('mx.random.permutation(1, key=k(11))', {'dtype': 'uint32', 'shape': [1], 'values': [0]}),
        ('mx.random.permutation(0, key=k(11))', {'dtype': 'uint32', 'shape': [0], 'values': []}),
        ('mx.random.permutation(33, key=k(12))', {'dtype': 'uint32', 'shape': [33], 'values': [1, 17, 25, 26, 13, 0, 11, 9, 24, 2, 5, 28, 19, 32, 22, 20, 14, 18, 21, 4, 30, 10, 7, 6, 27, 8, 16, 12, 3, 15, 31, 29, 23]}),
        ('mx.random.permutation(mx.arange(12).reshape(3, 4), key=k(12))', {'dtype': 'int32', 'shape': [3, 4], 'values': [0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7]}),
        ('mx.random.permutation(mx.arange(12).reshape(3, 4), axis=1, key=k(12))', {'dtype': 'int32', 'shape': [3, 4], 'values': [0, 3, 1, 2, 4, 7, 5, 6, 8, 11, 9, 10]}),
        ('mx.random.permutation(mx.arange(12).reshape(3, 4), axis=-1, key=k(13))', {'dtype': 'int32', 'shape': [3, 4], 'values': [2, 1, 3, 0, 6, 5, 7, 4, 10, 9, 11, 8]}),
        ('mx.random.permutation(mx.array([2.5, -1.0, 4.0, 0.5]), key=k(13))', {'dtype': 'float32', 'shape': [4], 'values': [4.0, -1.0, 0.5, 2.5]}),
    ],
    'multivariate_normal': [
        ('mx.random.multivariate_normal(mx.array([1.0, -1.0]), mx.array([[2.0, 0.5], [0.5, 1.0]]), (4,), key=k(12), stream=mx.cpu)', {'dtype': 'float32', 'shape': [4, 2], 'values': [-2.399576425552368, -1.034096121788025, 3.960657835006714, -0.6968241333961487, 1.026151418685913, -1.8264625072479248, -1.2088921070098877, -3.1073062419891357]}),
        ('mx.random.multivariate_normal(mx.array([[0.0, 7.0], [1.0, 2.0], [3.0, 4.0]]), mx.array([[1.0, 0.5], [0.5, 1.0]]), (2, 3), key=k(13), stream=mx.cpu)', {'dtype': 'float32', 'shape': [2, 3, 2], 'values': [3.394462823867798, 9.003058433532715, 1.7984626293182373, 1.8090393543243408, 2.319059371948242, 3.836416721343994, -0.17903658747673035, 6.972454071044922, 0.31484854221343994, 3.0588936805725098, 3.550605535507202, 4.8538899421691895]}),
    ],
    'global_seed': [
        ('mx.random.seed(7)', None),
        ('mx.random.normal((3,))', {'dtype': 'float32', 'shape': [3], 'values': [-1.420398473739624, -0.9367081522941589, 0.9646756052970886]}),
        ('mx.random.uniform(shape=(2,))', {'dtype': 'float32', 'shape': [2], 'values': [0.8012937307357788, 0.18442964553833008]}),
        ('mx.random.randint(0, 10, (4,))', {'dtype': 'int32', 'shape': [4], 'values': [4, 4, 2, 0]}),
        ('mx.random.bernoulli(0.5, (3,))', {'dtype': 'bool', 'shape': [3], 'values': [False, True, True]}),
        ('mx.random.gumbel((2,))', {'dtype': 'float32', 'shape': [2], 'values': [0.040868520736694336, -0.08370540291070938]}),
        ('mx.random.categorical(mx.array([0.0, 1.0, 2.0]), num_samples=3)', {'dtype': 'uint32', 'shape': [3], 'values': [2, 2, 2]}),
        ('mx.random.categorical(mx.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]), num_samples=3)', {'dtype': 'uint32', 'shape': [2, 3], 'values': [2, 1, 2, 0, 0, 0]}),
        ('mx.random.truncated_normal(-1, 1, (2,))', {'dtype': 'float32', 'shape': [2], 'values': [0.1972513496875763, -0.33416780829429626]}),
        ('mx.random.laplace((2,))', {'dtype': 'float32', 'shape': [2], 'values': [2.6094319820404053, -0.27204760909080505]}),
        ('mx.random.permutation(5)', {'dtype': 'uint32', 'shape': [5], 'values': [2, 4, 1, 0, 3]}),
        ('mx.random.normal((2,), dtype=mx.complex64)', {'dtype': 'complex64', 'shape': [2], 'values': [[-0.6858944892883301, -0.48602813482284546], [-0.6544275879859924, -0.3173588812351227]]}),
        ('mx.random.uniform()', {'dtype': 'float32', 'shape': [], 'values': [0.6966767311096191]}),
        ('mx.random.seed(7)', None),
        ('mx.random.normal((3,))', {'dtype': 'float32', 'shape': [3], 'values': [-1.420398473739624, -0.9367081522941589, 0.9646756052970886]}),
        ('mx.random.seed(0)', None),
        ('mx.random.uniform(shape=(3,))', {'dtype': 'float32', 'shape': [3], 'values': [0.8724143505096436, 0.11105155944824219, 0.2770805358886719]}),
        ('mx.random.uniform(shape=(3,))', {'dtype': 'float32', 'shape': [3], 'values': [0.47366008162498474, 0.5662227869033813, 0.8806023597717285]}),
        ('mx.random.seed(2**40 + 5)', None),
        ('mx.random.normal((2, 2), dtype=mx.float16)', {'dtype': 'float16', 'shape': [2, 2], 'values': [0.65625, 1.0166015625, -1.9599609375, 0.228515625]}),
    ],
}
# END GOLDEN
# fmt: on


def k(n):
    return mx.random.key(n)


def as_numpy(x):
    """Exact float64 (or complex128, or int) values of a kiln array."""
    if x.dtype == mx.complex64:
        return np.asarray(x).astype(np.complex128)
    if x.dtype in (mx.float16, mx.bfloat16, mx.float32, mx.float64):
        return np.asarray(x.astype(mx.float64))
    return np.asarray(x)


def expected_numpy(g):
    if g["dtype"] == "complex64":
        return np.array([complex(re, im) for re, im in g["values"]], dtype=np.complex128).reshape(
            g["shape"]
        )
    return np.array(g["values"], dtype=np.float64 if "float" in g["dtype"] else object).reshape(
        g["shape"]
    )


def ulps(dtype):
    return {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float64": 2.0**-52}.get(dtype, 2.0**-23)


def check(name, expr, got, g, exact):
    # kiln may print bool as bool_; MLX prints bool.
    assert str(got.dtype).split(".")[-1].rstrip("_") == g["dtype"], expr
    assert list(got.shape) == g["shape"], expr
    want = expected_numpy(g)
    have = as_numpy(got)
    if g["dtype"].startswith(("float", "complex")):
        if exact:
            ok = np.array_equal(have, want, equal_nan=True)
        else:
            # A few ulp of the value, or of the scale of the distribution near zero.
            tol = 8 * ulps(g["dtype"]) * np.maximum(np.abs(want), 1.0)
            ok = np.all((np.abs(have - want) <= tol) | (np.isnan(have) & np.isnan(want)))
            if name == "multivariate_normal":
                ok = np.allclose(have, want, rtol=1e-4, atol=1e-5)
        assert ok, f"{expr}\n kiln: {have.tolist()}\n  MLX: {want.tolist()}"
    else:
        assert have.astype(object).tolist() == want.tolist(), f"{expr}\n kiln: {have.tolist()}"


def test_every_case_has_golden_values():
    assert set(GOLDEN) == set(CASES), "regenerate GOLDEN with gen_random_mlx_golden.py"
    for name, exprs in CASES.items():
        assert [e for e, _ in GOLDEN[name]] == exprs, name


@pytest.mark.parametrize("name", list(CASES))
def test_same_numbers_as_mlx(name):
    on_gpu = mx.default_device() == mx.gpu
    # multivariate_normal goes through an SVD, whose last bits depend on the LAPACK build.
    exact = not (on_gpu and name in THROUGH_LOG) and name != "multivariate_normal"
    env = {"mx": mx, "k": k}
    for expr, g in GOLDEN[name]:
        got = eval(expr, env)
        if g is None:
            assert got is None, expr
            continue
        check(name, expr, got, g, exact)
