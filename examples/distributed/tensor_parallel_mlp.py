#!/usr/bin/env python3
"""Tensor-parallel training with kiln.nn's sharded layers: every process holds a slice of
each weight of a Llama-style MLP block (gate and up projections split by output features,
``AllToShardedLinear``; the down projection split by input features,
``ShardedToAllLinear``), sees the whole batch, and the block costs one ``all_sum`` forward
and one backward. Each process updates only its slices.

    python -m kiln.launch -n 2 examples/distributed/tensor_parallel_mlp.py [--steps 50]
        [--batch 256] [--dims 256] [--hidden 1024] [--check]

The model is built unsharded from the same seed on every rank and sharded with
``nn.shard_linear``, so the run starts from the weights of the single-process model. On
GPUs the processes communicate through NCCL, on CPUs through MPI. The task is regression on
a fixed random teacher. With ``--check`` each process also trains the unsharded model alone
and compares the losses at every step (equal to float32 rounding) and, at the end, its
weight slices with the reference's. Rank 0 prints the loss and the throughput.
"""

import argparse
import sys
import time

import numpy as np

import kiln.core as mx
import kiln.nn as nn
import kiln.optimizers as optim


class Block(nn.Module):
    """A residual block: x + down(silu(gate(norm(x))) * up(norm(x))), the MLP of Llama."""

    def __init__(self, dims, hidden):
        super().__init__()
        self.norm = nn.RMSNorm(dims)
        self.gate_proj = nn.Linear(dims, hidden, bias=False)
        self.up_proj = nn.Linear(dims, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dims, bias=False)

    def __call__(self, x):
        h = self.norm(x)
        return x + self.down_proj(nn.silu(self.gate_proj(h)) * self.up_proj(h))

    def shard(self, group):
        """Replaces the projections by this rank's tensor-parallel shards."""
        self.gate_proj = nn.shard_linear(self.gate_proj, "all-to-sharded", group=group)
        self.up_proj = nn.shard_linear(self.up_proj, "all-to-sharded", group=group)
        self.down_proj = nn.shard_linear(self.down_proj, "sharded-to-all", group=group)
        return self


class Model(nn.Module):
    def __init__(self, dims, hidden, layers):
        super().__init__()
        self.blocks = [Block(dims, hidden) for _ in range(layers)]
        self.out = nn.Linear(dims, dims)

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return self.out(x)


def new_model(args, group=None):
    mx.random.seed(args.seed)  # the same unsharded weights on every rank
    model = Model(args.dims, args.hidden, args.layers)
    if group is not None:
        for block in model.blocks:
            block.shard(group)
    mx.eval(model.parameters())
    return model, optim.Adam(learning_rate=args.lr)


def make_data(n, dims, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dims)).astype(np.float32)
    w = rng.standard_normal((dims, dims)).astype(np.float32) / np.sqrt(dims)
    return x, np.tanh(x @ w).astype(np.float32)


def loss_fn(model, x, y):
    return nn.losses.mse_loss(model(x), y, reduction="mean")


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--dims", type=int, default=256)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--check", action="store_true", help="compare with a single-process run")
    args = p.parse_args()

    group = mx.distributed.init()
    rank, size = group.rank(), group.size()
    if args.hidden % size:
        sys.exit(f"--hidden {args.hidden} must be divisible by the {size} processes")

    x_all, y_all = make_data(args.batch * 8, args.dims)
    model, opt = new_model(args, group)
    step_fn = nn.value_and_grad(model, loss_fn)
    if args.check:
        ref_model, ref_opt = new_model(args)
        ref_step = nn.value_and_grad(ref_model, loss_fn)

    worst, losses, start = 0.0, [], None
    for step in range(args.steps):
        if step == 2:  # after warm-up
            mx.synchronize()
            start = time.perf_counter()
        lo = (step * args.batch) % len(x_all)
        x = mx.array(x_all[lo : lo + args.batch])
        y = mx.array(y_all[lo : lo + args.batch])
        loss, grads = step_fn(model, x, y)
        opt.update(model, grads)  # each rank's gradients are those of its own slices
        mx.eval(model.parameters(), opt.state, loss)
        losses.append(loss.item())
        if args.check:
            ref_loss, ref_grads = ref_step(ref_model, x, y)
            ref_opt.update(ref_model, ref_grads)
            mx.eval(ref_model.parameters(), ref_opt.state, ref_loss)
            worst = max(worst, abs(ref_loss.item() - losses[-1]))
        if rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.5f}", flush=True)
    mx.synchronize()
    if rank == 0 and start is not None and args.steps > 2:
        rate = (args.steps - 2) * args.batch / (time.perf_counter() - start)
        print(
            f"{size} process(es), device {mx.default_device()}: {rate:,.0f} samples/s",
            flush=True,
        )
    if args.check:
        # This rank's slices of the trained reference weights.
        k = args.hidden // size
        drift = 0.0
        for mine, ref in zip(model.blocks, ref_model.blocks):
            pairs = [
                (mine.gate_proj.weight, ref.gate_proj.weight[rank * k : (rank + 1) * k]),
                (mine.up_proj.weight, ref.up_proj.weight[rank * k : (rank + 1) * k]),
                (mine.down_proj.weight, ref.down_proj.weight[:, rank * k : (rank + 1) * k]),
                (mine.norm.weight, ref.norm.weight),
            ]
            for a, b in pairs:
                drift = max(drift, mx.abs(a - b).max().item())
        print(
            f"rank {rank}: largest |loss - single-process loss| = {worst:.2e}, "
            f"largest weight difference = {drift:.2e}",
            flush=True,
        )
        if worst > 1e-4 * max(1.0, abs(losses[0])) or drift > 1e-4:
            sys.exit(f"rank {rank}: the tensor-parallel run differs from the single-process run")
    if losses[-1] >= losses[0]:
        sys.exit(f"rank {rank}: the loss did not decrease ({losses[0]:.4f} -> {losses[-1]:.4f})")


if __name__ == "__main__":
    main()
