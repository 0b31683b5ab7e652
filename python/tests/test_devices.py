"""Devices, streams, the stream= keyword, eval/async_eval/synchronize and memory."""

import threading

import numpy as np
import pytest

import kiln.core as mx
from conftest import assert_close, random_array

HAS_GPU = mx.is_available(mx.gpu)
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no GPU")


def test_device_objects():
    cpu = mx.Device(mx.cpu)
    assert cpu.type == mx.cpu and cpu.index == 0
    assert repr(cpu) == "Device(cpu, 0)"
    assert cpu == mx.cpu  # a DeviceType stands for device 0
    assert cpu == mx.Device(mx.cpu, 0) and cpu != mx.Device(mx.gpu)
    assert isinstance(mx.cpu, mx.DeviceType)
    assert mx.is_available(mx.cpu)
    assert mx.default_device() in (mx.Device(mx.cpu), mx.Device(mx.gpu))


def test_default_device_round_trip():
    prev = mx.default_device()
    mx.set_default_device(mx.cpu)
    try:
        assert mx.default_device() == mx.cpu
        assert (mx.array([1.0]) + 1).tolist() == [2.0]
    finally:
        mx.set_default_device(prev)
    assert mx.default_device() == prev


@pytest.mark.skipif(HAS_GPU, reason="a GPU is present")
def test_unavailable_gpu_raises():
    with pytest.raises(ValueError, match="not available"):
        mx.set_default_device(mx.gpu)
    with pytest.raises(ValueError):
        mx.new_stream(mx.gpu)
    with pytest.raises(ValueError):
        mx.add(mx.array(1), mx.array(2), stream=mx.gpu)


def test_streams():
    s = mx.new_stream(mx.cpu)
    assert s.device == mx.cpu
    assert repr(s).startswith("Stream(Device(cpu, 0), ")
    assert s != mx.default_stream(mx.cpu)
    assert s == s


def test_stream_keyword_on_ops(rng):
    a, an = random_array(rng, (3, 4), mx.float32)
    s = mx.new_stream(mx.cpu)
    for where in (s, mx.cpu, mx.Device(mx.cpu), None):
        assert_close(mx.exp(a, stream=where), np.exp(an))
        assert_close(mx.add(a, 1.0, stream=where), an + 1)
        assert_close(mx.sum(a, axis=1, stream=where), an.sum(1), rtol=1e-5)
        assert_close(mx.reshape(a, (4, 3), stream=where), an.reshape(4, 3))
        assert_close(a.astype(mx.float16, stream=where), an, mx.float16)
    with pytest.raises(TypeError):
        mx.exp(a, stream="cpu")
    with pytest.raises(TypeError):
        mx.exp(a, device=mx.cpu)  # wrong keyword name


def test_stream_context_manager(rng):
    prev_device = mx.default_device()
    s = mx.new_stream(mx.cpu)
    prev_stream = mx.default_stream(mx.cpu)
    a, an = random_array(rng, (5,), mx.float32)
    with mx.stream(s):
        assert mx.default_device() == mx.cpu
        assert mx.default_stream(mx.cpu) == s
        b = mx.exp(a) * 2
    assert mx.default_stream(mx.cpu) == prev_stream
    assert mx.default_device() == prev_device
    assert_close(b, np.exp(an) * 2)
    with mx.stream(mx.cpu):
        assert mx.default_device() == mx.cpu
    assert mx.default_device() == prev_device


def test_cross_stream_graph(rng):
    # Work on two streams that depend on each other.
    s1, s2 = mx.new_stream(mx.cpu), mx.new_stream(mx.cpu)
    a, an = random_array(rng, (64, 64), mx.float32)
    x = mx.exp(a, stream=s1)
    y = mx.add(x, a, stream=s2)
    z = mx.multiply(y, x, stream=s1)
    mx.eval(z)
    assert_close(z, (np.exp(an) + an) * np.exp(an), rtol=1e-5)


def test_eval_trees_and_async(rng):
    a, an = random_array(rng, (4,), mx.float32)
    tree = {"x": [mx.exp(a), (a + 1, 3)], "y": "not an array"}
    mx.eval(tree, a * 2, None)
    assert_close(tree["x"][0], np.exp(an))
    b = mx.sin(a)
    mx.async_eval(b)
    mx.synchronize()
    assert_close(b, np.sin(an))
    c = mx.cos(a)
    mx.async_eval([c])
    assert_close(c, np.cos(an))  # reading waits
    mx.synchronize(mx.default_stream(mx.default_device()))


def test_eval_from_threads(rng):
    a, an = random_array(rng, (32,), mx.float32)
    results = [None] * 4

    def work(i):
        try:
            results[i] = np.asarray(mx.exp(a * i))
        except Exception as e:  # re-raised below, in the test's thread
            results[i] = e

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, r in enumerate(results):
        if isinstance(r, Exception):
            raise r
        np.testing.assert_allclose(r, np.exp(an * i), rtol=1e-5)


def test_memory_functions():
    base = mx.get_active_memory()
    a = mx.zeros((1 << 20,))  # 4 MiB
    mx.eval(a)
    assert mx.get_active_memory() >= base + 4 * (1 << 20) - 4096
    assert mx.get_peak_memory() >= mx.get_active_memory()
    mx.reset_peak_memory()
    assert mx.get_peak_memory() <= mx.get_active_memory() + 4096
    assert mx.get_cache_memory() >= 0
    limit = mx.get_memory_limit()
    assert mx.set_memory_limit(limit) == limit
    prev = mx.set_cache_limit(0)
    assert mx.set_cache_limit(prev) == 0
    mx.clear_cache()
    assert mx.get_cache_memory() == 0
    assert mx.get_active_memory(device=mx.cpu) >= 0
    del a


@needs_gpu
def test_gpu_round_trip(rng):
    a, an = random_array(rng, (16, 16), mx.float32)
    b = mx.exp(a, stream=mx.gpu)
    c = mx.add(b, a, stream=mx.cpu)
    assert_close(c, np.exp(an) + an, rtol=1e-5)
    s = mx.new_stream(mx.gpu)
    with mx.stream(s):
        d = (a * 2).sum()
    assert d.item() == pytest.approx(2 * an.sum(), rel=1e-4)
    assert mx.get_active_memory(device=mx.gpu) > 0
