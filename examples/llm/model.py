"""A Llama-style decoder written the way mlx-lm writes its models, on kiln.

Only MLX's API is used: this file runs on MLX after its import lines change back to
``mlx.core``/``mlx.nn`` (the custom kernels aside). Llama's pieces: token embeddings,
pre-norm blocks with RMSNorm, grouped-query attention with rotary position embeddings
(``nn.RoPE``, which calls ``mx.fast.rope``) through ``mx.fast.scaled_dot_product_attention``
and a KV cache, a SwiGLU MLP, a final norm and an output head tied to the embeddings or not.

``kernels="custom"`` swaps two built-in compositions in each block for the fused kernels of
:mod:`llm.kernels`: ``silu(gate) * up`` and the residual add feeding the MLP's pre-norm.
The parameters are the same either way, so one checkpoint serves both.
"""

from typing import List, Optional

from .framework import mx, nn

from . import kernels as K
from .config import ModelConfig

KERNEL_CHOICES = ("builtin", "custom")


class KVCache:
    """Keys and values of the positions seen so far, for one layer, as mlx-lm keeps them:
    buffers of ``(B, n_kv_heads, capacity, head_dim)`` grown ``step`` positions at a time
    and written in place, so decoding does not copy the whole cache at every token."""

    step = 256

    def __init__(self):
        self.keys = None
        self.values = None
        self.offset = 0

    def update_and_fetch(self, keys: mx.array, values: mx.array):
        prev = self.offset
        if self.keys is None or prev + keys.shape[2] > self.keys.shape[2]:
            B, n_kv, _, hd = keys.shape
            n_steps = (self.step + keys.shape[2] - 1) // self.step
            shape = (B, n_kv, n_steps * self.step, hd)
            new_k = mx.zeros(shape, keys.dtype)
            new_v = mx.zeros(shape, values.dtype)
            if self.keys is not None:
                self.keys = mx.concatenate([self.keys[..., :prev, :], new_k], axis=2)
                self.values = mx.concatenate([self.values[..., :prev, :], new_v], axis=2)
            else:
                self.keys, self.values = new_k, new_v
        self.offset += keys.shape[2]
        self.keys[..., prev : self.offset, :] = keys
        self.values[..., prev : self.offset, :] = values
        return self.keys[..., : self.offset, :], self.values[..., : self.offset, :]


class Attention(nn.Module):
    def __init__(self, args: ModelConfig):
        super().__init__()
        dim = args.hidden_size
        self.n_heads = args.num_attention_heads
        self.n_kv_heads = args.num_key_value_heads
        self.head_dim = args.head_dim
        self.scale = self.head_dim**-0.5
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
        out = mx.fast.scaled_dot_product_attention(
            queries, keys, values, scale=self.scale, mask=mask
        )
        return self.o_proj(out.transpose(0, 2, 1, 3).reshape(B, L, -1))


class MLP(nn.Module):
    def __init__(self, dim: int, hidden_dim: int):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.kernels = "builtin"

    def __call__(self, x) -> mx.array:
        if self.kernels == "custom":
            return self.down_proj(K.swiglu(self.gate_proj(x), self.up_proj(x)))
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


class TransformerBlock(nn.Module):
    def __init__(self, args: ModelConfig):
        super().__init__()
        self.self_attn = Attention(args)
        self.mlp = MLP(args.hidden_size, args.intermediate_size)
        self.input_layernorm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)
        self.post_attention_layernorm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)
        self.kernels = "builtin"

    def __call__(self, x: mx.array, mask=None, cache: Optional[KVCache] = None) -> mx.array:
        r = self.self_attn(self.input_layernorm(x), mask, cache)
        if self.kernels == "custom":
            norm = self.post_attention_layernorm
            h, normed = K.add_rms_norm(x, r, norm.weight, norm.eps)
        else:
            h = x + r
            normed = self.post_attention_layernorm(h)
        return h + self.mlp(normed)


class LlamaModel(nn.Module):
    def __init__(self, args: ModelConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(args.vocab_size, args.hidden_size)
        self.layers = [TransformerBlock(args) for _ in range(args.num_hidden_layers)]
        self.norm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)

    def __call__(self, inputs: mx.array, cache=None):
        h = self.embed_tokens(inputs)
        if cache is None:
            cache = [None] * len(self.layers)
        # One query attends to every cached key; several need the causal mask.
        mask = "causal" if h.shape[1] > 1 else None
        for layer, c in zip(self.layers, cache):
            h = layer(h, mask, cache=c)
        return self.norm(h)


class Model(nn.Module):
    def __init__(self, args: ModelConfig, kernels: str = "builtin"):
        super().__init__()
        self.args = args
        self.model_type = "llama"
        self.model = LlamaModel(args)
        if not args.tie_word_embeddings:
            self.lm_head = nn.Linear(args.hidden_size, args.vocab_size, bias=False)
        self.set_kernels(kernels)

    def set_kernels(self, kernels: str):
        """'builtin' (kiln's ops and fast built-ins) or 'custom' (the fused kernels)."""
        if kernels not in KERNEL_CHOICES:
            raise ValueError(f"[llm] kernels must be one of {KERNEL_CHOICES}, got {kernels!r}")
        for layer in self.model.layers:
            layer.kernels = kernels
            layer.mlp.kernels = kernels
        self.kernels = kernels

    def __call__(self, inputs: mx.array, cache=None):
        out = self.model(inputs, cache)
        if self.args.tie_word_embeddings:
            return self.model.embed_tokens.as_linear(out)
        return self.lm_head(out)

    @property
    def layers(self):
        return self.model.layers

    def make_cache(self) -> List[KVCache]:
        return [KVCache() for _ in self.model.layers]


def loss_fn(model: Model, inputs: mx.array, targets: mx.array) -> mx.array:
    """Mean next-token cross entropy, in float32 whatever the model's dtype."""
    logits = model(inputs).astype(mx.float32)
    return nn.losses.cross_entropy(logits, targets, reduction="mean")


def num_parameters(model: nn.Module) -> int:
    from .framework import tree_flatten

    return sum(v.size for _, v in tree_flatten(model.parameters()))
