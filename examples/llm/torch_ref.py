#!/usr/bin/env python3
"""The same model and training loop in PyTorch, for side-by-side runs with kiln.

It reads a kiln run folder (written by ``main.py train``): its config.json (model, training
hyperparameters, dtype, data folder) and init.safetensors (kiln's initial weights, read
with NumPy), and trains the same steps on the same batches (:func:`llm.data.train_batch`
is a function of seed and step) with the same AdamW (decoupled weight decay, bias
correction), warm-up + cosine schedule (:func:`llm.config.lr_at`) and gradient clipping,
then writes ``torch-eager/`` or ``torch-compile/`` beside kiln's files: log.csv,
summary.json, and compare.png (the loss curves of both). It prints kiln's validation loss
next to its own at each evaluation, and with ``--generate N`` times batch-1 generation with
a KV cache (full precision) as kiln's ``generate`` does.

    python examples/llm/torch_ref.py RUN_DIR [--compile] [--device cuda|cpu] [--steps N]

Needs only PyTorch and NumPy (no kiln, no `tokenizers`): the GPU machine has both.
"""

import argparse
import json
import math
import struct
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from llm import config as C  # noqa: E402  (pure Python: no kiln)
from llm import data as D  # noqa: E402
from llm.errors import LLMError  # noqa: E402

try:
    import torch
    import torch.nn as tnn
    import torch.nn.functional as F
except ImportError:  # the module stays importable; main() says what is missing
    torch = None


# ---------------------------------------------------------------- safetensors with NumPy

_ST_DTYPES = {
    "F32": np.float32,
    "F16": np.float16,
    "BF16": np.uint16,
    "I32": np.int32,
    "I64": np.int64,
    "U32": np.uint32,
}


def read_safetensors(path):
    """{name: (numpy array, dtype string)}; bfloat16 comes back as its uint16 bits."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        lo, hi = spec["data_offsets"]
        arr = np.frombuffer(raw[8 + n + lo : 8 + n + hi], dtype=_ST_DTYPES[spec["dtype"]]).reshape(
            spec["shape"]
        )
        out[name] = (arr, spec["dtype"])
    return out


def to_torch(arr, dtype):
    if dtype == "BF16":
        return torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.array(arr))


# ---------------------------------------------------------------- the model (mlx-lm's names)

if torch is not None:

    class RMSNorm(tnn.Module):
        def __init__(self, dims, eps):
            super().__init__()
            self.weight = tnn.Parameter(torch.ones(dims))
            self.eps = eps

        def forward(self, x):
            # As kiln's fast.rms_norm: the statistics and scaling in float32.
            x32 = x.float()
            y = (
                x32
                * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
                * self.weight.float()
            )
            return y.to(x.dtype)

    def rope_tables(head_dim, base, positions, device):
        inv = base ** (-torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
        theta = positions.float()[:, None] * inv[None]
        return torch.cos(theta), torch.sin(theta)

    def apply_rope(x, cos, sin):
        """Non-traditional RoPE (as nn.RoPE(traditional=False)): rotate the two halves."""
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half].float(), x[..., half:].float()
        out = torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
        return out.to(x.dtype)

    def attention(q, k, v, scale, causal):
        n_rep = q.shape[1] // k.shape[1]
        if n_rep > 1:  # query head h reads kv head h // n_rep, as kiln's GQA
            k = k.repeat_interleave(n_rep, dim=1)
            v = v.repeat_interleave(n_rep, dim=1)
        if hasattr(F, "scaled_dot_product_attention"):
            try:
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
            except TypeError:  # torch 2.0: no scale argument
                pass
        s = (q.float() @ k.float().transpose(-1, -2)) * scale
        if causal:
            L, S = q.shape[2], k.shape[2]
            mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril(S - L)
            s = s.masked_fill(~mask, float("-inf"))
        return (torch.softmax(s, dim=-1) @ v.float()).to(q.dtype)

    class Attention(tnn.Module):
        def __init__(self, a):
            super().__init__()
            self.n_heads, self.n_kv, self.hd = (
                a.num_attention_heads,
                a.num_key_value_heads,
                a.head_dim,
            )
            self.base = a.rope_theta
            d = a.hidden_size
            self.q_proj = tnn.Linear(d, self.n_heads * self.hd, bias=False)
            self.k_proj = tnn.Linear(d, self.n_kv * self.hd, bias=False)
            self.v_proj = tnn.Linear(d, self.n_kv * self.hd, bias=False)
            self.o_proj = tnn.Linear(self.n_heads * self.hd, d, bias=False)

        def forward(self, x, cache=None):
            B, L, _ = x.shape
            q = self.q_proj(x).view(B, L, self.n_heads, self.hd).transpose(1, 2)
            k = self.k_proj(x).view(B, L, self.n_kv, self.hd).transpose(1, 2)
            v = self.v_proj(x).view(B, L, self.n_kv, self.hd).transpose(1, 2)
            offset = cache["offset"] if cache is not None else 0
            cos, sin = rope_tables(
                self.hd, self.base, torch.arange(offset, offset + L, device=x.device), x.device
            )
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            if cache is not None:
                if cache["k"] is not None:
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"], cache["offset"] = k, v, offset + L
            out = attention(q, k, v, self.hd**-0.5, causal=L > 1)
            return self.o_proj(out.transpose(1, 2).reshape(B, L, -1))

    class MLP(tnn.Module):
        def __init__(self, d, f):
            super().__init__()
            self.gate_proj = tnn.Linear(d, f, bias=False)
            self.down_proj = tnn.Linear(f, d, bias=False)
            self.up_proj = tnn.Linear(d, f, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Block(tnn.Module):
        def __init__(self, a):
            super().__init__()
            self.self_attn = Attention(a)
            self.mlp = MLP(a.hidden_size, a.intermediate_size)
            self.input_layernorm = RMSNorm(a.hidden_size, a.rms_norm_eps)
            self.post_attention_layernorm = RMSNorm(a.hidden_size, a.rms_norm_eps)

        def forward(self, x, cache=None):
            h = x + self.self_attn(self.input_layernorm(x), cache)
            return h + self.mlp(self.post_attention_layernorm(h))

    class Inner(tnn.Module):
        def __init__(self, a):
            super().__init__()
            self.embed_tokens = tnn.Embedding(a.vocab_size, a.hidden_size)
            self.layers = tnn.ModuleList([Block(a) for _ in range(a.num_hidden_layers)])
            self.norm = RMSNorm(a.hidden_size, a.rms_norm_eps)

    class TorchLlama(tnn.Module):
        def __init__(self, a: C.ModelConfig):
            super().__init__()
            self.args = a
            self.model = Inner(a)
            if not a.tie_word_embeddings:
                self.lm_head = tnn.Linear(a.hidden_size, a.vocab_size, bias=False)

        def forward(self, tokens, caches=None):
            h = self.model.embed_tokens(tokens)
            for i, layer in enumerate(self.model.layers):
                h = layer(h, None if caches is None else caches[i])
            h = self.model.norm(h)
            if self.args.tie_word_embeddings:
                return h @ self.model.embed_tokens.weight.t()
            return self.lm_head(h)


def load_init(model, path):
    """Copies kiln's initial weights (safetensors, mlx-lm names) into the torch model."""
    weights = read_safetensors(path)
    own = dict(model.named_parameters())
    missing = sorted(set(own) - set(weights))
    extra = sorted(set(weights) - set(own))
    if missing or extra:
        raise LLMError(
            f"{path} does not match the model (missing {missing[:3]}, extra {extra[:3]}); use the run's own init.safetensors"
        )
    with torch.no_grad():
        for name, p in own.items():
            arr, dt = weights[name]
            t = to_torch(arr, dt)
            if tuple(t.shape) != tuple(p.shape):
                raise LLMError(
                    f"{name}: shape {tuple(t.shape)} in {path}, {tuple(p.shape)} in the model"
                )
            p.copy_(t.to(p.dtype))


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def train(run_dir: Path, compile: bool, device: str, steps=None, log=print):
    info = json.loads((run_dir / "config.json").read_text())
    cfg = C.from_dict(C.ModelConfig, info["model"])
    tc = C.from_dict(C.TrainConfig, info["train"])
    if steps:
        tc.steps = steps  # the schedule stays the kiln run's unless both pass the same --steps
    data = D.TokenData(info["data"]["dir"])
    dev = torch.device(device)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[info.get("dtype", "float32")]
    torch.manual_seed(tc.seed)
    model = TorchLlama(cfg)
    model.to(device=dev, dtype=dtype)
    init = run_dir / "init.safetensors"
    if not init.exists():
        raise LLMError(
            f"{init} is missing; write it with a fresh kiln run:  python examples/llm/main.py train --out {run_dir}"
        )
    load_init(model, init)
    params = list(model.parameters())
    opt = torch.optim.AdamW(
        params,
        lr=tc.learning_rate,
        betas=(tc.beta1, tc.beta2),
        eps=tc.eps,
        weight_decay=tc.weight_decay,
    )
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: C.lr_at(s, tc) / tc.learning_rate)
    fwd = model
    if compile:
        if not hasattr(torch, "compile"):
            raise LLMError(
                f"torch {torch.__version__} has no torch.compile (2.0+); run without --compile"
            )
        fwd = torch.compile(model)

    def loss_of(x, y):
        logits = fwd(x)
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))

    val = [
        (torch.from_numpy(x).long().to(dev), torch.from_numpy(y).long().to(dev))
        for x, y in D.val_batches(data, tc.batch_size, tc.seq_len, tc.eval_batches)
    ]
    kiln_val = {}
    kiln_log = run_dir / "log.csv"
    if kiln_log.exists():
        import csv

        with open(kiln_log) as f:
            kiln_val = {
                int(r["step"]): float(r["val_loss"]) for r in csv.DictReader(f) if r["val_loss"]
            }

    rows, timed_tokens, timed_s = [], 0, 0.0
    name = "torch-compile" if compile else "torch-eager"
    out = run_dir / name
    out.mkdir(exist_ok=True)
    log(
        f"[torch] {sum(p.numel() for p in params) / 1e6:.2f}M parameters, {info.get('dtype')}, {name}, torch {torch.__version__} on {dev}"
    )
    t0 = time.perf_counter()
    for step in range(tc.steps):
        x, y = D.train_batch(data, tc.batch_size, tc.seq_len, tc.seed, step)
        x, y = torch.from_numpy(x).long().to(dev), torch.from_numpy(y).long().to(dev)
        _sync(dev)
        tic = time.perf_counter()
        loss = loss_of(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(params, tc.grad_clip)
        lr = opt.param_groups[0]["lr"]
        opt.step()
        sched.step()
        loss_v = loss.item()
        _sync(dev)
        dt = time.perf_counter() - tic
        if step > 0:
            timed_tokens += tc.batch_size * tc.seq_len
            timed_s += dt
        row = {
            "step": step + 1,
            "lr": lr,
            "loss": loss_v,
            "grad_norm": float(norm),
            "val_loss": "",
            "tokens_per_s": "",
            "elapsed_s": "",
        }
        done = step + 1
        if done % tc.eval_every == 0 or done == tc.steps:
            with torch.no_grad():
                v = sum(loss_of(a, b).item() for a, b in val) / len(val)
            row["val_loss"] = f"{v:.4f}"
            rate = timed_tokens / timed_s if timed_s else float("nan")
            row["tokens_per_s"] = f"{rate:.1f}"
            row["elapsed_s"] = f"{time.perf_counter() - t0:.1f}"
            other = kiln_val.get(done)
            cmp = f"   kiln {other:.4f} ({100 * (v / other - 1):+.2f}%)" if other else ""
            log(
                f"[torch] step {done:5d}  loss {loss_v:.4f}  val {v:.4f}{cmp}  {rate:,.0f} tokens/s"
            )
        rows.append(row)
    rate = timed_tokens / timed_s if timed_s else float("nan")
    summary = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "device": str(dev) + (f" ({torch.cuda.get_device_name()})" if dev.type == "cuda" else ""),
        "torch": torch.__version__,
        "mode": name,
        "tokens_per_s": rate,
        "final_val_loss": float(rows[-1]["val_loss"]),
        "kiln_final_val_loss": kiln_val.get(tc.steps),
        "steps": tc.steps,
    }
    import csv

    with open(out / "log.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if kiln_log.exists():
        from llm.plot import plot_losses

        with open(kiln_log) as f:
            kiln_rows = list(csv.DictReader(f))
        png = plot_losses(
            kiln_rows,
            out / "compare.png",
            title="kiln and PyTorch, same init, data and schedule",
            others={name: rows},
        )
        if png:
            log(f"[torch] overlaid loss curves: {png}")
    log(
        f"[torch] {tc.steps} steps, {rate:,.0f} tokens/s, final val loss {summary['final_val_loss']:.4f}"
    )
    return model, summary, data


@torch.no_grad() if torch is not None else (lambda f: f)
@torch.inference_mode() if torch is not None else (lambda f: f)
def generate(model, prompt_ids, n, device):
    """Greedy batch-1 generation with a KV cache, under inference mode (no autograd
    records, PyTorch's fastest eager path): (tokens, generation tokens/s)."""
    model.eval()
    caches = [{"k": None, "v": None, "offset": 0} for _ in model.model.layers]
    x = torch.tensor([prompt_ids], device=device)
    out = []
    t_first = None
    for _ in range(n):
        logits = model(x, caches)[:, -1]
        x = logits.argmax(-1, keepdim=True)
        out.append(int(x.item()))
        if t_first is None:
            t_first = time.perf_counter()
    rate = (n - 1) / (time.perf_counter() - t_first) if n > 1 else 0.0
    return out, rate


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("run", help="a kiln run folder (config.json, init.safetensors, log.csv)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--steps", type=int)
    ap.add_argument("--threads", type=int, help="CPU threads (torch.set_num_threads)")
    ap.add_argument(
        "--generate", type=int, default=0, help="then time greedy generation of N tokens"
    )
    ap.add_argument("--prompt", default="And it came to pass")
    args = ap.parse_args(argv)
    try:
        if torch is None:
            raise LLMError(
                "PyTorch is missing; install it (e.g. pip install torch) to run the reference"
            )
        run = Path(args.run)
        if not (run / "config.json").exists():
            raise LLMError(
                f"{run} is not a kiln run folder (no config.json); make one with:  python examples/llm/main.py train --out {run}"
            )
        if args.threads:
            torch.set_num_threads(args.threads)
        device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise LLMError("no CUDA GPU is visible to PyTorch; run on the CPU with:  --device cpu")
        model, summary, data = train(run, args.compile, device, args.steps)
        if args.generate:
            tok = data.tokenizer()
            ids, rate = generate(
                model, tok.encode(args.prompt), args.generate, torch.device(device)
            )
            print(f"[torch] greedy generation: {rate:,.1f} tokens/s (batch 1, KV cache)")
            print(args.prompt + tok.decode(ids))
    except LLMError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
