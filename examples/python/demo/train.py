"""Training the digits classifier: minibatches, value_and_grad through the fused kernel,
Adam, and the per-epoch loss, accuracy and time."""

import math
import time

import numpy as np

import kiln.core as mx

from demo.adam import Adam
from demo.mlp import accuracy, bias_gelu, cross_entropy, forward, init_params
from demo.progress import progress


def train(data, epochs=20, hidden=(128,), batch_size=32, lr=2e-3, seed=0,
          activation=bias_gelu, log=print, bars=True):
    """Trains an MLP (64 -> hidden... -> 10) on `data` = (x_train, y_train, x_test, y_test)
    (NumPy). Returns (params, history) with one dict per epoch: loss (mean over the epoch's
    batches), train and test accuracy, seconds (the epoch's training steps, evaluated)."""
    x_train, y_train, x_test, y_test = data
    params = init_params([x_train.shape[1], *hidden, 10], seed=seed)
    opt = Adam(params, lr=lr)

    def loss_fn(p, x, y):
        return cross_entropy(forward(p, x, activation), y)

    loss_and_grad = mx.value_and_grad(loss_fn)
    xtr, ytr = mx.array(x_train), mx.array(y_train)
    xte, yte = mx.array(x_test), mx.array(y_test)
    order_rng = np.random.default_rng(seed)
    n_batches = (len(x_train) + batch_size - 1) // batch_size
    history = []
    for epoch in range(1, epochs + 1):
        # Cosine decay of the step size: the last epochs settle instead of jumping around.
        opt.lr = lr * 0.5 * (1.0 + math.cos(math.pi * (epoch - 1) / epochs))
        order = order_rng.permutation(len(x_train))
        batches = [mx.array(order[i : i + batch_size].astype(np.int32))
                   for i in range(0, len(order), batch_size)]
        start = time.perf_counter()
        total = 0.0
        steps = progress(batches, f"epoch {epoch:2d}", total=n_batches, summary=False) \
            if bars else batches
        for idx in steps:
            xb, yb = mx.take(xtr, idx, axis=0), mx.take(ytr, idx, axis=0)
            loss, grads = loss_and_grad(params, xb, yb)
            params = opt.update(params, grads)
            mx.eval(params, opt.state(), loss)
            total += loss.item()
        seconds = time.perf_counter() - start
        row = {
            "epoch": epoch,
            "loss": total / n_batches,
            "train_accuracy": accuracy(params, xtr, ytr, activation),
            "test_accuracy": accuracy(params, xte, yte, activation),
            "seconds": seconds,
        }
        history.append(row)
        if log:
            log(f"  epoch {epoch:2d}  loss {row['loss']:.4f}  train acc {row['train_accuracy']:.2%}"
                f"  test acc {row['test_accuracy']:.2%}  {seconds * 1e3:7.1f} ms/epoch")
    return params, history
