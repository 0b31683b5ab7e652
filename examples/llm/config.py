"""Model and training configurations: dataclasses that round-trip through JSON.

Three presets: ``tiny`` (tests, seconds on the CPU), ``small`` (~10M parameters, the CPU
demo) and ``gpu100m`` (~100M parameters, the GPU demo). ``vocab_size`` of a preset is the
tokenizer's the data was prepared with; :func:`model_config` fills it in from the data's
meta.json, so a config saved with a checkpoint always names the vocabulary it was trained on.
"""

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .errors import LLMError


@dataclass
class ModelConfig:
    """A Llama-style decoder, with mlx-lm's field names."""

    vocab_size: int = 4096
    hidden_size: int = 256
    num_hidden_layers: int = 6
    num_attention_heads: int = 8
    num_key_value_heads: int = 4
    intermediate_size: int = 688
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    rope_traditional: bool = False
    tie_word_embeddings: bool = True
    max_position_embeddings: int = 256

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def validate(self):
        if self.hidden_size % self.num_attention_heads:
            raise LLMError(
                f"hidden_size {self.hidden_size} is not a multiple of num_attention_heads "
                f"{self.num_attention_heads}"
            )
        if self.num_attention_heads % self.num_key_value_heads:
            raise LLMError(
                f"num_attention_heads {self.num_attention_heads} is not a multiple of "
                f"num_key_value_heads {self.num_key_value_heads}"
            )
        if self.head_dim % 2:
            raise LLMError(f"head_dim {self.head_dim} must be even for rotary embeddings")
        return self


@dataclass
class TrainConfig:
    """Optimization and schedule. ``batch_size`` is the global batch (split over ranks)."""

    batch_size: int = 16
    seq_len: int = 128
    steps: int = 300
    learning_rate: float = 3e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 30
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    grad_clip: float = 1.0
    eval_every: int = 50
    eval_batches: int = 8
    checkpoint_every: int = 100
    seed: int = 0


@dataclass
class Preset:
    model: ModelConfig
    train: TrainConfig
    vocab_size: int  # the tokenizer trained for this preset by `prepare`


PRESETS = {
    # Tests: a few seconds per dozen steps on two cores.
    "tiny": Preset(
        ModelConfig(
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=128,
            max_position_embeddings=64,
        ),
        TrainConfig(
            batch_size=4,
            seq_len=32,
            steps=20,
            learning_rate=3e-3,
            warmup_steps=2,
            eval_every=10,
            eval_batches=2,
            checkpoint_every=10,
        ),
        vocab_size=512,
    ),
    # The CPU demo: ~9.4M parameters (3.1M of them the tied embedding); 300 steps of 1K tokens.
    "small": Preset(
        ModelConfig(
            hidden_size=384,
            num_hidden_layers=4,
            num_attention_heads=6,
            num_key_value_heads=2,
            intermediate_size=1024,
            max_position_embeddings=256,
        ),
        TrainConfig(
            batch_size=8,
            seq_len=128,
            steps=300,
            learning_rate=3e-3,
            warmup_steps=30,
            eval_every=50,
            eval_batches=8,
            checkpoint_every=100,
        ),
        vocab_size=8192,
    ),
    # The GPU demo: ~95M parameters (12.6M of them the untied head), bfloat16. The KJV has
    # about 1M training tokens: 600 steps of 16K tokens see it about 10 times.
    "gpu100m": Preset(
        ModelConfig(
            hidden_size=768,
            num_hidden_layers=12,
            num_attention_heads=12,
            num_key_value_heads=4,
            intermediate_size=2304,
            max_position_embeddings=1024,
            tie_word_embeddings=False,
        ),
        TrainConfig(
            batch_size=32,
            seq_len=512,
            steps=600,
            learning_rate=6e-4,
            warmup_steps=60,
            eval_every=50,
            eval_batches=4,
            checkpoint_every=200,
        ),
        vocab_size=8192,
    ),
}


def preset(name: str) -> Preset:
    if name not in PRESETS:
        raise LLMError(f"unknown config {name!r}; choose one of {', '.join(PRESETS)}")
    p = PRESETS[name]
    return Preset(dataclasses.replace(p.model), dataclasses.replace(p.train), p.vocab_size)


def to_dict(cfg) -> dict:
    return dataclasses.asdict(cfg)


def from_dict(cls, d: dict):
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise LLMError(f"unknown {cls.__name__} fields {sorted(unknown)}")
    return cls(**d)


def load_model_config(path) -> ModelConfig:
    """A ModelConfig from a JSON file (a checkpoint's config.json or a user's)."""
    path = Path(path)
    if not path.exists():
        raise LLMError(f"model config {path} is missing")
    d = json.loads(path.read_text())
    return from_dict(ModelConfig, d.get("model", d)).validate()


def model_config(name_or_path: str, vocab_size: Optional[int] = None) -> ModelConfig:
    """A preset's model config (or a JSON file's), with the data's vocabulary size."""
    if name_or_path.endswith(".json"):
        cfg = load_model_config(name_or_path)
    else:
        cfg = preset(name_or_path).model
    if vocab_size is not None:
        cfg.vocab_size = int(vocab_size)
    return cfg.validate()


def count_parameters(cfg: ModelConfig) -> int:
    """The parameter count of the model `cfg` describes (embedding counted once if tied)."""
    d, f, L = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers
    kv = cfg.num_key_value_heads * cfg.head_dim
    per_layer = d * d * 2 + d * kv * 2 + 3 * d * f + 2 * d
    head = 0 if cfg.tie_word_embeddings else cfg.vocab_size * d
    return cfg.vocab_size * d + L * per_layer + d + head


def lr_at(step: int, tc: TrainConfig) -> float:
    """The learning rate of update `step` (0-based), in plain Python: what
    :func:`make_schedule` computes, for the PyTorch reference and the tests."""
    lr, W = tc.learning_rate, tc.warmup_steps
    if step < W:
        return lr * (step + 1) / W
    end = lr * tc.min_lr_ratio
    T = max(1, tc.steps - W)
    return end + 0.5 * (lr - end) * (1 + math.cos(math.pi * min(step - W, T) / T))
