"""Array I/O: kiln.core.load / save / savez / savez_compressed / save_safetensors / save_gguf.

Round trips for every dtype and layout, interoperability with NumPy (np.save, np.savez,
np.load), the safetensors package (and PyTorch through it, where installed) and llama.cpp's
gguf package, MLX's behaviours (extensions, return types, errors), and damaged files: every
truncation and bit flip of a valid file either raises or gives exactly the data the damaged
file describes (what the format's reference reader returns for it) or the original data.
"""

import gc
import io
import json
import os
import pathlib
import struct
import zipfile

import numpy as np
import pytest

import kiln.core as mx
from conftest import ALL_DTYPES, NP_DTYPES, ml_dtypes, random_np

try:
    import safetensors
    import safetensors.numpy as st_numpy
except ImportError:  # the interop checks skip
    safetensors = st_numpy = None
try:
    import torch
    import safetensors.torch as st_torch
except ImportError:
    torch = st_torch = None
try:
    import gguf
    import gguf.quants as gguf_quants
except ImportError:
    gguf = gguf_quants = None

needs_safetensors = pytest.mark.skipif(
    st_numpy is None, reason="the safetensors package is not installed"
)
needs_torch = pytest.mark.skipif(st_torch is None, reason="PyTorch is not installed")
needs_gguf = pytest.mark.skipif(
    gguf is None, reason="the gguf package is not installed"
)
needs_ml_dtypes = pytest.mark.skipif(
    ml_dtypes is None, reason="bfloat16 in NumPy needs ml_dtypes"
)

SHAPES = [(), (0,), (1,), (23,), (3, 4), (2, 0, 3), (4, 6, 3, 1, 2)]
GGUF_DTYPES = [
    mx.float32,
    mx.float16,
    mx.bfloat16,
    mx.float64,
    mx.int8,
    mx.int16,
    mx.int32,
    mx.int64,
]


def np_values(rng, shape, dtype):
    """Random NumPy values of kiln `dtype` (bfloat16 through ml_dtypes)."""
    if dtype == mx.bfloat16:
        if ml_dtypes is None:
            pytest.skip("bfloat16 in NumPy needs ml_dtypes")
        return rng.uniform(-50, 50, shape).astype(ml_dtypes.bfloat16)
    if dtype in (mx.float16, mx.float32, mx.float64):
        return rng.uniform(-50, 50, shape).astype(NP_DTYPES[dtype])
    return np.asarray(random_np(rng, shape, dtype, int_range=120)).astype(
        NP_DTYPES[dtype]
    )


def fresh(rng, shape, dtype):
    values = np_values(rng, shape, dtype)
    return mx.array(values, dtype=dtype), values


def raw(a):
    """The bytes of a kiln or NumPy array in row-major order."""
    if isinstance(a, mx.array):
        if a.dtype == mx.bfloat16 and ml_dtypes is None:
            a = a.astype(mx.float32)  # exact: every bfloat16 is a float32
        a = np.asarray(a)
    return np.ascontiguousarray(a).tobytes()


def assert_same(got, want):
    """Same shape, dtype and bits (kiln arrays; `want` may be NumPy with kiln's dtype)."""
    assert isinstance(got, mx.array), type(got)
    assert got.shape == tuple(want.shape), (got.shape, want.shape)
    if isinstance(want, mx.array):
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert raw(got) == raw(want)


# ---------------------------------------------------------------- .npy


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_npy_round_trip_and_numpy_interop(tmp_path, rng, dtype, shape):
    a, values = fresh(rng, shape, dtype)
    path = str(tmp_path / "a.npy")
    mx.save(path, a)
    assert_same(mx.load(path), a)
    # NumPy reads kiln's file (bfloat16: '<V2' raw bytes, as with MLX) ...
    back = np.load(path)
    if dtype == mx.bfloat16:
        assert back.dtype == np.dtype("V2")
        back = back.view(ml_dtypes.bfloat16)
    assert back.dtype == values.dtype and back.shape == values.shape
    assert back.tobytes() == values.tobytes()
    # ... and kiln reads NumPy's.
    np.save(path, values)
    loaded = mx.load(path)
    assert loaded.dtype == dtype
    assert_same(loaded, a)


def test_npy_paths_file_objects_and_extension(tmp_path, rng):
    a, _ = fresh(rng, (5, 4), mx.float32)
    mx.save(str(tmp_path / "plain"), a)  # ".npy" appended, as MLX
    assert os.path.exists(tmp_path / "plain.npy")
    mx.save(tmp_path / "p.npy", a)  # pathlib.Path
    assert_same(mx.load(tmp_path / "p.npy"), a)
    with open(tmp_path / "f.npy", "wb") as f:
        mx.save(f, a)
    with open(tmp_path / "f.npy", "rb") as f:
        assert_same(mx.load(f), a)  # the format from the file's name
    buf = io.BytesIO()
    buf.write(b"prefix")  # reading starts where the file object is, as np.load does
    mx.save(buf, a)
    buf.seek(6)
    assert_same(mx.load(buf, format="npy"), a)
    with pytest.raises(ValueError, match=r"\[load\].*format"):
        mx.load(io.BytesIO(buf.getvalue()))  # no name, no format
    assert_same(mx.load(str(tmp_path / "p.npy"), stream=mx.cpu), a)


@pytest.mark.parametrize(
    "view",
    [
        lambda x: x.T,
        lambda x: x[::2, 1::3],
        lambda x: x[1:3],
        lambda x: mx.broadcast_to(x[:1], (3, 6, 8)),
        lambda x: mx.broadcast_to(mx.array([1, 2], mx.int16), (4, 2)),
        lambda x: x.reshape(2, 3, 8).transpose(1, 0, 2),
        lambda x: x[::-1],
    ],
)
def test_non_contiguous_arrays_are_saved_correctly(tmp_path, rng, view):
    x, _ = fresh(rng, (6, 8), mx.float32)
    v = view(x)
    expected = np.asarray(v).copy()
    mx.save(tmp_path / "v.npy", v)
    assert np.array_equal(np.load(tmp_path / "v.npy"), expected)
    assert_same(mx.load(tmp_path / "v.npy"), v)
    mx.save_safetensors(tmp_path / "v.safetensors", {"v": v})
    assert_same(mx.load(tmp_path / "v.safetensors")["v"], v)
    if v.dtype in GGUF_DTYPES:
        mx.save_gguf(tmp_path / "v.gguf", {"v": v})
        assert_same(mx.load(tmp_path / "v.gguf")["v"], v)
    mx.savez(tmp_path / "v.npz", v=v)
    assert np.array_equal(np.load(tmp_path / "v.npz")["v"], expected)


@pytest.mark.skipif(not mx.is_available(mx.gpu), reason="no GPU")
def test_load_onto_a_gpu_stream(tmp_path, rng):
    arrays = {"a": fresh(rng, (33, 7), mx.bfloat16)[0], "b": fresh(rng, (5,), mx.int64)[0]}
    mx.save_safetensors(tmp_path / "g.safetensors", arrays)
    mx.save(tmp_path / "g.npy", arrays["a"])
    loaded = mx.load(tmp_path / "g.safetensors", stream=mx.gpu)
    for k, v in arrays.items():
        assert_same(mx.add(loaded[k], mx.zeros_like(loaded[k]), stream=mx.gpu), v)
    assert_same(mx.load(tmp_path / "g.npy", stream=mx.gpu) * 1, arrays["a"])


def test_lazy_load_reads_the_file_it_came_from(tmp_path, rng):
    a, _ = fresh(rng, (100,), mx.float32)
    b, _ = fresh(rng, (3,), mx.int32)
    path = tmp_path / "w.npy"
    mx.save(path, a)
    lazy = mx.load(path)
    mx.save(
        path, b
    )  # replaces the file (a new inode): the lazy array keeps the old data
    assert_same(lazy, a)
    assert_same(mx.load(path), b)
    mx.save(path, mx.load(path) * 2)  # reads before the file is replaced
    assert np.array_equal(np.load(path), np.asarray(b) * 2)


def test_load_donation_keeps_peak_memory(tmp_path):
    """A loaded array's buffer is kiln's own, so the next op may write into it (MLX's
    test_load_donation): loading then scaling peaks no higher than loading alone."""
    if mx.default_device() == mx.gpu:
        pytest.skip(
            "donation is a CPU buffer property: the GPU allocator never donates"
        )
    x = mx.random.normal((1024,))
    mx.eval(x)
    path = tmp_path / "donation.npy"
    mx.save(path, x)
    mx.synchronize()
    mx.reset_peak_memory()
    scale = mx.array(2.0)
    y = mx.load(path)
    mx.eval(y)
    mx.synchronize()
    load_only = mx.get_peak_memory()
    y = mx.load(path) * scale
    mx.eval(y)
    mx.synchronize()
    assert mx.get_peak_memory() == load_only


# ---------------------------------------------------------------- .npz


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_round_trip_and_numpy_interop(tmp_path, rng, compressed):
    save = mx.savez_compressed if compressed else mx.savez
    np_save = np.savez_compressed if compressed else np.savez
    arrays = {"a_" + str(d).split(".")[-1]: fresh(rng, (3, 5), d) for d in ALL_DTYPES}
    arrays["scalar"] = fresh(rng, (), mx.float32)
    arrays["empty"] = fresh(rng, (0, 2), mx.int64)
    kiln_arrays = {k: v[0] for k, v in arrays.items()}
    kiln_arrays["fortran"] = arrays["a_float64"][0].T
    save(str(tmp_path / "k"), **kiln_arrays)  # ".npz" appended
    loaded = mx.load(str(tmp_path / "k.npz"))
    assert set(loaded) == set(kiln_arrays)
    for k, v in kiln_arrays.items():
        assert_same(loaded[k], v)
    with np.load(tmp_path / "k.npz") as z:  # NumPy reads kiln's archive
        for k, (a, values) in arrays.items():
            got = z[k].view(ml_dtypes.bfloat16) if a.dtype == mx.bfloat16 else z[k]
            assert got.tobytes() == values.tobytes(), k
        assert np.array_equal(z["fortran"], np.asarray(kiln_arrays["fortran"]))
    np_save(tmp_path / "n.npz", **{k: v[1] for k, v in arrays.items()})
    loaded = mx.load(tmp_path / "n.npz")
    for k, (a, _) in arrays.items():
        assert_same(loaded[k], a)
    # Positional arrays are arr_0, arr_1, ... (as NumPy); a clash with a keyword is an error.
    buf = io.BytesIO()
    save(buf, arrays["a_int32"][0], arrays["scalar"][0], extra=arrays["empty"][0])
    buf.seek(0)
    loaded = mx.load(buf, format="npz")
    assert sorted(loaded) == ["arr_0", "arr_1", "extra"]
    assert_same(loaded["arr_1"], arrays["scalar"][0])
    with pytest.raises(
        ValueError, match=r"\[savez\] Cannot use un-named variables and keyword arr_0"
    ):
        save(tmp_path / "x.npz", arrays["scalar"][0], arr_0=arrays["scalar"][0])


def test_npz_zip64_records(tmp_path, rng, monkeypatch):
    """Archives whose directory uses zip64 fields and end records (Python's zipfile writes
    them above its limits; lowered here to avoid writing gigabytes)."""
    a, values = fresh(rng, (50, 3), mx.float32)
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 10)
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 1)
    for compression in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        path = tmp_path / "z64.npz"
        with zipfile.ZipFile(path, "w", compression=compression) as z:
            for name in ("x", "y"):
                with z.open(name + ".npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, values)
        raw_bytes = path.read_bytes()
        assert b"PK\x06\x06" in raw_bytes  # a zip64 end record
        loaded = mx.load(path)
        assert_same(loaded["x"], a)
        assert_same(loaded["y"], a)


# ---------------------------------------------------------------- .safetensors


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_safetensors_round_trip(tmp_path, rng, dtype):
    arrays = {f"t{i}": fresh(rng, shape, dtype)[0] for i, shape in enumerate(SHAPES)}
    meta = {"format": "kiln", "note": "ünïcode"}
    mx.save_safetensors(str(tmp_path / "a"), arrays, meta)  # ".safetensors" appended
    loaded, got_meta = mx.load(str(tmp_path / "a.safetensors"), return_metadata=True)
    assert got_meta == meta
    assert set(loaded) == set(arrays)
    for k, v in arrays.items():
        assert_same(loaded[k], v)
    with open(tmp_path / "b.safetensors", "wb") as f:
        mx.save_safetensors(f, arrays)
    with open(tmp_path / "b.safetensors", "rb") as f:
        loaded = mx.load(f)
    for k, v in arrays.items():
        assert_same(loaded[k], v)


@needs_safetensors
@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != mx.bfloat16])
def test_safetensors_interop_with_the_safetensors_package(tmp_path, rng, dtype):
    arrays = {f"t{i}": fresh(rng, shape, dtype) for i, shape in enumerate(SHAPES)}
    path = str(tmp_path / "k.safetensors")
    mx.save_safetensors(path, {k: v[0] for k, v in arrays.items()}, {"by": "kiln"})
    theirs = st_numpy.load_file(path)
    for k, (_, values) in arrays.items():
        assert (
            theirs[k].dtype == values.dtype and theirs[k].tobytes() == values.tobytes()
        )
    with safetensors.safe_open(path, framework="np") as f:
        assert f.metadata() == {"by": "kiln"}
    st_numpy.save_file(
        {k: v[1] for k, v in arrays.items()}, path, metadata={"by": "safetensors"}
    )
    loaded, meta = mx.load(path, return_metadata=True)
    assert meta == {"by": "safetensors"}
    for k, (a, _) in arrays.items():
        assert_same(loaded[k], a)


@needs_torch
def test_safetensors_interop_with_pytorch(tmp_path, rng):
    dtypes = {
        mx.bfloat16: torch.bfloat16,
        mx.float16: torch.float16,
        mx.float32: torch.float32,
        mx.float64: torch.float64,
        mx.int64: torch.int64,
        mx.uint8: torch.uint8,
        mx.bool_: torch.bool,
    }
    arrays = {str(d): fresh(rng, (4, 3), d)[0] for d in dtypes}
    path = str(tmp_path / "t.safetensors")
    mx.save_safetensors(path, arrays)
    theirs = st_torch.load_file(path)
    for d, td in dtypes.items():
        t = theirs[str(d)]
        assert t.dtype == td and tuple(t.shape) == (4, 3)
        assert np.array_equal(
            t.float().numpy(), np.asarray(arrays[str(d)].astype(mx.float32))
        )
    st_torch.save_file({str(d): theirs[str(d)] for d in dtypes}, path)
    loaded = mx.load(path)
    for d in dtypes:
        assert_same(loaded[str(d)], arrays[str(d)])


def test_safetensors_fp8_and_metadata_rules(tmp_path):
    header = json.dumps(
        {"t": {"dtype": "F8_E4M3", "shape": [3], "data_offsets": [0, 3]}}
    ).encode()
    path = tmp_path / "f8.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\x00\x7f\xb6")
    t = mx.load(path)["t"]  # raw bytes, as MLX (mx.from_fp8 converts them)
    assert t.dtype == mx.uint8 and t.tolist() == [0, 127, 182]
    with pytest.raises(
        ValueError, match=r"\[save_safetensors\] Metadata must be a dictionary"
    ):
        mx.save_safetensors(
            tmp_path / "m.safetensors", {"a": mx.ones(2)}, {"testing": 0}
        )
    with pytest.raises(ValueError, match="__metadata__"):
        mx.save_safetensors(tmp_path / "m.safetensors", {"__metadata__": mx.ones(2)})
    with pytest.raises(TypeError, match=r"\[save_safetensors\]"):
        mx.save_safetensors(tmp_path / "m.safetensors", {"a": [1, 2]})
    mx.save_safetensors(tmp_path / "m.safetensors", {"a": mx.ones(2)})
    assert mx.load(tmp_path / "m.safetensors", return_metadata=True)[1] == {}


# ---------------------------------------------------------------- .gguf


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
        head = b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + struct.pack("<Q", len(name)) + name
        head += struct.pack("<I", n) + struct.pack("<Q", 1) * n + struct.pack("<IQ", 0, 0)
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
    arrays = {"t_" + str(d).split(".")[-1]: fresh(rng, (3, 4, 5), d) for d in GGUF_DTYPES}
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
        assert t.data.tobytes() == values.tobytes(), k  # (BF16 data comes back as bytes)
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


# ---------------------------------------------------------------- MLX's behaviours, errors


def test_load_arguments_and_errors(tmp_path):
    a = mx.arange(6).reshape(2, 3)
    mx.save(tmp_path / "a.npy", a)
    with pytest.raises(
        RuntimeError, match=r"\[load\] Failed to open file .*missing\.npy"
    ):
        mx.load(tmp_path / "missing.npy")
    # MLX's types: RuntimeError for a missing .npy or .safetensors, ValueError for .npz, .gguf.
    with pytest.raises(RuntimeError, match=r"\[load\] Failed to open file"):
        mx.load(tmp_path / "missing.safetensors")
    for ext in ("gguf", "npz"):
        with pytest.raises(ValueError, match=r"\[load\] Failed to open file"):
            mx.load(tmp_path / f"missing.{ext}")
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 junk")
    with pytest.raises(ValueError, match=r"\[load\] .* is not a zip"):
        mx.load(tmp_path / "junk.npz")
    with pytest.raises(ValueError, match=r"\[load\] Unknown file format foo"):
        mx.load(tmp_path / "x.foo")
    with pytest.raises(ValueError, match=r"\[load\] Could not infer file format"):
        mx.load(str(tmp_path / "noext"))
    with pytest.raises(
        ValueError, match=r"\[load\] metadata not supported for format npy"
    ):
        mx.load(tmp_path / "a.npy", return_metadata=True)
    with pytest.raises(ValueError, match=r"\[load\] Input must be"):
        mx.load(5)
    with pytest.raises(ValueError, match=r"\[save\] Input must be"):
        mx.save(5, a)
    with pytest.raises(TypeError, match=r"\[save\] arr must be an array"):
        mx.save(tmp_path / "l.npy", [1, 2, 3])
    with pytest.raises(RuntimeError, match=r"\[save\] Failed to open file"):
        mx.save(tmp_path / "no" / "dir.npy", a)
    assert_same(mx.load(tmp_path / "a.npy", format="npy"), a)
    np.save(tmp_path / "c.npy", np.ones(3, np.complex128))
    with pytest.raises(
        ValueError, match=r"\[load\] Unsupported array protocol type-string '<c16'"
    ):
        mx.load(tmp_path / "c.npy")
    np.save(tmp_path / "s.npy", np.array(["ab"]))
    with pytest.raises(ValueError, match="'<U2'"):
        mx.load(tmp_path / "s.npy")
    good = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(good[:-5])
    with pytest.raises(RuntimeError, match=r"\[load\].*needs 24 bytes"):
        mx.load(tmp_path / "t.npy")
    (tmp_path / "t.npy").write_bytes(good.replace(b"(2, 3)", b"(2,-3)"))
    with pytest.raises(RuntimeError, match=r"\[load\] Invalid header"):
        mx.load(tmp_path / "t.npy")


def test_from_dlpack_copy_is_taken_at_the_call():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    copied = mx.from_dlpack(x, copy=True)
    shared = mx.from_dlpack(x)
    x[:] = -1  # an in-place change of the producer after the call
    assert np.array_equal(
        np.asarray(copied), np.arange(12, dtype=np.float32).reshape(3, 4)
    )
    assert np.array_equal(np.asarray(shared), x)
    y = np.arange(5.0)
    lazy_use = (
        mx.from_dlpack(y, copy=True) + 1
    )  # used lazily after the producer changes
    y += 100
    assert np.array_equal(np.asarray(lazy_use), np.arange(5.0) + 1)


# ---------------------------------------------------------------- damaged files


def kiln_load_all(fmt, data, tmp):
    path = tmp / f"k.{fmt}"
    path.write_bytes(data)
    if fmt == "npy":
        out = {"": mx.load(path)}
        meta = {}
    elif fmt == "npz":
        out, meta = mx.load(path), {}
    else:
        out, meta = mx.load(path, return_metadata=True)
    arrays = {k: (v.shape, v.dtype, raw(v)) for k, v in out.items()}
    meta = {
        k: ((v.shape, v.dtype, raw(v)) if isinstance(v, mx.array) else v)
        for k, v in meta.items()
    }
    return arrays, meta


def np_kind(values):
    values = values.astype(values.dtype.newbyteorder("="))  # big-endian .npy: native values
    return values.shape, values.dtype.str[1:], np.ascontiguousarray(values).tobytes()


def reference_load_all(fmt, data, tmp):
    """What the format's reference reader makes of `data`, as (arrays, metadata) of
    (shape, dtype code, bytes); raises what it raises."""
    path = tmp / f"r.{fmt}"
    path.write_bytes(data)
    if fmt == "npy":
        return {"": np_kind(np.load(path))}, {}
    if fmt == "npz":
        with np.load(path) as z:
            return {k: np_kind(z[k]) for k in z.files}, {}
    if fmt == "safetensors":
        arrays = {k: np_kind(v) for k, v in st_numpy.load_file(str(path)).items()}
        with safetensors.safe_open(str(path), framework="np") as f:
            meta = f.metadata() or {}
        return arrays, meta
    reader = gguf.GGUFReader(str(path))
    arrays = {t.name: np_kind(np.asarray(t.data)) for t in reader.tensors}
    meta = {}
    V = gguf.GGUFValueType
    for k, f in reader.fields.items():
        if k.startswith("GGUF."):
            continue
        if f.types[0] == V.STRING or (f.types[0] == V.ARRAY and f.types[1] == V.STRING):
            meta[k] = f.contents()
        elif f.types[0] == V.ARRAY:  # numbers: the parts keep their dtype
            meta[k] = np_kind(np.concatenate([f.parts[i] for i in f.data]))
        else:
            meta[k] = np_kind(f.parts[f.data[0]].reshape(()))
    return arrays, meta


def as_np_kind(kiln_arrays):
    """kiln's (shape, dtype, bytes) in the reference's terms (NumPy dtype codes)."""
    codes = {
        mx.bool_: "b1", mx.uint8: "u1", mx.uint16: "u2", mx.uint32: "u4", mx.uint64: "u8",
        mx.int8: "i1", mx.int16: "i2", mx.int32: "i4", mx.int64: "i8", mx.float16: "f2",
        mx.float32: "f4", mx.float64: "f8", mx.complex64: "c8", mx.bfloat16: "V2",
    }  # fmt: skip
    return {k: (s, codes[d], b) for k, (s, d, b) in kiln_arrays.items()}


def valid_files(rng):
    a16, _ = fresh(rng, (4,), mx.int16)
    f64, _ = fresh(rng, (2, 2), mx.float64)
    f32, _ = fresh(rng, (3, 2), mx.float32)
    files = {}
    b = io.BytesIO()
    mx.save(b, f32)
    files["npy"] = b.getvalue()
    b = io.BytesIO()
    mx.savez(b, a=a16, b=f64)
    files["npz"] = b.getvalue()
    b = io.BytesIO()
    mx.savez_compressed(b, a=a16, b=f64)
    files["npz-deflated"] = b.getvalue()
    b = io.BytesIO()
    mx.save_safetensors(b, {"a": a16, "b": f32}, {"k": "v"})
    files["safetensors"] = b.getvalue()
    return files


@pytest.mark.parametrize("fmt", ["npy", "npz", "npz-deflated", "safetensors", "gguf"])
def test_truncated_and_bit_flipped_files_raise_or_load_correctly(tmp_path, rng, fmt):
    """Every truncation and a bit flip at every byte of a valid file: kiln raises
    (ValueError or RuntimeError with a [load] tag) or returns the original data or what the
    format's reference reader (NumPy, safetensors, gguf) reads from the damaged bytes.
    """
    kind = fmt.split("-")[0]
    if kind == "safetensors" and st_numpy is None:
        pytest.skip("the safetensors package is not installed (the reference reader)")
    if kind == "gguf" and gguf is None:
        pytest.skip("the gguf package is not installed (the reference reader)")
    if kind == "gguf":
        path = tmp_path / "v.gguf"
        mx.save_gguf(
            path,
            {
                "a": fresh(rng, (4,), mx.int16)[0],
                "b": fresh(rng, (2, 3), mx.float32)[0],
            },
            {"s": "text", "n": mx.array([7, 8], mx.uint16), "l": ["p", "q"]},
        )
        data = path.read_bytes()
    else:
        data = valid_files(rng)[fmt]
    original = kiln_load_all(kind, data, tmp_path)
    mutations = [(f"truncated to {n}", data[:n]) for n in range(len(data))]
    for p in range(len(data)):
        flipped = bytearray(data)
        flipped[p] ^= 1 << int(rng.integers(8))
        mutations.append((f"bit flip at byte {p}", bytes(flipped)))
    raised = 0
    for what, bad in mutations:
        try:
            got = kiln_load_all(kind, bad, tmp_path)
        except (ValueError, RuntimeError) as e:
            assert "[load]" in str(e), f"{what}: {e}"
            raised += 1
            continue
        if got == original:
            continue
        try:
            ref_arrays, ref_meta = reference_load_all(kind, bad, tmp_path)
        except Exception as e:  # noqa: BLE001 - any failure of the reference reader
            pytest.fail(
                f"{what}: kiln loaded other data from a file the reference rejects ({e})"
            )
        assert (
            as_np_kind(got[0]) == ref_arrays
        ), f"{what}: kiln and the reference reader disagree"
        if kind in ("safetensors", "gguf"):
            assert (
                got[1] == ref_meta or as_np_meta(got[1]) == ref_meta
            ), f"{what}: metadata differs"
    assert raised > len(mutations) // 3


def as_np_meta(meta):
    codes = as_np_kind({k: v for k, v in meta.items() if isinstance(v, tuple)})
    return {k: codes.get(k, v) for k, v in meta.items()}
