"""The command line: ``python examples/llm/main.py COMMAND [options]``.

    prepare   corpus -> tokenizer.json + train.bin/val.bin/meta.json (once)
    train     train a config (tiny, small, gpu100m or a JSON file); --resume continues
    generate  sample text from a checkpoint (KV cache, temperature, top-p, 4-bit)
    quantize  validation perplexity of a checkpoint in full precision and 4-bit, and a sample
    bench     the custom kernels against the built-ins: errors and speed-ups on this model
    demo      all of the above, end to end (what `make demo` runs)

Bad input (a missing corpus, tokenizer or token file, a checkpoint from another config,
no GPU) ends with one line naming what is missing and the command that fixes it.
"""

import argparse
import math
import os
import sys
import time
from pathlib import Path

from .errors import LLMError

MAIN = "python examples/llm/main.py"


def _device(name: str):
    """Sets kiln's default device: 'cpu', 'gpu' (an error without one) or 'auto'."""
    from .framework import mx

    has_gpu = mx.is_available(mx.gpu)
    if name == "gpu" and not has_gpu:
        raise LLMError(
            "no GPU is usable here (kiln found no NVIDIA GPU and driver); run on the CPU with:  --device cpu"
        )
    dev = mx.gpu if (name == "gpu" or (name == "auto" and has_gpu)) else mx.cpu
    mx.set_default_device(dev)
    return dev


def _train_config(args, preset):
    tc = preset.train
    for flag, field in (
        ("steps", "steps"),
        ("batch_size", "batch_size"),
        ("seq_len", "seq_len"),
        ("lr", "learning_rate"),
        ("warmup", "warmup_steps"),
        ("eval_every", "eval_every"),
        ("eval_batches", "eval_batches"),
        ("checkpoint_every", "checkpoint_every"),
        ("seed", "seed"),
    ):
        v = getattr(args, flag, None)
        if v is not None:
            setattr(tc, field, v)
    if tc.warmup_steps >= tc.steps:
        tc.warmup_steps = max(0, tc.steps // 10)
    return tc


def _resolve_config(name: str):
    from . import config as C

    if name.endswith(".json"):
        p = C.preset("small")
        p.model = C.load_model_config(name)
        import json

        d = json.loads(Path(name).read_text())
        if "train" in d:
            p.train = C.from_dict(C.TrainConfig, d["train"])
        p.vocab_size = p.model.vocab_size
        return p
    return C.preset(name)


def _data_dir(args, vocab_size):
    from . import data as D

    return Path(args.data) if args.data else D.default_data_dir(vocab_size)


def cmd_prepare(args):
    from . import data as D

    D.prepare(args.data_dir, args.vocab_size, args.corpus, args.tokenizer, args.force)


def cmd_train(args):
    from . import config as C
    from . import data as D
    from . import train as T

    _device(args.device)
    p = _resolve_config(args.config)
    data = D.TokenData(_data_dir(args, p.vocab_size))
    cfg = (
        C.model_config(args.config, data.vocab_size)
        if not args.config.endswith(".json")
        else p.model
    )
    if cfg.vocab_size != data.vocab_size:
        raise LLMError(
            f"config {args.config} has vocabulary {cfg.vocab_size} but {data.dir} has {data.vocab_size}; prepare matching data with:  {MAIN} prepare --vocab-size {cfg.vocab_size}"
        )
    tc = _train_config(args, p)
    out = Path(args.out) if args.out else T.RUNS_ROOT / Path(args.config).stem
    resume = args.resume if args.resume not in (None, "latest") else (args.resume == "latest")
    return T.train(
        cfg,
        tc,
        data,
        out,
        kernels=args.kernels,
        dtype=args.dtype,
        compile=not args.no_compile,
        resume=resume,
        progress=not args.no_progress,
        plot=not args.no_plot,
        log_every=args.log_every,
    )


def _checkpoint(args):
    from . import train as T

    if args.checkpoint:
        path = Path(args.checkpoint)
        if (path / "checkpoints").exists():  # a run folder: its latest checkpoint
            path = T.latest_checkpoint(path) or path
        return path
    out = Path(args.out) if args.out else T.RUNS_ROOT / args.config
    path = T.latest_checkpoint(out)
    if path is None:
        raise LLMError(
            f"no checkpoint in {out / 'checkpoints'}; train one with:  {MAIN} train --config {args.config}"
        )
    return path


def _tokenizer_for(checkpoint, args):
    from . import data as D
    from . import train as T

    info = T.read_checkpoint_config(checkpoint)
    data_dir = Path(args.data) if args.data else Path(info["data"]["dir"])
    data = D.TokenData(data_dir)
    if data.vocab_size != info["model"]["vocab_size"]:
        raise LLMError(
            f"{data_dir} has vocabulary {data.vocab_size}, the checkpoint {info['model']['vocab_size']}; pass the data it was trained on with --data"
        )
    return data, data.tokenizer()


def _show_sample(prompt, text, stats, label, log=print):
    log(
        f"[generate] {label}: prompt {stats['prompt_tokens_per_s']:,.0f} tokens/s, generation {stats['generation_tokens_per_s']:,.1f} tokens/s"
    )
    log("-" * 72)
    log(prompt + text)
    log("-" * 72)


def cmd_generate(args):
    from .framework import mx

    from . import generate as G

    _device(args.device)
    ckpt = _checkpoint(args)
    data, tok = _tokenizer_for(ckpt, args)
    model = G.load_model(ckpt, kernels=args.kernels)
    label = "full precision"
    if args.quantize:
        G.quantize(model, bits=args.quantize)
        label = f"{args.quantize}-bit"
    mx.random.seed(args.seed)
    ids = tok.encode(args.prompt)
    tokens, stats = G.generate(
        model, ids, args.max_tokens, args.temperature, args.top_p, use_cache=not args.no_cache
    )
    _show_sample(
        args.prompt, tok.decode(tokens), stats, f"{ckpt} ({label}, tokenizer: {tok.backend})"
    )
    return tokens


def cmd_quantize(args, log=print):
    from .framework import mx

    from . import data as D
    from . import generate as G
    from . import train as T

    _device(args.device)
    ckpt = _checkpoint(args)
    data, tok = _tokenizer_for(ckpt, args)
    info = T.read_checkpoint_config(ckpt)
    seq = info["train"]["seq_len"]
    batches = D.val_batches(data, info["train"]["batch_size"], seq, args.eval_batches)
    ids = tok.encode(args.prompt)
    results = {}
    for bits in (None, args.bits):
        model = G.load_model(ckpt)
        if bits:
            G.quantize(model, bits=bits, group_size=args.group_size)
        ppl = G.perplexity(model, batches)
        mx.random.seed(args.seed)
        tokens, stats = G.generate(model, ids, args.max_tokens, args.temperature, args.top_p)
        results[bits or 0] = (ppl, stats, tok.decode(tokens))
    ppl_full, ppl_q = results[0][0], results[args.bits][0]
    log(
        f"[quantize] validation perplexity: full precision {ppl_full:.2f}, {args.bits}-bit (group {args.group_size}) "
        f"{ppl_q:.2f}: {100 * (ppl_q / ppl_full - 1):+.2f}% ({len(batches)} batches of {seq} tokens)"
    )
    for bits in (0, args.bits):
        ppl, stats, text = results[bits]
        _show_sample(
            args.prompt, text, stats, "full precision" if bits == 0 else f"{bits}-bit", log
        )
    return results


def cmd_bench(args):
    from .framework import mx

    from . import bench as B
    from . import config as C

    _device(args.device)
    p = _resolve_config(args.config)
    cfg = p.model
    cfg.vocab_size = p.vocab_size
    tc = _train_config(args, p)
    return B.report(cfg, tc, args.dtype, step=not args.no_step)


def cmd_demo(args):
    """Prepare (if needed), check and time the kernels, train, generate, quantize."""
    from .framework import mx

    from . import bench as B
    from . import config as C
    from . import data as D
    from . import generate as G
    from . import train as T

    dev = _device(args.device)
    name = args.config or ("gpu100m" if dev == mx.gpu else "small")
    p = C.preset(name)
    where = "GPU" if dev == mx.gpu else f"CPU ({os.cpu_count()} cores)"
    print(f"[demo] device {where}; config {name}: a Llama-style decoder on the King James Bible")
    if dev != mx.gpu:
        print(
            "[demo] no GPU in use: the CPU demo (the GPU config runs where `kiln` sees an NVIDIA GPU)"
        )

    # 1. data
    data_dir = _data_dir(args, p.vocab_size)
    try:
        D.prepare(data_dir, p.vocab_size, "kjv")
    except LLMError as e:
        print(f"[demo] {e}")
        data_dir = D.default_data_dir(512, "sample")
        print(
            f"[demo] going on with the short sample text shipped with the example ({D.SAMPLE_TEXT.name}), vocabulary 512"
        )
        try:
            D.prepare(data_dir, 512, "sample")
        except LLMError as e2:  # no `tokenizers` either: bytes
            print(f"[demo] {e2}")
            data_dir = D.default_data_dir(256, "sample-bytes")
            D.prepare(data_dir, 256, "sample", tokenizer="byte")
    data = D.TokenData(data_dir)
    cfg = C.model_config(name, data.vocab_size)
    tc = _train_config(args, p)
    dtype = args.dtype or ("bfloat16" if dev == mx.gpu else "float32")

    # 2. kernels
    kernel_report = None
    if not args.skip_kernels:
        try:
            kernel_report = B.report(cfg, tc, dtype)
        except Exception as e:  # noqa: BLE001 - e.g. no host compiler for CPU kernels
            print(
                f"[demo] the custom kernels could not run ({str(e).splitlines()[0]}); training with the built-ins"
            )

    # 3. training
    out = Path(args.out) if args.out else T.RUNS_ROOT / name
    kernels = args.kernels
    if kernels == "auto":
        kernels = "builtin"
        if (
            kernel_report
            and "step" in kernel_report
            and kernel_report["step"]["custom"] < kernel_report["step"]["builtin"]
        ):
            kernels = "custom"
        print(f"[demo] training with the {kernels} kernels (the faster training step here)")
    result = T.train(cfg, tc, data, out, kernels=kernels, dtype=dtype, log_every=args.log_every)
    final = result.val_losses.get(tc.steps)

    # 4. generation and quantization
    ckpt = T.latest_checkpoint(out)
    tok = data.tokenizer()
    ns = argparse.Namespace(
        checkpoint=str(ckpt),
        data=str(data_dir),
        out=None,
        config=name,
        device=args.device,
        bits=4,
        group_size=64 if cfg.hidden_size % 64 == 0 else 32,
        eval_batches=tc.eval_batches,
        prompt=args.prompt,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        seed=0,
    )
    cmd_quantize(ns)

    target = TARGET_VAL_LOSS.get((name, data.meta.get("corpus")))
    line = f"[demo] {result.n_params / 1e6:.1f}M parameters, {tc.steps} steps, {result.tokens_per_s:,.0f} training tokens/s on the {where}"
    if final is not None:
        line += f", validation loss {final:.3f} (perplexity {math.exp(final):.1f})"
        if target is not None and tc.steps == p.train.steps:
            line += f": target <= {target} {'reached' if final <= target else 'NOT reached'}"
    print(line)
    print(
        f"[demo] log {out / 'log.csv'}, loss curve {out / 'loss.png'}, checkpoints {out / 'checkpoints'}"
    )
    if target is not None and final is not None and tc.steps == p.train.steps and final > target:
        return 1
    return 0


# The validation loss each demo must reach with its preset's defaults (README,
# benchmarks/results): small on 2 CPU cores reached 4.494; gpu100m on an H200 3.365 after 600
# steps (3.273 at its best, step 400: it then starts to overfit the 1M-token corpus).
TARGET_VAL_LOSS = {("small", "kjv"): 4.6, ("gpu100m", "kjv"): 3.45}


def parser():
    ap = argparse.ArgumentParser(
        prog=MAIN, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="command", required=True)

    def common_train(p, config_default="small"):
        p.add_argument(
            "--config",
            default=config_default,
            help="tiny, small, gpu100m or a JSON file (default %(default)s)",
        )
        p.add_argument(
            "--data", help="a prepared data folder (default: examples/llm/data/kjv-bpe<vocab>)"
        )
        p.add_argument("--out", help="the run folder (default: examples/llm/runs/<config>)")
        p.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
        for flag, typ in (
            ("--steps", int),
            ("--batch-size", int),
            ("--seq-len", int),
            ("--lr", float),
            ("--warmup", int),
            ("--eval-every", int),
            ("--eval-batches", int),
            ("--checkpoint-every", int),
            ("--seed", int),
        ):
            p.add_argument(flag, type=typ)
        p.add_argument("--log-every", type=int, default=10)

    def sampling(p, seed=True):
        p.add_argument("--prompt", default="And it came to pass")
        p.add_argument("--max-tokens", type=int, default=100)
        p.add_argument("--temperature", type=float, default=0.8)
        p.add_argument("--top-p", type=float, default=0.9)
        if seed:
            p.add_argument("--seed", type=int, default=0)

    p = sub.add_parser("prepare", help="tokenize the corpus into token files")
    p.add_argument("--vocab-size", type=int, default=8192)
    p.add_argument(
        "--corpus",
        default="kjv",
        help="kjv (Debian's bible-kjv-text), sample, or a UTF-8 text file",
    )
    p.add_argument(
        "--data-dir", help="output folder (default: examples/llm/data/<corpus>-bpe<vocab>)"
    )
    p.add_argument("--tokenizer", default="bpe", choices=["bpe", "byte"])
    p.add_argument("--force", action="store_true")
    p.set_defaults(fn=cmd_prepare)

    p = sub.add_parser("train", help="train a model")
    common_train(p)
    p.add_argument("--kernels", default="builtin", choices=["builtin", "custom"])
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    p.add_argument("--no-compile", action="store_true", help="run the step uncompiled")
    p.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        help="continue from the latest checkpoint in --out (or this one)",
    )
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(fn=cmd_train)

    for name, fn, help_ in (
        ("generate", cmd_generate, "sample from a checkpoint"),
        ("quantize", cmd_quantize, "perplexity and samples, full precision and quantized"),
    ):
        p = sub.add_parser(name, help=help_)
        p.add_argument(
            "--checkpoint",
            help="a checkpoint folder or a run folder (default: the latest of --config's run)",
        )
        p.add_argument("--config", default="small")
        p.add_argument("--out")
        p.add_argument(
            "--data", help="the data folder with the tokenizer (default: the checkpoint's)"
        )
        p.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
        sampling(p)
        if name == "generate":
            p.add_argument("--kernels", default="builtin", choices=["builtin", "custom"])
            p.add_argument(
                "--quantize",
                type=int,
                choices=[0, 4, 8],
                default=0,
                help="bits (0: full precision)",
            )
            p.add_argument(
                "--no-cache", action="store_true", help="recompute the whole sequence each token"
            )
        else:
            p.add_argument("--bits", type=int, choices=[4, 8], default=4)
            p.add_argument("--group-size", type=int, default=64)
            p.add_argument("--eval-batches", type=int, default=8)
        p.set_defaults(fn=fn)

    p = sub.add_parser("bench", help="the custom kernels against the built-ins")
    common_train(p)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    p.add_argument("--no-step", action="store_true", help="only the kernels alone")
    p.set_defaults(fn=cmd_bench)

    p = sub.add_parser("demo", help="prepare, kernels, train, generate, quantize")
    common_train(p, config_default=None)
    p.add_argument("--kernels", default="auto", choices=["auto", "builtin", "custom"])
    p.add_argument("--dtype", choices=["float32", "bfloat16"])
    p.add_argument("--skip-kernels", action="store_true")
    sampling(p, seed=False)
    p.set_defaults(fn=cmd_demo)
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        rc = args.fn(args)
    except LLMError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return rc if isinstance(rc, int) else 0
