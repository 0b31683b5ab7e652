"""Training: AdamW with a linear warm-up and a cosine decay, gradient clipping, the whole
step (forward, backward, gradient averaging across ranks, clipping, update) under
``mx.compile`` with the model and optimizer state captured, validation every N steps,
checkpoints (safetensors) every N steps with resume, a tqdm progress bar, a CSV loss log
and a loss-curve PNG.

Data-parallel under ``python -m kiln.launch -n 2 ...``: every rank builds the same model
from the same seed, takes its rows of each global batch (:func:`llm.data.train_batch`) and
averages gradients with ``nn.average_gradients``; rank 0 writes the log and checkpoints.
"""

import csv
import json
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

import numpy as np

from .framework import mx, nn, optim, tree_flatten, tree_unflatten

from . import config as C
from . import data as D
from .errors import LLMError
from .config import lr_at  # noqa: F401 - the schedule in plain Python
from .model import Model, loss_fn, num_parameters
from .plot import plot_losses

DTYPES = {"float32": mx.float32, "bfloat16": mx.bfloat16}
RUNS_ROOT = Path(__file__).resolve().parent / "runs"
LOG_FIELDS = ["step", "lr", "loss", "grad_norm", "val_loss", "tokens_per_s", "elapsed_s"]


def make_schedule(tc: C.TrainConfig):
    """Linear warm-up from lr/W to lr over W updates, then a cosine decay to
    lr * min_lr_ratio at the last step (kiln.optimizers' schedules)."""
    lr, W = tc.learning_rate, tc.warmup_steps
    cosine = optim.cosine_decay(lr, max(1, tc.steps - W), lr * tc.min_lr_ratio)
    if W < 1:
        return cosine
    if W == 1:
        warm = lambda step: mx.array(lr, dtype=mx.float32)  # noqa: E731
    else:
        warm = optim.linear_schedule(lr / W, lr, W - 1)
    return optim.join_schedules([warm, cosine], [W])


def make_optimizer(tc: C.TrainConfig):
    return optim.AdamW(
        learning_rate=make_schedule(tc),
        betas=[tc.beta1, tc.beta2],
        eps=tc.eps,
        weight_decay=tc.weight_decay,
        bias_correction=True,  # as PyTorch's AdamW, for the side-by-side runs
    )


def build_model(
    cfg: C.ModelConfig, kernels: str = "builtin", dtype: str = "float32", seed: int = 0
) -> Model:
    """A freshly initialized model: the same weights for the same seed on every rank."""
    mx.random.seed(seed)
    model = Model(cfg, kernels=kernels)
    if dtype != "float32":
        model.set_dtype(DTYPES[dtype])
    mx.eval(model.parameters())
    return model


# ---------------------------------------------------------------- checkpoints


def checkpoint_dir(out_dir: Path, step: int) -> Path:
    return Path(out_dir) / "checkpoints" / f"step_{step:06d}"


def latest_checkpoint(out_dir) -> Optional[Path]:
    root = Path(out_dir) / "checkpoints"
    found = sorted(root.glob("step_*/config.json")) if root.exists() else []
    return found[-1].parent if found else None


def save_checkpoint(path: Path, model: Model, optimizer, step: int, meta: dict):
    """model.safetensors, optimizer.safetensors (every state array, the step and learning
    rate included; the step and config also in its metadata) and config.json, written to a
    temporary folder first so a crash never leaves a half checkpoint."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_weights(str(tmp / "model.safetensors"))
    state = dict(tree_flatten(optimizer.state))
    info = dict(meta, step=step)
    mx.save_safetensors(
        str(tmp / "optimizer.safetensors"),
        state,
        metadata={"step": str(step), "config": json.dumps(meta)},
    )
    (tmp / "config.json").write_text(json.dumps(info, indent=2) + "\n")
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)
    return path


def read_checkpoint_config(path) -> dict:
    path = Path(path)
    if not (path / "config.json").exists():
        raise LLMError(
            f"checkpoint {path} is missing (no config.json); train one with:  python examples/llm/main.py train"
        )
    return json.loads((path / "config.json").read_text())


def check_compatible(info: dict, cfg: C.ModelConfig, path):
    """A checkpoint trained with another model config (or vocabulary) cannot be resumed."""
    saved = info["model"]
    mine = C.to_dict(cfg)
    diff = [f"{k}={saved.get(k)!r} (asked {mine[k]!r})" for k in mine if saved.get(k) != mine[k]]
    if diff:
        raise LLMError(
            f"checkpoint {path} is from another model config: {', '.join(diff)}; use its "
            f"config (--config {Path(path) / 'config.json'}) or train afresh without --resume"
        )


def load_checkpoint(path, model: Model, optimizer=None) -> int:
    """Loads the weights (and the optimizer state) saved at `path`; returns the step."""
    path = Path(path)
    for name in ("model.safetensors",) + (("optimizer.safetensors",) if optimizer else ()):
        if not (path / name).exists():
            raise LLMError(
                f"checkpoint file {path / name} is missing; resume from another checkpoint or train afresh without --resume"
            )
    try:
        model.load_weights(str(path / "model.safetensors"), strict=True)
    except ValueError as e:
        raise LLMError(
            f"checkpoint {path} does not fit this model ({str(e).splitlines()[0]}); use its config.json with --config"
        ) from None
    info = read_checkpoint_config(path)
    if optimizer is not None:
        optimizer.init(model.trainable_parameters())
        state = tree_unflatten(list(mx.load(str(path / "optimizer.safetensors")).items()))
        optimizer.state = state
    mx.eval(model.parameters(), optimizer.state if optimizer else [])
    return int(info["step"])


# ---------------------------------------------------------------- training


@dataclass
class RunResult:
    out_dir: Path
    steps: int
    losses: List[float] = field(default_factory=list)  # one per step run now
    val_losses: dict = field(default_factory=dict)  # step -> loss
    tokens_per_s: float = 0.0
    compiled: bool = False
    seconds: float = 0.0
    n_params: int = 0


def evaluate(model: Model, batches, group=None) -> float:
    """Mean loss over fixed validation batches, split over the ranks."""
    rank, size = (group.rank(), group.size()) if group is not None else (0, 1)
    total = mx.array(0.0)
    for i, (x, y) in enumerate(batches):
        if i % size == rank:
            total = total + loss_fn(model, mx.array(x), mx.array(y))
    if size > 1:
        total = mx.distributed.all_sum(total, group=group)
    return total.item() / len(batches)


def make_step(
    model, optimizer, tc: C.TrainConfig, world: int, compile: bool, overlap: bool = True
):
    """The training step (loss, gradient norm) = step(inputs, targets).

    With several GPUs and `overlap`, the gradients are summed on a stream of their own, so
    each bucket's all-reduce runs while the backward pass computes the earlier layers'."""
    loss_and_grad = nn.value_and_grad(model, loss_fn)
    gpu = mx.default_device() == mx.gpu
    comm = mx.new_stream(mx.gpu) if world > 1 and gpu and overlap else None

    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        if world > 1:
            grads = nn.average_gradients(grads, communication_stream=comm)
            loss = mx.distributed.all_sum(loss, stream=comm) / world
        grads, norm = optim.clip_grad_norm(grads, tc.grad_clip)
        optimizer.update(model, grads)
        return loss, norm

    if not compile:
        return step
    state = [model.state, optimizer.state, mx.random.state]
    return mx.compile(step, inputs=state, outputs=state)


def _progress(total, initial, disable):
    try:
        from tqdm import tqdm
    except ImportError:
        print(
            "[train] tqdm is missing (no progress bar); install it with:  .venv/bin/python -m pip install tqdm",
            file=sys.stderr,
        )
        return None
    return tqdm(
        total=total,
        initial=initial,
        disable=disable,
        unit="step",
        dynamic_ncols=True,
        # In a log file (no terminal) each refresh is a line: refresh less often there.
        mininterval=0.5 if sys.stdout.isatty() else 15,
        file=sys.stdout,
    )


def train(
    cfg: C.ModelConfig,
    tc: C.TrainConfig,
    data: D.TokenData,
    out_dir,
    kernels: str = "builtin",
    dtype: str = "float32",
    compile: bool = True,
    resume=False,
    log_every: int = 10,
    progress: bool = True,
    plot: bool = True,
    log=print,
) -> RunResult:
    """Trains `cfg` on `data` for `tc.steps` steps (from a checkpoint with `resume`: True
    for the latest in `out_dir`, or a checkpoint folder) and returns what happened."""
    group = mx.distributed.init()
    rank, world = group.rank(), group.size()
    if tc.batch_size % world:
        raise LLMError(
            f"--batch-size {tc.batch_size} is not divisible by the {world} processes; pass a multiple of {world}"
        )
    if cfg.vocab_size != data.vocab_size:
        raise LLMError(
            f"the model's vocabulary ({cfg.vocab_size}) differs from the data's ({data.vocab_size} in {data.dir}); prepare data with --vocab-size {cfg.vocab_size}"
        )
    data.check_seq_len(tc.seq_len)
    out_dir = Path(out_dir)
    meta = {
        "model": C.to_dict(cfg),
        "train": C.to_dict(tc),
        "kernels": kernels,
        "dtype": dtype,
        "data": {
            "dir": str(data.dir),
            "vocab_size": data.vocab_size,
            "corpus_sha256": data.meta.get("corpus_sha256"),
        },
        "world_size": world,
    }

    model = build_model(cfg, kernels, dtype, tc.seed)
    optimizer = make_optimizer(tc)
    optimizer.init(model.trainable_parameters())
    start = 0
    if resume:
        path = latest_checkpoint(out_dir) if resume is True else Path(resume)
        if path is None:
            raise LLMError(
                f"no checkpoint to resume in {out_dir / 'checkpoints'}; train without --resume first"
            )
        check_compatible(read_checkpoint_config(path), cfg, path)
        start = load_checkpoint(path, model, optimizer)
        if rank == 0:
            log(f"[train] resumed from {path} at step {start}")
    n_params = num_parameters(model)

    step_fn = make_step(model, optimizer, tc, world, compile)
    val = D.val_batches(data, tc.batch_size, tc.seq_len, tc.eval_batches)
    result = RunResult(out_dir, tc.steps, compiled=compile, n_params=n_params)

    log_rows = []
    log_path = out_dir / "log.csv"
    if rank == 0:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
        if start == 0:  # the initial weights: the PyTorch reference starts from them
            model.save_weights(str(out_dir / "init.safetensors"))
        if start and log_path.exists():  # keep what the resumed run had logged
            with open(log_path) as f:
                log_rows = [r for r in csv.DictReader(f) if int(r["step"]) <= start]
        log(
            f"[train] {n_params / 1e6:.2f}M parameters, {dtype}, kernels {kernels}, "
            f"{'compiled' if compile else 'uncompiled'} step, {world} process(es), "
            f"device {mx.default_device()}, global batch {tc.batch_size} x {tc.seq_len} tokens"
        )

    bar = _progress(tc.steps, start, disable=rank != 0) if progress else None
    tokens_per_step = tc.batch_size * tc.seq_len
    # Throughput is wall time less evaluation, checkpoints and the compiling first step(s).
    # Timing each step alone would miss the waits that flush() and evaluation drain (with two
    # steps in flight, a step's GPU time is waited for by whatever reads its results next).
    timed_tokens, excluded = 0, 0.0
    pending = []  # (step, loss, norm, lr) arrays not yet read back
    t_run = time.perf_counter()
    last_val = None

    def flush():
        nonlocal pending
        for s, loss, norm, lr in pending:
            row = {
                "step": s + 1,
                "lr": lr,
                "loss": loss.item(),
                "grad_norm": norm.item(),
                "val_loss": "",
                "tokens_per_s": "",
                "elapsed_s": "",
            }
            result.losses.append(row["loss"])
            log_rows.append(row)
        pending = []

    # On a GPU, two steps in flight: step i is submitted (async_eval) before step i - 1 is
    # waited for, so the host builds and launches step i while the GPU still runs step i - 1.
    # On the CPU the host is the device: nothing to overlap, each step is evaluated in turn.
    pipelined = mx.default_device() == mx.gpu
    previous = None
    for step in range(start, tc.steps):
        x, y = D.train_batch(data, tc.batch_size, tc.seq_len, tc.seed, step, rank, world)
        tic = time.perf_counter()
        loss, norm = step_fn(mx.array(x), mx.array(y))
        if pipelined:
            mx.async_eval(loss, norm, model.parameters(), optimizer.state)
            if previous is not None:
                mx.eval(previous)
            previous = loss
        else:
            mx.eval(loss, norm, model.parameters(), optimizer.state)
        dt = time.perf_counter() - tic
        if step > start + pipelined:
            timed_tokens += tokens_per_step
        else:  # the first step compiles (and its wait, pipelined)
            excluded += dt
        pending.append((step, loss, norm, lr_at(step, tc)))
        done = step + 1
        is_eval = done % tc.eval_every == 0 or done == tc.steps
        if done % log_every == 0 or is_eval or done == tc.steps:
            flush()
            rate = _rate(timed_tokens, time.perf_counter() - t_run - excluded)
            log_rows[-1]["tokens_per_s"] = f"{rate:.1f}"
            log_rows[-1]["elapsed_s"] = f"{time.perf_counter() - t_run:.1f}"
            if is_eval:
                tic = time.perf_counter()
                last_val = evaluate(model, val, group)
                excluded += time.perf_counter() - tic
                result.val_losses[done] = last_val
                log_rows[-1]["val_loss"] = f"{last_val:.4f}"
            if not math.isfinite(log_rows[-1]["loss"]):
                raise LLMError(
                    f"the loss became {log_rows[-1]['loss']} at step {done}; lower --lr or use --dtype float32"
                )
            if bar is not None:
                post = {"loss": f"{log_rows[-1]['loss']:.3f}", "tok/s": f"{rate:,.0f}"}
                if last_val is not None:
                    post["val"] = f"{last_val:.3f}"
                bar.set_postfix(post, refresh=False)
        if bar is not None:
            bar.update(1)
        if rank == 0 and (done % tc.checkpoint_every == 0 or done == tc.steps):
            flush()
            tic = time.perf_counter()
            save_checkpoint(checkpoint_dir(out_dir, done), model, optimizer, done, meta)
            _write_log(log_path, log_rows)
            excluded += time.perf_counter() - tic
    flush()
    if bar is not None:
        bar.close()
    result.seconds = time.perf_counter() - t_run
    result.tokens_per_s = _rate(timed_tokens, result.seconds - excluded)
    result.model = model
    if rank == 0:
        _write_log(log_path, log_rows)
        summary = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "device": str(mx.default_device()),
            "params": n_params,
            "steps": tc.steps,
            "resumed_from": start,
            "tokens_per_s": result.tokens_per_s,
            "final_val_loss": last_val,
            "seconds": result.seconds,
            "world_size": world,
            **meta,
        }
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        if plot:
            png = plot_losses(
                log_rows,
                out_dir / "loss.png",
                title=f"{n_params / 1e6:.1f}M-parameter Llama on kiln",
            )
            if png:
                log(f"[train] loss curve: {png}")
        log(
            f"[train] {tc.steps - start} steps in {result.seconds:.1f} s, {result.tokens_per_s:,.0f} tokens/s"
            + (
                f", val loss {last_val:.3f} (perplexity {math.exp(last_val):.1f})"
                if last_val is not None
                else ""
            )
        )
    return result


def _rate(tokens, seconds):
    return tokens / seconds if tokens and seconds > 0 else float("nan")


def _write_log(path: Path, rows):
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=LOG_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in LOG_FIELDS})
    tmp.replace(path)


def read_log(path) -> List[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))
