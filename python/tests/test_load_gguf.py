"""Array I/O in GGUF: kiln.core.save_gguf and load of .gguf files: every metadata type,
errors, interoperability with llama.cpp's gguf package (where installed), and quantized
tensors (Q4_0, Q4_1, Q8_0, Q4_K) loaded as MLX loads them."""

import struct

import numpy as np
import pytest

import kiln.core as mx
from io_helpers import (
    GGUF_DTYPES,
    SHAPES,
    assert_same,
    fresh,
    gguf,
    gguf_quants,
    needs_gguf,
)


def test_gguf_round_trip_every_metadata_type(tmp_path, rng):
    arrays = {
        f"{d}_{i}": fresh(rng, s, d)[0]
        for d in GGUF_DTYPES
        for i, s in enumerate(SHAPES)
    }
    meta = {
        "text": "hello",
        "strings": ["data1", "", "data345"],
        "no_strings": [],
        **{
            f"scalar_{d}": fresh(rng, (), d)[0]
            for d in (mx.uint8, mx.int8, mx.uint16, mx.int16)
        },
        **{
            f"scalar_{d}": fresh(rng, (), d)[0]
            for d in (mx.uint32, mx.int32, mx.uint64, mx.int64)
        },
        **{
            f"scalar_{d}": fresh(rng, (), d)[0]
            for d in (mx.float32, mx.float64, mx.bool_)
        },
        **{
            f"list_{d}": fresh(rng, (4,), d)[0]
            for d in (mx.uint8, mx.int16, mx.uint64, mx.float32, mx.bool_)
        },
    }
    mx.save_gguf(str(tmp_path / "g"), arrays, meta)  # ".gguf" appended
    loaded, got_meta = mx.load(str(tmp_path / "g.gguf"), return_metadata=True)
    assert set(loaded) == set(arrays)
    for k, v in arrays.items():
        assert_same(loaded[k], v)
    assert set(got_meta) == set(meta)
    for k, v in meta.items():
        if isinstance(v, mx.array):
            assert_same(got_meta[k], v)
        else:
            assert got_meta[k] == v
    assert (
        mx.load(tmp_path / "g.gguf").keys() == loaded.keys()
    )  # without metadata: a dict


def test_gguf_save_errors(tmp_path):
    for d in (mx.bool_, mx.uint8, mx.uint32, mx.complex64):
        with pytest.raises(
            RuntimeError, match=r"\[save_gguf\] dtype \w+ is not supported"
        ):
            mx.save_gguf(tmp_path / "e.gguf", {"a": mx.zeros((2,), dtype=d)})
    for d in (mx.float16, mx.bfloat16, mx.complex64):
        with pytest.raises(ValueError, match="metadata"):
            mx.save_gguf(tmp_path / "e.gguf", {"a": mx.ones(2)}, {"m": mx.array(1, d)})
    with pytest.raises(TypeError, match=r"\[save_gguf\]"):
        mx.save_gguf(tmp_path / "e.gguf", {"a": mx.ones(2)}, {"m": 3})
    with pytest.raises(RuntimeError, match="0-d or 1-d"):
        mx.save_gguf(tmp_path / "e.gguf", {"a": mx.ones(2)}, {"m": mx.ones((2, 2))})
    with pytest.raises(ValueError, match="'deep' has 9 dimensions"):
        mx.save_gguf(tmp_path / "e.gguf", {"deep": mx.ones((1,) * 9)})


def test_gguf_rank_is_bounded(tmp_path):
    # 8 dimensions load (gguflib's and MLX's limit); a file claiming more is refused.
    def file_of_rank(n):
        name = b"w"
        head = (
            b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + struct.pack("<Q", len(name)) + name
        )
        head += (
            struct.pack("<I", n) + struct.pack("<Q", 1) * n + struct.pack("<IQ", 0, 0)
        )
        head += b"\0" * (-len(head) % 32)
        path = tmp_path / f"rank{n}.gguf"
        path.write_bytes(head + struct.pack("<f", 2.5))
        return path

    w = mx.load(str(file_of_rank(8)))["w"]
    assert w.shape == (1,) * 8 and w.item() == 2.5
    with pytest.raises(RuntimeError, match="9 dimensions; GGUF holds at most 8"):
        mx.load(str(file_of_rank(9)))


def gguf_write(path, tensors=(), kvs=()):
    w = gguf.GGUFWriter(str(path), "kiln")
    for fn in kvs:
        fn(w)
    for fn in tensors:
        fn(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@needs_gguf
def test_gguf_interop_with_llama_cpp_gguf(tmp_path, rng):
    arrays = {
        "t_" + str(d).split(".")[-1]: fresh(rng, (3, 4, 5), d) for d in GGUF_DTYPES
    }
    path = tmp_path / "k.gguf"
    mx.save_gguf(
        path,
        {k: v[0] for k, v in arrays.items()},
        {"name": "kiln", "ids": mx.array([1, 2, 3])},
    )
    reader = gguf.GGUFReader(str(path))
    by_name = {t.name: t for t in reader.tensors}
    for k, (_, values) in arrays.items():
        t = by_name[k]
        assert tuple(reversed(t.shape.tolist())) == values.shape  # GGML order
        assert (
            t.data.tobytes() == values.tobytes()
        ), k  # (BF16 data comes back as bytes)
    assert reader.fields["name"].contents() == "kiln"
    assert reader.fields["ids"].contents() == [1, 2, 3]
    # Files written by the gguf package: tensors and metadata of every value type.
    gguf_write(
        path,
        tensors=[
            lambda w: w.add_tensor("f32", arrays["t_float32"][1]),
            lambda w: w.add_tensor("f16", arrays["t_float16"][1]),
            lambda w: w.add_tensor("f64", arrays["t_float64"][1]),
            lambda w: w.add_tensor("i8", arrays["t_int8"][1]),
            lambda w: w.add_tensor("i16", arrays["t_int16"][1]),
            lambda w: w.add_tensor("i32", arrays["t_int32"][1]),
            lambda w: w.add_tensor("i64", arrays["t_int64"][1]),
            lambda w: w.add_tensor(
                "bf16",
                arrays["t_bfloat16"][1].view(np.uint16),
                raw_dtype=gguf.GGMLQuantizationType.BF16,
            ),
        ],
        kvs=[
            lambda w: w.add_uint8("u8", 200),
            lambda w: w.add_int8("i8", -5),
            lambda w: w.add_uint16("u16", 60000),
            lambda w: w.add_int16("i16", -30000),
            lambda w: w.add_uint32("u32", 4000000000),
            lambda w: w.add_int32("i32", -2000000000),
            lambda w: w.add_uint64("u64", 2**63 + 5),
            lambda w: w.add_int64("i64", -(2**62)),
            lambda w: w.add_float32("f32", 1.5),
            lambda w: w.add_float64("f64", 0.1),
            lambda w: w.add_bool("b", True),
            lambda w: w.add_string("s", "ok"),
            lambda w: w.add_array("ai", [1, 2, 3]),
            lambda w: w.add_array("af", [0.5, 2.5]),
            lambda w: w.add_array("as", ["x", "yz"]),
            lambda w: w.add_array("ab", [True, False]),
        ],
    )
    loaded, meta = mx.load(path, return_metadata=True)
    for name, key in [
        ("f32", "t_float32"),
        ("f16", "t_float16"),
        ("f64", "t_float64"),
        ("i8", "t_int8"),
    ]:
        assert_same(loaded[name], arrays[key][0])
    for name, key in [
        ("i16", "t_int16"),
        ("i32", "t_int32"),
        ("i64", "t_int64"),
        ("bf16", "t_bfloat16"),
    ]:
        assert_same(loaded[name], arrays[key][0])
    expected = {
        "u8": (mx.uint8, 200),
        "i8": (mx.int8, -5),
        "u16": (mx.uint16, 60000),
        "i16": (mx.int16, -30000),
        "u32": (mx.uint32, 4000000000),
        "i32": (mx.int32, -2000000000),
        "u64": (mx.uint64, 2**63 + 5),
        "i64": (mx.int64, -(2**62)),
        "f32": (mx.float32, 1.5),
        "f64": (mx.float64, 0.1),
        "b": (mx.bool_, True),
    }
    for k, (d, v) in expected.items():
        assert meta[k].dtype == d and meta[k].shape == () and meta[k].item() == v, k
    assert (
        meta["s"] == "ok"
        and meta["as"] == ["x", "yz"]
        and meta["general.architecture"] == "kiln"
    )
    assert meta["ai"].tolist() == [1, 2, 3] and meta["af"].tolist() == [0.5, 2.5]
    assert meta["ab"].dtype == mx.bool_ and meta["ab"].tolist() == [True, False]


def unpack(w, scales, biases, bits):
    """Dequantizes kiln's (MLX's) layout in NumPy: scale * q + bias per group of 32."""
    packed = np.asarray(w).view(np.uint8)
    if bits == 4:
        q = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(
            packed.shape[:-1] + (-1,)
        )
    else:
        q = packed
    s = np.repeat(np.asarray(scales).astype(np.float64), 32, axis=-1)
    b = np.repeat(np.asarray(biases).astype(np.float64), 32, axis=-1)
    return s * q + b


@needs_gguf
@pytest.mark.parametrize("qtype", ["Q4_0", "Q4_1", "Q8_0", "Q4_K"])
def test_gguf_quantized_tensors_load_as_mlx_does(tmp_path, rng, qtype):
    t = getattr(gguf.GGMLQuantizationType, qtype)
    x = rng.standard_normal((3, 256)).astype(np.float32)
    if (
        qtype == "Q4_K"
    ):  # gguf-py cannot quantize k-quants: random blocks with sane scales
        blocks = rng.integers(0, 256, size=(3, 144), dtype=np.uint8)
        blocks[:, 0:4] = np.frombuffer(
            np.array([0.01, 0.02], np.float16).tobytes(), np.uint8
        )
        q = blocks
    else:
        q = gguf_quants.quantize(x, t)
    reference = gguf_quants.dequantize(q, t).astype(np.float64)
    gguf_write(
        tmp_path / "q.gguf",
        tensors=[lambda w: w.add_tensor("blk.0.weight", q, raw_dtype=t)],
    )
    loaded = mx.load(tmp_path / "q.gguf")
    assert sorted(loaded) == ["blk.0.biases", "blk.0.scales", "blk.0.weight"]
    bits = 8 if qtype == "Q8_0" else 4
    w = loaded["blk.0.weight"]
    assert w.dtype == mx.uint32 and w.shape == (3, 256 * bits // 32)
    assert loaded["blk.0.scales"].dtype == mx.float16 and loaded[
        "blk.0.scales"
    ].shape == (3, 8)
    got = unpack(w, loaded["blk.0.scales"], loaded["blk.0.biases"], bits)
    # Exact for Q4_0/Q4_1/Q8_0; Q4_K's scales are rounded to float16 as MLX does.
    tol = 2e-3 * np.abs(reference).max() if qtype == "Q4_K" else 1e-6
    np.testing.assert_allclose(got, reference, rtol=0, atol=tol)


@needs_gguf
def test_gguf_unsupported_quantized_type_is_named(tmp_path, rng):
    t = gguf.GGMLQuantizationType.Q6_K
    blocks = rng.integers(0, 256, size=(1, 210), dtype=np.uint8)
    gguf_write(
        tmp_path / "q6.gguf", tensors=[lambda w: w.add_tensor("w", blocks, raw_dtype=t)]
    )
    with pytest.raises(RuntimeError, match=r"\[load\].*'w'.*Q6_K"):
        mx.load(tmp_path / "q6.gguf")
