"""Array I/O: kiln.core.load / save / savez / savez_compressed / save_safetensors.

Round trips for every dtype and layout, interoperability with NumPy (np.save, np.savez,
np.load) and the safetensors package (and PyTorch through it, where installed), MLX's
behaviours (extensions, return types, errors), and damaged files: every truncation and bit
flip of a valid file either raises or gives exactly the data the damaged file describes (what
the format's reference reader returns for it) or the original data. GGUF: test_load_gguf.py.
"""

import io
import json
import os
import struct
import zipfile

import numpy as np
import pytest

import kiln.core as mx
from conftest import ALL_DTYPES, ml_dtypes
from io_helpers import (
    GGUF_DTYPES,
    SHAPES,
    assert_same,
    fresh,
    gguf,
    needs_safetensors,
    needs_torch,
    raw,
    safetensors,
    st_numpy,
    st_torch,
    torch,
)

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
    arrays = {
        "a": fresh(rng, (33, 7), mx.bfloat16)[0],
        "b": fresh(rng, (5,), mx.int64)[0],
    }
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
    values = values.astype(
        values.dtype.newbyteorder("=")
    )  # big-endian .npy: native values
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
