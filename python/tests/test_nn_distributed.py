"""Tests of kiln.nn's tensor-parallel layers (AllToShardedLinear, ShardedToAllLinear, their
quantized versions, shard_linear, shard_inplace) and FullyShardedModule / fully_shard.

In this process the global group has one member, so every sharded layer must equal its
unsharded layer; the splitting of parameters for larger groups is checked here too, with a
stand-in group object (only rank() and size() are asked of it when no collective runs).
Multi-process runs (2 and 4 processes on the CPU, MPI) execute nn_distributed_worker.py,
which compares every rank's shard with the unsharded layers, and the tensor-parallel
example through python -m kiln.launch.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn
from kiln.nn.layers import distributed as tp
from kiln.utils import tree_flatten
from conftest import current_rng

HERE = Path(__file__).resolve().parent
PYDIR = HERE.parent
ROOT = PYDIR.parent
WORKER = HERE / "nn_distributed_worker.py"
EXAMPLE = ROOT / "examples" / "distributed" / "tensor_parallel_mlp.py"
MPIRUN = shutil.which("mpirun")
need_mpi = pytest.mark.skipif(
    MPIRUN is None or not mx.distributed.is_available("mpi"),
    reason="Open MPI (mpirun, libmpi) is not installed",
)


class FakeGroup:
    """rank() and size() of a group this process is not really part of."""

    def __init__(self, rank, size):
        self._rank, self._size = rank, size

    def rank(self):
        return self._rank

    def size(self):
        return self._size


def rand(*shape, dtype=np.float32):
    return current_rng().standard_normal(shape).astype(dtype)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=tol, atol=tol)


# ---------------------------------------------------------------- a group of one


def test_names_as_mlx():
    for name in (
        "AllToShardedLinear",
        "ShardedToAllLinear",
        "QuantizedAllToShardedLinear",
        "QuantizedShardedToAllLinear",
        "FullyShardedModule",
        "fully_shard",
        "shard_linear",
        "shard_inplace",
    ):
        assert getattr(nn, name) is getattr(tp, name)
    assert callable(tp.sum_gradients)


@pytest.mark.parametrize("bias", [True, False])
def test_single_process_layers_equal_linear(bias):
    lin = nn.Linear(12, 10, bias=bias)
    x = mx.array(rand(4, 3, 12))
    want = lin(x)
    for sharding, cls in (
        ("all-to-sharded", nn.AllToShardedLinear),
        ("sharded-to-all", nn.ShardedToAllLinear),
    ):
        layer = nn.shard_linear(lin, sharding)
        assert type(layer) is cls and ("bias" in layer) == bias
        assert layer.weight.shape == (10, 12)
        close(layer(x), want)
        close(cls.from_linear(lin)(x), want)
        # Gradients with respect to the parameters and the input equal Linear's.
        t = mx.array(rand(4, 3, 10))
        loss = lambda m, a: ((m(a) - t) ** 2).sum()
        _, want_g = nn.value_and_grad(lin, loss)(lin, x)
        _, got_g = nn.value_and_grad(layer, loss)(layer, x)
        for (path, a), (_, b) in zip(tree_flatten(got_g), tree_flatten(want_g)):
            close(a, b, 1e-4)
        close(mx.grad(lambda a: loss(layer, a))(x), mx.grad(lambda a: loss(lin, a))(x), 1e-4)


def test_fresh_layers_shapes_and_repr():
    layer = nn.AllToShardedLinear(6, 4)
    assert layer.weight.shape == (4, 6) and layer.bias.shape == (4,)
    assert repr(layer) == "AllToShardedLinear(input_dims=6, output_dims=4, bias=True)"
    layer = nn.ShardedToAllLinear(6, 4, bias=False)
    assert layer.weight.shape == (4, 6) and "bias" not in layer
    assert repr(layer) == "ShardedToAllLinear(input_dims=6, output_dims=4, bias=False)"
    # The initialization range of Linear: |w| <= 1/sqrt(input_dims).
    w = np.array(nn.AllToShardedLinear(100, 50).weight)
    assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.05


@pytest.mark.parametrize(
    "mode,group_size,bits",
    [("affine", 32, 4), ("affine", 64, 8), ("mxfp4", 32, 4), ("mxfp8", 32, 8)],
)
def test_single_process_quantized_layers_equal_quantized_linear(mode, group_size, bits):
    q = nn.QuantizedLinear.from_linear(nn.Linear(128, 16), group_size, bits, mode)
    x = mx.array(rand(5, 128))
    for sharding, cls in (
        ("all-to-sharded", nn.QuantizedAllToShardedLinear),
        ("sharded-to-all", nn.QuantizedShardedToAllLinear),
    ):
        layer = nn.shard_linear(q, sharding)
        assert type(layer) is cls
        assert (layer.group_size, layer.bits, layer.mode) == (group_size, bits, mode)
        assert (layer.get("biases") is None) == (mode != "affine")
        close(layer(x), q(x))
        assert layer.trainable_parameters() == {}
        layer.unfreeze()
        assert layer.trainable_parameters() == {}
        assert f"group_size={group_size}, bits={bits}" in repr(layer)
    layer = nn.QuantizedAllToShardedLinear(128, 16)
    assert (layer.group_size, layer.bits, layer.mode) == (64, 4, "affine")
    assert np.array(layer.bias).tolist() == [0.0] * 16


def test_single_process_shard_inplace_and_fully_shard_keep_the_module():
    lin = nn.Linear(5, 3)
    before = {k: np.array(v) for k, v in tree_flatten(lin.parameters())}
    nn.shard_inplace(lin, "all-to-sharded")
    nn.shard_inplace(lin, "sharded-to-all")
    for k, v in tree_flatten(lin.parameters()):
        np.testing.assert_array_equal(np.array(v), before[k])
    assert nn.fully_shard(lin) is lin
    wrapped = nn.FullyShardedModule(lin)
    x = mx.array(rand(2, 5))
    close(wrapped(x), lin(x))
    assert repr(wrapped).startswith("FullyShardedModule(num_sharded_params=2")


def test_sum_gradients_is_the_identity_for_one_process():
    f = tp.sum_gradients(mx.distributed.init())
    x = mx.array(rand(3))
    assert f(x) is x


# ---------------------------------------------------------------- splitting, larger groups


@pytest.mark.parametrize("n", [2, 3, 4])
def test_shards_of_each_rank_tile_the_weights(n):
    lin = nn.Linear(4 * n, 6 * n)
    w, b = np.array(lin.weight), np.array(lin.bias)
    rows, cols, biases = [], [], []
    for r in range(n):
        a2s = nn.AllToShardedLinear.from_linear(lin, group=FakeGroup(r, n))
        s2a = nn.ShardedToAllLinear.from_linear(lin, group=FakeGroup(r, n))
        rows.append(np.array(a2s.weight))
        biases.append(np.array(a2s.bias))
        cols.append(np.array(s2a.weight))
        np.testing.assert_array_equal(np.array(s2a.bias), b)  # kept whole
        assert f"output_dims={6 * n}" in repr(a2s) and f"input_dims={4 * n}" in repr(s2a)
    np.testing.assert_array_equal(np.concatenate(rows, 0), w)
    np.testing.assert_array_equal(np.concatenate(biases), b)
    np.testing.assert_array_equal(np.concatenate(cols, 1), w)


def test_segments_are_split_separately():
    n = 2
    lin = nn.Linear(3, 12)
    w = np.array(lin.weight)
    q, k, v = np.split(w, 3)
    for r in range(n):
        got = nn.AllToShardedLinear.from_linear(lin, segments=3, group=FakeGroup(r, n))
        want = np.concatenate([p[2 * r : 2 * r + 2] for p in (q, k, v)])
        np.testing.assert_array_equal(np.array(got.weight), want)
        # Split indices and fractions: segments [0, 4), [4, 12).
        for segments in ([4], [1 / 3]):
            got = nn.AllToShardedLinear.from_linear(lin, segments=segments, group=FakeGroup(r, n))
            want = np.concatenate([w[2 * r : 2 * r + 2], w[4 + 4 * r : 8 + 4 * r]])
            np.testing.assert_array_equal(np.array(got.weight), want)


def test_shard_inplace_with_a_predicate():
    n, r = 4, 1

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_proj = nn.Linear(8, 16, bias=False)
            self.down_proj = nn.Linear(16, 8, bias=False)
            self.norm = nn.RMSNorm(8)

    block = Block()
    gate, down, norm = (np.array(block[k].weight) for k in ("gate_proj", "down_proj", "norm"))

    def predicate(path, weight):
        if "gate" in path:
            return 0
        if "down" in path:
            return -1, 2
        return None

    nn.shard_inplace(block, predicate, group=FakeGroup(r, n))
    np.testing.assert_array_equal(np.array(block.gate_proj.weight), gate[4:8])
    halves = np.split(down, 2, axis=1)
    np.testing.assert_array_equal(
        np.array(block.down_proj.weight), np.concatenate([h[:, 2:4] for h in halves], 1)
    )
    np.testing.assert_array_equal(np.array(block.norm.weight), norm)


def test_quantized_shards_keep_weights_scales_and_biases_aligned():
    n = 2
    q = nn.QuantizedLinear.from_linear(nn.Linear(128, 8), 32, 4)
    deq = np.array(mx.dequantize(q.weight, q.scales, q.biases, 32, 4))
    for r in range(n):
        a2s = nn.shard_linear(q, "all-to-sharded", group=FakeGroup(r, n))
        s2a = nn.shard_linear(q, "sharded-to-all", group=FakeGroup(r, n))
        assert a2s.weight.shape == (4, 16) and a2s.scales.shape == (4, 4)
        assert s2a.weight.shape == (8, 8) and s2a.scales.shape == (8, 2)
        got = mx.dequantize(a2s.weight, a2s.scales, a2s.biases, 32, 4)
        np.testing.assert_array_equal(np.array(got), deq[4 * r : 4 * r + 4])
        got = mx.dequantize(s2a.weight, s2a.scales, s2a.biases, 32, 4)
        np.testing.assert_array_equal(np.array(got), deq[:, 64 * r : 64 * r + 64])
        np.testing.assert_array_equal(np.array(s2a.bias), np.array(q.bias))
        assert "input_dims=128, output_dims=8" in repr(a2s) and "input_dims=128" in repr(s2a)


# ---------------------------------------------------------------- bad input


def test_dims_not_divisible_by_the_group_size():
    g = FakeGroup(0, 4)
    with pytest.raises(ValueError, match=r"\[AllToShardedLinear\].*output of size 10.*4 dev"):
        nn.AllToShardedLinear(8, 10, group=g)
    with pytest.raises(ValueError, match=r"\[ShardedToAllLinear\].*input of size 6.*4 dev"):
        nn.ShardedToAllLinear(6, 8, group=g)
    with pytest.raises(ValueError, match=r"\[QuantizedAllToShardedLinear\].*size 6 across 4"):
        nn.QuantizedAllToShardedLinear(64, 6, group=g)
    with pytest.raises(ValueError, match=r"\[QuantizedShardedToAllLinear\].*size 66 cannot"):
        nn.QuantizedShardedToAllLinear(66, 8, group=g)
    with pytest.raises(ValueError, match=r"input_dims \(16\) must be divisible by group_size"):
        nn.QuantizedShardedToAllLinear(64, 8, group_size=32, group=g)
    with pytest.raises(ValueError, match=r"output of size 6 across 4"):
        nn.shard_linear(nn.Linear(4, 6), "all-to-sharded", group=g)
    with pytest.raises(ValueError, match=r"input of size 6 cannot be sharded across 4"):
        nn.shard_linear(nn.Linear(6, 4), "sharded-to-all", group=g)
    lin = nn.Linear(6, 6)
    with pytest.raises(
        ValueError, match=r"'weight' of shape \(6, 6\) along axis 0 .*size 6 is not divisible by 4"
    ):
        nn.shard_inplace(lin, "all-to-sharded", group=g)
    assert lin.weight.shape == (6, 6)  # unchanged
    with pytest.raises(ValueError, match=r"segment \[0, 2\) of size 2 is not divisible by 4"):
        nn.shard_inplace(nn.Linear(4, 6), "all-to-sharded", segments=3, group=g)
    with pytest.raises(ValueError, match=r"into 4 equal segments"):
        nn.shard_inplace(nn.Linear(4, 6), "all-to-sharded", segments=4, group=g)
    with pytest.raises(ValueError, match=r"segments \[5, 2\].*increasing"):
        nn.shard_inplace(nn.Linear(4, 8), "all-to-sharded", segments=[5, 2], group=g)
    with pytest.raises(ValueError, match=r"'weight' with shape \(6, 4\) across 4 devices"):
        nn.FullyShardedModule(nn.Linear(4, 6), group=g)


def test_bad_sharding_arguments():
    lin = nn.Linear(4, 4)
    with pytest.raises(ValueError, match=r"'row'.*'all-to-sharded' or 'sharded-to-all'"):
        nn.shard_linear(lin, "row")
    with pytest.raises(ValueError, match=r"not supported"):
        nn.shard_inplace(lin, "rows")
    with pytest.raises(ValueError, match=r"should return None, an int.*'x'"):
        nn.shard_inplace(lin, lambda path, w: "x")
    with pytest.raises(ValueError, match=r"Invalid axis 2 for 'weight' of shape \(4, 4\)"):
        nn.shard_inplace(lin, lambda path, w: 2)
    with pytest.raises(ValueError, match=r"\[shard_linear\].*got Conv1d"):
        nn.shard_linear(nn.Conv1d(2, 2, 3), "all-to-sharded")
    with pytest.raises(ValueError, match=r"\[AllToShardedLinear\] input_dims must be positive"):
        nn.AllToShardedLinear(0, 4)


# ---------------------------------------------------------------- several processes


def _env():
    env = os.environ.copy()
    env["PYTHONPATH"] = str(PYDIR) + os.pathsep + env.get("PYTHONPATH", "")
    env["KILN_DEVICE"] = "cpu"
    for k in ("KILN_RANK", "KILN_WORLD_SIZE", "KILN_COORDINATOR"):
        env.pop(k, None)
    return env


def _run(cmd, timeout=180):
    res = subprocess.run(
        cmd, env=_env(), capture_output=True, text=True, timeout=timeout, cwd=str(PYDIR)
    )
    return res, res.stdout + res.stderr


@need_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_sharded_layers_under_mpirun(n):
    seed = int(current_rng().integers(0, 2**31))
    cmd = [MPIRUN, "--oversubscribe", "-np", str(n)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    res, out = _run(cmd + [sys.executable, str(WORKER), str(seed)])
    assert res.returncode == 0, f"seed {seed}:\n" + out[-6000:]
    for r in range(n):
        assert f"PASS rank {r} of {n}" in out, out[-4000:]


@need_mpi
def test_tensor_parallel_example_through_the_launcher():
    res, out = _run(
        [sys.executable, "-m", "kiln.launch", "-n", "2", "--backend", "mpi", "--timeout", "150"]
        + [str(EXAMPLE), "--check", "--steps", "8", "--dims", "64", "--hidden", "128"]
        + ["--batch", "32", "--lr", "3e-3"]
    )
    assert res.returncode == 0, out[-4000:]
    for r in range(2):
        assert f"[{r}] rank {r}: largest |loss - single-process loss|" in out, out
    assert "[0] step    7" in out, out


def _gpu_count():
    try:
        out = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


@pytest.mark.skipif(
    os.environ.get("KILN_DEVICE") != "gpu"
    or _gpu_count() < 2
    or not mx.distributed.is_available("nccl"),
    reason="needs KILN_DEVICE=gpu, 2 GPUs and NCCL",
)
def test_sharded_layers_on_two_gpus_through_nccl():
    seed = int(current_rng().integers(0, 2**31))
    env = _env()
    env["KILN_DEVICE"] = "gpu"
    cmd = [sys.executable, "-m", "kiln.launch", "-n", "2", "--backend", "nccl"]
    res = subprocess.run(
        cmd + ["--timeout", "400", str(WORKER), str(seed)],
        env=env,
        capture_output=True,
        text=True,
        timeout=500,
        cwd=str(PYDIR),
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, f"seed {seed}:\n" + out[-6000:]
    for r in range(2):
        assert f"PASS rank {r} of 2" in out, out[-4000:]
