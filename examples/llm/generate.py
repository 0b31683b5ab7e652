"""Generation with a KV cache (the prompt in one pass, then one token at a time),
temperature and top-p (nucleus) sampling, 4-bit quantization with ``nn.quantize``, and
validation perplexity to measure what quantization costs."""

import math
import time
from pathlib import Path
from typing import Iterator, List, Optional

from .framework import mx, nn

from . import config as C
from . import data as D
from .errors import LLMError
from .model import Model, loss_fn
from .train import DTYPES, load_checkpoint, read_checkpoint_config


def sample(logits: mx.array, temperature: float = 0.0, top_p: float = 1.0, key=None) -> mx.array:
    """The next token of each row of `logits` ``(B, V)``: the argmax at temperature 0, else
    a draw from softmax(logits / temperature) restricted to the smallest set of tokens
    whose probability reaches `top_p`."""
    if temperature == 0:
        return mx.argmax(logits, axis=-1)
    logits = logits.astype(mx.float32) / temperature
    if top_p < 1.0:
        probs = mx.softmax(logits, axis=-1)
        order = mx.argsort(-probs, axis=-1)
        sorted_probs = mx.take_along_axis(probs, order, axis=-1)
        # Keep a token when the mass before it is below top_p (the first always stays).
        before = mx.cumsum(sorted_probs, axis=-1) - sorted_probs
        keep_sorted = before < top_p
        keep = mx.put_along_axis(mx.zeros_like(keep_sorted), order, keep_sorted, axis=-1)
        logits = mx.where(keep, logits, -float("inf"))
    return mx.random.categorical(logits, key=key)


def generate_step(
    prompt: mx.array,
    model: Model,
    temperature: float = 0.0,
    top_p: float = 1.0,
    use_cache: bool = True,
) -> Iterator[int]:
    """Yields the tokens that follow `prompt` (1-d), one per step. With the cache the
    prompt runs once and each new token alone; without, the whole sequence runs again at
    every step (the reference the cache must reproduce)."""
    cache = model.make_cache() if use_cache else None
    seq = prompt
    y = prompt
    while True:
        if use_cache:
            logits = model(y[None], cache=cache)[:, -1, :]
        else:
            logits = model(seq[None])[:, -1, :]
        y = sample(logits, temperature, top_p)
        mx.eval(y)
        token = y.item()
        if not use_cache:
            seq = mx.concatenate([seq, y])
        yield token


def generate(
    model: Model,
    prompt_ids: List[int],
    max_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    use_cache: bool = True,
):
    """(tokens, stats): the generated ids, and the prompt's and generation's tokens/s."""
    if not prompt_ids:
        raise LLMError("the prompt is empty after tokenization; pass some text with --prompt")
    limit = model.args.max_position_embeddings
    if len(prompt_ids) + max_tokens > limit * 4:
        raise LLMError(
            f"prompt ({len(prompt_ids)} tokens) + --max-tokens {max_tokens} is far past the trained context {limit}; shorten them"
        )
    tokens = []
    tic = time.perf_counter()
    t_first = None
    for token, _ in zip(
        generate_step(mx.array(prompt_ids), model, temperature, top_p, use_cache), range(max_tokens)
    ):
        if t_first is None:
            t_first = time.perf_counter()
        tokens.append(token)
    toc = time.perf_counter()
    stats = {
        "prompt_tokens_per_s": len(prompt_ids) / max(t_first - tic, 1e-9) if t_first else 0.0,
        "generation_tokens_per_s": (
            (len(tokens) - 1) / max(toc - t_first, 1e-9) if len(tokens) > 1 else 0.0
        ),
    }
    return tokens, stats


def load_model(checkpoint, kernels: str = "builtin", dtype: Optional[str] = None) -> Model:
    """The model a checkpoint folder holds, built from its own config.json."""
    info = read_checkpoint_config(checkpoint)
    cfg = C.from_dict(C.ModelConfig, info["model"]).validate()
    model = Model(cfg, kernels=kernels)
    dtype = dtype or info.get("dtype", "float32")
    if dtype != "float32":
        model.set_dtype(DTYPES[dtype])
    load_checkpoint(checkpoint, model)
    model.eval()
    return model


def quantize(model: Model, bits: int = 4, group_size: int = 64) -> Model:
    """Quantizes, in place, every Linear and the Embedding whose width `group_size`
    divides (``nn.quantize``)."""
    nn.quantize(
        model,
        group_size=group_size,
        bits=bits,
        class_predicate=lambda _, m: hasattr(m, "to_quantized")
        and m.weight.shape[-1] % group_size == 0,
    )
    return model


def perplexity(model: Model, batches) -> float:
    """exp(mean next-token cross entropy) over validation batches."""
    total = 0.0
    for x, y in batches:
        total += loss_fn(model, mx.array(x), mx.array(y)).item()
    return math.exp(total / len(batches))
