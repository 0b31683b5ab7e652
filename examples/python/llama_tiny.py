"""A small Llama-style decoder written the way mlx-lm writes its models, running on kiln.

The model code uses only MLX's API: an MLX model file runs on kiln after its import lines
change to the three below. Llama's pieces: token embeddings, pre-norm decoder blocks with
RMSNorm, grouped-query attention with rotary position encodings and a KV cache, a SwiGLU
MLP, and a final norm and head (optionally tied to the embeddings).

Run it to train a few steps on random tokens and generate from the result:

    PYTHONPATH=python python examples/python/llama_tiny.py --steps 50
"""

import argparse
import math
import time
from dataclasses import dataclass
from typing import List, Optional

import kiln.core as mx
import kiln.nn as nn
import kiln.optimizers as optim
from kiln.utils import tree_flatten


@dataclass
class ModelArgs:
    vocab_size: int = 256
    hidden_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 128
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    rope_traditional: bool = False
    tie_word_embeddings: bool = False

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads


class KVCache:
    """Keys and values of the positions seen so far, for one layer: ``(B, n_kv_heads, T,
    head_dim)`` each. ``offset`` is the number of cached positions (the next position)."""

    def __init__(self):
        self.keys = None
        self.values = None
        self.offset = 0

    def update_and_fetch(self, keys: mx.array, values: mx.array):
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = mx.concatenate([self.keys, keys], axis=2)
            self.values = mx.concatenate([self.values, values], axis=2)
        self.offset += keys.shape[2]
        return self.keys, self.values


def create_attention_mask(h: mx.array, cache: Optional[List[KVCache]]):
    """ "causal" for a prompt of several tokens, None for single-token decoding (the one new
    query sees every cached key)."""
    return "causal" if h.shape[1] > 1 else None


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_heads = args.num_attention_heads
        self.n_kv_heads = args.num_key_value_heads
        self.head_dim = args.head_dim
        self.scale = self.head_dim**-0.5
        dim = args.hidden_size
        self.q_proj = nn.Linear(dim, self.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, self.n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, self.n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, dim, bias=False)
        self.rope = nn.RoPE(self.head_dim, traditional=args.rope_traditional, base=args.rope_theta)

    def __call__(self, x: mx.array, mask=None, cache: Optional[KVCache] = None) -> mx.array:
        B, L, _ = x.shape
        queries = self.q_proj(x).reshape(B, L, self.n_heads, -1).transpose(0, 2, 1, 3)
        keys = self.k_proj(x).reshape(B, L, self.n_kv_heads, -1).transpose(0, 2, 1, 3)
        values = self.v_proj(x).reshape(B, L, self.n_kv_heads, -1).transpose(0, 2, 1, 3)
        if cache is not None:
            queries = self.rope(queries, offset=cache.offset)
            keys = self.rope(keys, offset=cache.offset)
            keys, values = cache.update_and_fetch(keys, values)
        else:
            queries = self.rope(queries)
            keys = self.rope(keys)
        out = scaled_dot_product_attention(
            queries, keys, values, cache=cache, scale=self.scale, mask=mask
        )
        out = out.transpose(0, 2, 1, 3).reshape(B, L, -1)
        return self.o_proj(out)


def scaled_dot_product_attention(queries, keys, values, cache, scale: float, mask):
    """Attention as mlx-lm's models/base.py calls it: ``mx.fast``'s fused kernel, or the
    same computation from plain ops while kiln.core has no fused attention yet."""
    if hasattr(mx.fast, "scaled_dot_product_attention"):
        return mx.fast.scaled_dot_product_attention(queries, keys, values, scale=scale, mask=mask)
    B, n_heads, L, D = queries.shape
    n_kv = keys.shape[1]
    queries = queries.reshape(B, n_kv, n_heads // n_kv, L, D)
    scores = (queries * scale) @ mx.expand_dims(keys, 2).swapaxes(-1, -2)
    if mask == "causal":
        S = keys.shape[2]
        visible = mx.arange(S - L, S)[:, None] >= mx.arange(S)[None]
        scores = mx.where(visible, scores, mx.finfo(scores.dtype).min)
    weights = mx.softmax(scores.astype(mx.float32), axis=-1).astype(values.dtype)
    return (weights @ mx.expand_dims(values, 2)).reshape(B, n_heads, L, -1)


class MLP(nn.Module):
    def __init__(self, dim: int, hidden_dim: int):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)

    def __call__(self, x) -> mx.array:
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


class TransformerBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.self_attn = Attention(args)
        self.mlp = MLP(args.hidden_size, args.intermediate_size)
        self.input_layernorm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)
        self.post_attention_layernorm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)

    def __call__(self, x: mx.array, mask=None, cache: Optional[KVCache] = None) -> mx.array:
        h = x + self.self_attn(self.input_layernorm(x), mask, cache)
        return h + self.mlp(self.post_attention_layernorm(h))


class LlamaModel(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.embed_tokens = nn.Embedding(args.vocab_size, args.hidden_size)
        self.layers = [TransformerBlock(args) for _ in range(args.num_hidden_layers)]
        self.norm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)

    def __call__(self, inputs: mx.array, cache=None):
        h = self.embed_tokens(inputs)
        if cache is None:
            cache = [None] * len(self.layers)
        mask = create_attention_mask(h, cache)
        for layer, layer_cache in zip(self.layers, cache):
            h = layer(h, mask, cache=layer_cache)
        return self.norm(h)


class Model(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.model = LlamaModel(args)
        if not args.tie_word_embeddings:
            self.lm_head = nn.Linear(args.hidden_size, args.vocab_size, bias=False)

    def __call__(self, inputs: mx.array, cache=None):
        out = self.model(inputs, cache)
        if self.args.tie_word_embeddings:
            return self.model.embed_tokens.as_linear(out)
        return self.lm_head(out)

    def make_cache(self):
        return [KVCache() for _ in self.model.layers]


def loss_fn(model: Model, tokens: mx.array) -> mx.array:
    """Mean next-token cross entropy over a batch of sequences."""
    logits = model(tokens[:, :-1])
    return nn.losses.cross_entropy(logits, tokens[:, 1:], reduction="mean")


def train(model: Model, batches, learning_rate: float = 3e-3, steps: int = 20, log=None):
    """A few steps of AdamW on `batches` (a function of the step giving token arrays);
    returns the losses."""
    schedule = optim.join_schedules(
        [
            optim.linear_schedule(0.0, learning_rate, max(1, steps // 10)),
            optim.cosine_decay(learning_rate, steps),
        ],
        [max(1, steps // 10)],
    )
    optimizer = optim.AdamW(learning_rate=schedule, weight_decay=0.01)
    loss_and_grad = nn.value_and_grad(model, loss_fn)
    losses = []
    for step in range(steps):
        loss, grads = loss_and_grad(model, batches(step))
        grads, _ = optim.clip_grad_norm(grads, max_norm=1.0)
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state, loss)
        losses.append(loss.item())
        if log:
            log(step, losses[-1])
    return losses


def generate_step(prompt: mx.array, model: Model, temperature: float = 0.0, cache=None):
    """Yields tokens after `prompt` (1-d), one per step, decoding with a KV cache: the prompt
    is processed once, then each new token alone."""
    cache = model.make_cache() if cache is None else cache

    def sample(logits):
        if temperature == 0:
            return mx.argmax(logits, axis=-1)
        return mx.random.categorical(logits * (1 / temperature))

    y = prompt
    while True:
        logits = model(y[None], cache=cache)[:, -1, :]
        y = sample(logits)
        mx.eval(y)
        yield y.item()


def generate(
    model: Model, prompt: List[int], max_tokens: int, temperature: float = 0.0
) -> List[int]:
    tokens = []
    for token, _ in zip(generate_step(mx.array(prompt), model, temperature), range(max_tokens)):
        tokens.append(token)
    return tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    mx.random.seed(args.seed)
    model_args = ModelArgs()
    model = Model(model_args)
    mx.eval(model.parameters())
    n_params = sum(v.size for _, v in tree_flatten(model.parameters()))
    print(model)
    print(f"{n_params / 1e3:.1f}K parameters on {mx.default_device()}")

    # A fixed set of random sequences: the loss falls as the model memorizes them.
    data = mx.random.randint(0, model_args.vocab_size, (4 * args.batch, args.seq))

    def batches(step):
        start = (step % 4) * args.batch
        return data[start : start + args.batch]

    tic = time.perf_counter()
    losses = train(
        model,
        batches,
        steps=args.steps,
        log=lambda s, l: print(f"step {s:4d}  loss {l:.3f}") if s % 10 == 0 else None,
    )
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} in {time.perf_counter() - tic:.1f} s")

    prompt = data[0, :8].tolist()
    print("prompt   ", prompt)
    print("generated", generate(model, prompt, args.tokens))
    print("training ", data[0, 8 : 8 + args.tokens].tolist())


if __name__ == "__main__":
    main()
