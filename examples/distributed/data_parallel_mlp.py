#!/usr/bin/env python3
"""Data-parallel training with kiln.core.distributed: every process holds the same MLP,
trains on its shard of each global batch, and averages the gradients with
``nn.average_gradients`` (all_sum over the group) before the optimizer step, so all
replicas stay identical and follow the single-process run on the global batch.

    python -m kiln.launch -n 2 examples/distributed/data_parallel_mlp.py [--steps 100]
        [--global-batch 512] [--hidden 1024] [--check]

On GPUs the processes (one per GPU) communicate through NCCL; on CPUs through MPI (the
launcher then runs mpirun). The data is a synthetic 10-class problem labelled by a fixed
random teacher network, so nothing needs downloading. With ``--check`` each process also
trains a second model on the whole global batch, alone, and the losses of both runs are
compared at every step (they must agree to float32 rounding). Rank 0 prints the loss and
the throughput in samples per second.
"""

import argparse
import sys
import time

import numpy as np

import kiln.core as mx
import kiln.nn as nn
import kiln.optimizers as optim


class MLP(nn.Module):
    def __init__(self, dims, hidden, classes):
        super().__init__()
        self.layers = [
            nn.Linear(dims, hidden),
            nn.Linear(hidden, hidden),
            nn.Linear(hidden, classes),
        ]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = nn.relu(layer(x))
        return self.layers[-1](x)


def make_data(n, dims, classes, seed=0):
    """Inputs and the labels of a fixed random two-layer teacher."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dims)).astype(np.float32)
    w1 = rng.standard_normal((dims, 64)).astype(np.float32)
    w2 = rng.standard_normal((64, classes)).astype(np.float32)
    y = np.argmax(np.tanh(x @ w1) @ w2, axis=1).astype(np.int32)
    return x, y


def new_model(args):
    mx.random.seed(args.seed)  # the same initial weights on every rank
    model = MLP(args.dims, args.hidden, args.classes)
    mx.eval(model.parameters())
    return model, optim.SGD(learning_rate=args.lr, momentum=0.9)


def loss_fn(model, x, y):
    return nn.losses.cross_entropy(model(x), y, reduction="mean")


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--global-batch", type=int, default=512)
    p.add_argument("--dims", type=int, default=256)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--check", action="store_true", help="compare with a single-process run"
    )
    args = p.parse_args()

    group = mx.distributed.init()
    rank, size = group.rank(), group.size()
    if args.global_batch % size:
        sys.exit(
            f"--global-batch {args.global_batch} must be divisible by the {size} processes"
        )
    local = args.global_batch // size
    x_all, y_all = make_data(args.global_batch * 8, args.dims, args.classes)

    model, opt = new_model(args)
    step_fn = nn.value_and_grad(model, loss_fn)
    if args.check:
        ref_model, ref_opt = new_model(args)
        ref_step = nn.value_and_grad(ref_model, loss_fn)

    worst, losses = 0.0, []
    start = None
    for step in range(args.steps):
        if step == 2:  # after warm-up (kernel compilation, NCCL's first calls)
            mx.synchronize()
            start = time.perf_counter()
        lo = (step * args.global_batch) % len(x_all)
        xb, yb = x_all[lo : lo + args.global_batch], y_all[lo : lo + args.global_batch]
        x = mx.array(xb[rank * local : (rank + 1) * local])
        y = mx.array(yb[rank * local : (rank + 1) * local])
        loss, grads = step_fn(model, x, y)
        grads = nn.average_gradients(grads)
        opt.update(model, grads)
        # The global batch's loss: the mean of the shards' means (equal shards).
        loss = mx.distributed.all_sum(loss) / size if size > 1 else loss
        mx.eval(model.parameters(), opt.state, loss)
        losses.append(loss.item())
        if args.check:
            ref_loss, ref_grads = ref_step(ref_model, mx.array(xb), mx.array(yb))
            ref_opt.update(ref_model, ref_grads)
            mx.eval(ref_model.parameters(), ref_opt.state, ref_loss)
            worst = max(worst, abs(ref_loss.item() - losses[-1]))
        if rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.5f}", flush=True)
    mx.synchronize()
    if rank == 0 and start is not None:
        seconds = time.perf_counter() - start
        rate = (args.steps - 2) * args.global_batch / seconds
        print(
            f"{size} process(es), device {mx.default_device()}: {rate:,.0f} samples/s",
            flush=True,
        )
    if args.check:
        print(
            f"rank {rank}: largest |loss - single-process loss| = {worst:.2e}",
            flush=True,
        )
        if worst > 1e-4 * max(1.0, abs(losses[0])):
            sys.exit(
                f"rank {rank}: the data-parallel losses differ from the single-process run"
            )
    if losses[-1] >= losses[0]:
        sys.exit(
            f"rank {rank}: the loss did not decrease ({losses[0]:.4f} -> {losses[-1]:.4f})"
        )


if __name__ == "__main__":
    main()
