"""The corpus, the tokenizer and the token files.

- Corpus: the King James Bible from the Debian packages ``bible-kjv-text`` (the text,
  compressed, in /usr/lib/bible.data) and ``bible-kjv`` (the ``bible`` program that reads
  it), dumped verse by verse; or any UTF-8 text file (``--corpus``); or the short excerpt
  shipped beside this file (``sample.txt``, Genesis 1-3, Psalm 23, John 1) for tests.
- Split: by chapter (a chapter starts at a line like ``Genesis 1``): every 20th chapter
  goes to validation, the rest to training, so both cover the whole book.
- Tokenizer: byte-level BPE trained on the training split with Hugging Face ``tokenizers``
  and saved as ``tokenizer.json``. Machines without ``tokenizers`` (the GPU machine) read
  the same file with :class:`PyBPE`, a small pure-Python encoder/decoder of that format.
- Token files: ``train.bin`` and ``val.bin`` (uint16), ``meta.json``; written once by
  :func:`prepare` and memory-mapped by :class:`TokenData`.

Batches are a function of (seed, step) alone (:func:`batch_offsets`), so resumed runs,
data-parallel ranks and the PyTorch reference read exactly the same windows.
"""

import hashlib
import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import List, Optional

import numpy as np

from .errors import LLMError

HERE = Path(__file__).resolve().parent
DATA_ROOT = HERE / "data"
SAMPLE_TEXT = HERE / "sample.txt"
VAL_EVERY = 20  # every 20th chapter is validation
PREPARE_CMD = "python examples/llm/main.py prepare"
KJV_INSTALL = "sudo apt-get install -y bible-kjv bible-kjv-text   (or: make setup)"


def default_data_dir(vocab_size: int, corpus: str = "kjv") -> Path:
    return DATA_ROOT / f"{corpus}-bpe{vocab_size}"


# ---------------------------------------------------------------- corpus


def kjv_text() -> str:
    """The whole King James Bible, one verse per line, chapters under a heading line."""
    bible = shutil.which("bible")
    if bible is None or not Path("/usr/lib/bible.data").exists():
        what = "bible-kjv (the `bible` reader)" if bible is None else "bible-kjv-text"
        raise LLMError(
            f"the King James Bible corpus is missing ({what}); install it with:  {KJV_INSTALL}"
        )
    # A very wide line so that verses are not wrapped.
    out = subprocess.run(
        [bible, "-l100000", "gen1:1-rev22:21"], capture_output=True, text=True, check=False
    )
    if out.returncode != 0 or len(out.stdout) < 1_000_000:
        raise LLMError(
            f"`bible` could not read the corpus ({out.stderr.strip() or 'short output'}); "
            f"reinstall it with:  {KJV_INSTALL}"
        )
    return "\n".join(line.strip() for line in out.stdout.splitlines()).strip() + "\n"


def read_corpus(corpus: str) -> str:
    """'kjv', 'sample' or a path to a UTF-8 text file."""
    if corpus == "kjv":
        return kjv_text()
    path = SAMPLE_TEXT if corpus == "sample" else Path(corpus)
    if not path.exists():
        raise LLMError(
            f"corpus file {path} is missing; pass an existing --corpus or use the KJV:  {PREPARE_CMD}"
        )
    return path.read_text(encoding="utf-8")


_HEADING = re.compile(r"^[1-3]?\s?[A-Z][A-Za-z ]+ \d+$")


def split_chapters(text: str) -> List[str]:
    """Chapters (each starting with its heading line); text without headings is cut into
    pieces of about 2,000 characters at line breaks instead."""
    chapters, current = [], []
    for line in text.splitlines(keepends=True):
        if _HEADING.match(line.strip()) and current and any(l.strip() for l in current):
            chapters.append("".join(current))
            current = []
        current.append(line)
    if current:
        chapters.append("".join(current))
    if len(chapters) < 2 * VAL_EVERY:  # few or no headings: 2 * VAL_EVERY equal pieces
        lines = text.splitlines(keepends=True)
        size = max(1, len(text) // (2 * VAL_EVERY))
        chapters, piece, n = [], [], 0
        for line in lines:
            piece.append(line)
            n += len(line)
            if n >= size:
                chapters.append("".join(piece))
                piece, n = [], 0
        if piece:
            chapters.append("".join(piece))
    return chapters


def train_val_split(chapters: List[str]):
    """(train, val) lists of chapters: every VAL_EVERY-th chapter (from the 10th) is val;
    at least one chapter goes to each side."""
    if len(chapters) < 2:
        raise LLMError("the corpus is too short to split into training and validation text")
    val_idx = {i for i in range(len(chapters)) if i % VAL_EVERY == VAL_EVERY // 2}
    if not val_idx:
        val_idx = {len(chapters) - 1}
    train = [c for i, c in enumerate(chapters) if i not in val_idx]
    val = [c for i, c in enumerate(chapters) if i in val_idx]
    return train, val


# ---------------------------------------------------------------- tokenizers


def _bytes_to_unicode():
    """GPT-2's byte-level alphabet: each byte maps to one printable character."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(0xA1, 0xAC + 1))
        + list(range(0xAE, 0xFF + 1))
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


# The ByteLevel pre-tokenizer's pattern, with \p{L} as [^\W\d_] and \p{N} as \d: the same
# pieces as Hugging Face's on ASCII text (the KJV), close elsewhere.
_PRETOKENIZE = re.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+"""
)


class PyBPE:
    """Byte-level BPE from a Hugging Face ``tokenizer.json``, in pure Python: encodes and
    decodes as ``tokenizers`` does for the files :func:`train_tokenizer` writes."""

    def __init__(self, spec: dict):
        model = spec["model"]
        if model.get("type") != "BPE":
            raise LLMError(
                f"tokenizer model {model.get('type')!r} is not BPE; re-run:  {PREPARE_CMD} --force"
            )
        self.vocab = dict(model["vocab"])
        self.inverse = {i: t for t, i in self.vocab.items()}
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
        self.ranks = {pair: i for i, pair in enumerate(merges)}
        self.byte_encoder = _bytes_to_unicode()
        self.byte_decoder = {c: b for b, c in self.byte_encoder.items()}
        self._cache = {}

    def _bpe(self, word: str) -> List[str]:
        if word in self._cache:
            return self._cache[word]
        parts = list(word)
        while len(parts) > 1:
            best, best_rank = None, None
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            a, b = parts[best], parts[best + 1]
            merged, i = [], 0
            while i < len(parts):  # merge every occurrence of the pair, left to right
                if i < len(parts) - 1 and parts[i] == a and parts[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        self._cache[word] = parts
        return parts

    def encode(self, text: str) -> List[int]:
        ids = []
        for piece in _PRETOKENIZE.findall(text):
            mapped = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
            for t in self._bpe(mapped):
                if t not in self.vocab:
                    raise LLMError(
                        f"the tokenizer has no token for the bytes {piece.encode('utf-8')!r} of "
                        f"the text; re-train it with:  {PREPARE_CMD} --force"
                    )
                ids.append(self.vocab[t])
        return ids

    def decode(self, ids) -> str:
        text = "".join(self.inverse.get(int(i), "") for i in ids)
        return bytes(self.byte_decoder[c] for c in text).decode("utf-8", errors="replace")


class ByteTokenizer:
    """One token per byte (vocabulary 256): for tests on machines without ``tokenizers``."""

    vocab_size = 256

    def encode(self, text: str) -> List[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids) -> str:
        return bytes(int(i) % 256 for i in ids).decode("utf-8", errors="replace")


class Tokenizer:
    """The tokenizer a data folder was prepared with: Hugging Face ``tokenizers`` when it is
    installed, else :class:`PyBPE` on the same file; :class:`ByteTokenizer` for 'byte'."""

    def __init__(self, data_dir, meta: Optional[dict] = None):
        data_dir = Path(data_dir)
        meta = meta or _read_meta(data_dir)
        self.kind = meta.get("tokenizer", "bpe")
        if self.kind == "byte":
            self._impl, self.backend = ByteTokenizer(), "bytes"
            self.vocab_size = 256
            return
        path = data_dir / "tokenizer.json"
        if not path.exists():
            raise LLMError(
                f"tokenizer {path} is missing; prepare it with:  {PREPARE_CMD} --data-dir {data_dir} --force"
            )
        try:
            import tokenizers

            self._impl, self.backend = tokenizers.Tokenizer.from_file(str(path)), "tokenizers"
        except ImportError:
            self._impl, self.backend = PyBPE(json.loads(path.read_text())), "pure Python"
        self.vocab_size = int(meta["vocab_size"])

    def encode(self, text: str) -> List[int]:
        if self.backend == "tokenizers":
            return self._impl.encode(text).ids
        return self._impl.encode(text)

    def decode(self, ids) -> str:
        return self._impl.decode([int(i) for i in ids])


def train_tokenizer(texts: List[str], vocab_size: int):
    """A byte-level BPE tokenizer (Hugging Face ``tokenizers``) trained on `texts`."""
    try:
        from tokenizers import Tokenizer as HFTokenizer, decoders, models, pre_tokenizers, trainers
    except ImportError:
        raise LLMError(
            "Hugging Face `tokenizers` is missing (needed once, to train the tokenizer); "
            "install it with:  .venv/bin/python -m pip install tokenizers   (or: make setup)"
        ) from None
    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return tok


# ---------------------------------------------------------------- preparation


def prepare(
    data_dir=None,
    vocab_size: int = 8192,
    corpus: str = "kjv",
    tokenizer: str = "bpe",
    force: bool = False,
    log=print,
) -> Path:
    """Writes tokenizer.json, train.bin, val.bin and meta.json into `data_dir` (once: an
    existing complete folder is kept unless `force`). Returns the folder."""
    data_dir = (
        Path(data_dir)
        if data_dir
        else default_data_dir(vocab_size, corpus if corpus in ("kjv", "sample") else "text")
    )
    if not force and all((data_dir / f).exists() for f in ("meta.json", "train.bin", "val.bin")):
        log(f"[prepare] {data_dir} is already prepared (--force redoes it)")
        return data_dir
    tic = time.perf_counter()
    text = read_corpus(corpus)
    chapters = split_chapters(text)
    train, val = train_val_split(chapters)
    data_dir.mkdir(parents=True, exist_ok=True)
    if tokenizer == "byte":
        tok, vocab_size = ByteTokenizer(), 256
        encode = lambda texts: [tok.encode(t) for t in texts]  # noqa: E731
    else:
        hf = train_tokenizer(train, vocab_size)
        hf.save(str(data_dir / "tokenizer.json"))
        vocab_size = hf.get_vocab_size()
        encode = lambda texts: [e.ids for e in hf.encode_batch(texts)]  # noqa: E731
    if vocab_size > 65535:
        raise LLMError(
            f"vocabulary {vocab_size} does not fit uint16 token files; use --vocab-size 65535 or less"
        )
    counts = {}
    for name, part in (("train", train), ("val", val)):
        ids = np.fromiter((i for seq in encode(part) for i in seq), dtype=np.uint16)
        ids.tofile(data_dir / f"{name}.bin")
        counts[name] = int(ids.size)
    meta = {
        "corpus": corpus if corpus in ("kjv", "sample") else str(Path(corpus).resolve()),
        "corpus_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "corpus_bytes": len(text.encode("utf-8")),
        "chapters": {"train": len(train), "val": len(val)},
        "tokenizer": tokenizer,
        "vocab_size": int(vocab_size),
        "dtype": "uint16",
        "train_tokens": counts["train"],
        "val_tokens": counts["val"],
    }
    (data_dir / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(
        f"[prepare] {meta['corpus_bytes'] / 1e6:.2f} MB of text, {len(chapters)} chapters -> "
        f"{counts['train']:,} train + {counts['val']:,} val tokens (vocabulary {vocab_size}) "
        f"in {data_dir} ({time.perf_counter() - tic:.1f} s)"
    )
    return data_dir


def _read_meta(data_dir: Path) -> dict:
    path = Path(data_dir) / "meta.json"
    if not path.exists():
        raise LLMError(
            f"token files are missing ({path}); prepare them with:  {PREPARE_CMD} --data-dir {data_dir}"
        )
    return json.loads(path.read_text())


class TokenData:
    """A prepared folder: the memory-mapped train and val tokens and the tokenizer's meta."""

    def __init__(self, data_dir):
        self.dir = Path(data_dir)
        self.meta = _read_meta(self.dir)
        self.vocab_size = int(self.meta["vocab_size"])
        self.splits = {}
        for name in ("train", "val"):
            path = self.dir / f"{name}.bin"
            if not path.exists():
                raise LLMError(
                    f"token file {path} is missing; prepare it with:  {PREPARE_CMD} --data-dir {self.dir} --force"
                )
            arr = np.memmap(path, dtype=np.uint16, mode="r")
            if arr.size != self.meta[f"{name}_tokens"]:
                raise LLMError(
                    f"token file {path} has {arr.size} tokens, meta.json says {self.meta[f'{name}_tokens']}; redo it with:  {PREPARE_CMD} --data-dir {self.dir} --force"
                )
            self.splits[name] = arr

    def tokenizer(self) -> Tokenizer:
        return Tokenizer(self.dir, self.meta)

    def check_seq_len(self, seq_len: int):
        for name, arr in self.splits.items():
            if arr.size < seq_len + 2:
                raise LLMError(
                    f"the {name} split has {arr.size} tokens, fewer than one window of {seq_len + 1}; use a shorter --seq-len or a longer corpus"
                )


def batch_offsets(n_tokens: int, batch_size: int, seq_len: int, seed: int, step: int) -> np.ndarray:
    """The start offsets of the global batch of training step `step`: uniform random
    windows, drawn from a generator seeded by (seed, step) alone."""
    rng = np.random.default_rng([seed, step])
    return rng.integers(0, n_tokens - seq_len - 1, size=batch_size)


def windows(tokens: np.ndarray, offsets: np.ndarray, seq_len: int):
    """(inputs, targets), int32 ``(len(offsets), seq_len)`` each."""
    idx = offsets[:, None] + np.arange(seq_len + 1)[None]
    w = np.asarray(tokens[idx], dtype=np.int32)
    return w[:, :-1], w[:, 1:]


def train_batch(
    data: TokenData,
    batch_size: int,
    seq_len: int,
    seed: int,
    step: int,
    rank: int = 0,
    world: int = 1,
):
    """This rank's shard (rows ``rank * B/world ...``) of step `step`'s global batch."""
    tokens = data.splits["train"]
    offsets = batch_offsets(tokens.size, batch_size, seq_len, seed, step)
    local = batch_size // world
    return windows(tokens, offsets[rank * local : (rank + 1) * local], seq_len)


def val_batches(data: TokenData, batch_size: int, seq_len: int, n_batches: int):
    """A fixed list of `n_batches` validation batches: windows spread evenly over the split
    (the same in every run, so validation losses compare across runs)."""
    tokens = data.splits["val"]
    n_windows = batch_size * n_batches
    last = tokens.size - seq_len - 1
    offsets = np.linspace(0, last, n_windows).astype(np.int64)
    return [
        windows(tokens, offsets[i * batch_size : (i + 1) * batch_size], seq_len)
        for i in range(n_batches)
    ]
