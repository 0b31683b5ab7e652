"""Evaluation from several Python threads: the GIL is released while kiln computes and
compiles, so other threads run meanwhile; 8 threads evaluating different graphs (on the
default stream, their own thread-local streams, and custom kernels each compiles) agree
with NumPy and finish within a time bound (faulthandler reports a deadlock). KILN_DEVICE=gpu
runs the same graphs on the GPU."""

import faulthandler
import threading
import time

import numpy as np
import pytest

import kiln.core as mx

THREADS = 8
ITERATIONS = 200
DEADLINE_S = 240  # a deadlock dumps every thread's stack and fails the run


@pytest.fixture
def watchdog():
    faulthandler.dump_traceback_later(DEADLINE_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def run_threads(target, n=THREADS):
    errors = []

    def wrapped(i):
        try:
            target(i)
        except BaseException as e:  # reported by the main thread
            errors.append((i, e))

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise AssertionError(f"{len(errors)} thread(s) failed, first: {errors[0]!r}") from errors[
            0
        ][1]


def test_gil_is_released_during_eval(watchdog):
    # While one thread evaluates a long graph, another thread keeps running Python.
    x = mx.random.uniform(shape=(1 << 20,))
    mx.eval(x)
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.01)
    y = x
    for _ in range(300):
        y = mx.sin(y) + 1.0
    before = len(ticks)
    start = time.monotonic()
    mx.eval(y)
    spent = time.monotonic() - start
    during = len(ticks) - before
    done.set()
    t.join()
    if spent > 0.05:  # long enough that a held GIL would show
        assert during >= 3, f"the other thread ran {during} times in {spent:.3f} s of eval"


def _graph(kind, rng):
    """A graph of `kind` and its NumPy reference."""
    a = rng.standard_normal((33, 17)).astype(np.float32)
    b = rng.standard_normal((17, 9)).astype(np.float32)
    if kind == 0:
        return lambda: mx.exp(mx.array(a) * 0.5).sum(axis=0), np.exp(a * 0.5).sum(axis=0)
    if kind == 1:
        return lambda: mx.array(a) @ mx.array(b), a @ b
    if kind == 2:
        return lambda: mx.sort(mx.array(a), axis=1)[:, ::2], np.sort(a, axis=1)[:, ::2]
    if kind == 3:
        f = mx.grad(lambda x: (mx.sin(x) * x).sum())
        return lambda: f(mx.array(a)), np.sin(a) + a * np.cos(a)
    f = mx.vmap(lambda r: mx.max(r) - mx.min(r))
    return lambda: f(mx.array(a)), a.max(axis=1) - a.min(axis=1)


def test_threads_evaluate_different_graphs(watchdog):
    def work(i):
        rng = np.random.default_rng(i)
        for it in range(ITERATIONS):
            build, want = _graph((i + it) % 5, rng)
            got = build()
            mx.eval(got)
            np.testing.assert_allclose(np.array(got), want, rtol=2e-4, atol=2e-4)

    run_threads(work)


def test_thread_local_streams(watchdog):
    s = mx.new_thread_local_stream(mx.default_device())

    def work(i):
        rng = np.random.default_rng(100 + i)
        with mx.stream(s):
            for it in range(ITERATIONS):
                build, want = _graph((i * 3 + it) % 5, rng)
                got = build()
                mx.eval(got)
                np.testing.assert_allclose(np.array(got), want, rtol=2e-4, atol=2e-4)
        mx.clear_streams()

    run_threads(work)


def test_threads_share_read_only_arrays(watchdog):
    # Many threads reading (and building on) the same arrays, some still unevaluated.
    rng = np.random.default_rng(7)
    an = rng.standard_normal((64, 64)).astype(np.float32)
    a = mx.array(an)
    shared = mx.exp(a)  # evaluated by whichever thread gets there first

    def work(i):
        for it in range(ITERATIONS):
            y = shared * float(i) + a
            mx.eval(y)
            np.testing.assert_allclose(np.array(y), np.exp(an) * i + an, rtol=1e-5, atol=1e-5)

    run_threads(work)


@pytest.mark.skipif(not hasattr(mx.fast, "metal_kernel"), reason="no custom kernels in this build")
def test_threads_compiling_custom_kernels(watchdog):
    # Each thread compiles a kernel of its own and one shared by all, and evaluates
    # ordinary graphs in between: the scheduler, the allocator and the kernel cache must
    # not deadlock each other.
    tag = str(time.time_ns())
    device = mx.default_device()
    stream = mx.cpu if device == mx.cpu else mx.gpu

    def kernel(name, factor):
        return mx.fast.metal_kernel(
            name=name,
            input_names=["x"],
            output_names=["out"],
            source=f"// {tag}\nuint i = thread_position_in_grid.x;\nout[i] = x[i] * {factor} + 1;\n",
        )

    shared = kernel("py_threads_shared", 3)

    def work(i):
        rng = np.random.default_rng(200 + i)
        own = kernel(f"py_threads_{i}", i + 5)
        for it in range(4):
            xn = rng.standard_normal(1000).astype(np.float32)
            x = mx.array(xn)
            for k, factor in ((shared, 3), (own, i + 5)):
                out = k(
                    inputs=[x],
                    grid=(xn.size, 1, 1),
                    threadgroup=(128, 1, 1),
                    output_shapes=[x.shape],
                    output_dtypes=[x.dtype],
                    stream=stream,
                )[0]
                y = mx.exp(out * 0.01).sum()
                mx.eval(out, y)
                np.testing.assert_allclose(np.array(out), xn * factor + 1, rtol=1e-6, atol=1e-6)
                np.testing.assert_allclose(
                    y.item(), np.exp((xn * factor + 1) * 0.01).sum(), rtol=1e-4
                )

    run_threads(work)


def test_async_eval_from_threads_then_synchronize(watchdog):
    def work(i):
        outs = []
        for it in range(ITERATIONS):
            x = mx.arange(1000, dtype=mx.float32) + float(i * 1000 + it)
            y = (x * 2).sum()
            mx.async_eval(y)
            outs.append((y, float(np.sum((np.arange(1000) + i * 1000 + it) * 2.0))))
        mx.synchronize()
        for y, want in outs:
            assert abs(y.item() - want) <= 1e-5 * abs(want)

    run_threads(work)


def test_errors_in_threads_leave_others_working(watchdog):
    def work(i):
        for it in range(ITERATIONS):
            if (i + it) % 3 == 0:
                with pytest.raises(ValueError):
                    mx.eval(mx.ones((3, 4)) @ mx.ones((5, 6)))
            else:
                assert mx.sum(mx.ones((10, 10)) * i).item() == 100 * i

    run_threads(work)


def test_new_stream_belongs_to_its_thread(watchdog):
    s = mx.new_stream(mx.default_device())
    free = mx.new_thread_unsafe_stream(mx.default_device())
    with mx.stream(s):  # the creating thread may use it
        assert (mx.arange(4) * 2).tolist() == [0, 2, 4, 6]

    def work(i):
        with pytest.raises(RuntimeError, match="new_thread_local_stream"):
            with mx.stream(s):
                mx.eval(mx.arange(3))
        with mx.stream(free):  # no owner
            assert (mx.arange(3) + i).tolist() == [i, i + 1, i + 2]

    run_threads(work, n=2)


def test_garbage_collection_while_threads_call_transforms(watchdog):
    # Transformed functions in reference cycles are created, called and collected by
    # several threads while another thread keeps forcing collections.
    import gc

    stop = threading.Event()

    def collector():
        while not stop.is_set():
            gc.collect()
            time.sleep(0.001)

    c = threading.Thread(target=collector)
    c.start()

    def work(i):
        for it in range(50):
            d = {"w": mx.full((64,), float(i + 1))}
            d["g"] = mx.grad(lambda x: (x * d["w"]).sum())
            d["v"] = mx.vmap(lambda r: (r * d["w"]).sum())
            g = d["g"](mx.ones((64,)))
            v = d["v"](mx.ones((3, 64)))
            assert g[0].item() == i + 1
            assert v.tolist() == [64.0 * (i + 1)] * 3

    try:
        run_threads(work)
    finally:
        stop.set()
        c.join()


@pytest.mark.skipif(not hasattr(mx.fast, "metal_kernel"), reason="no custom kernels in this build")
def test_gil_is_released_during_kernel_compiles(watchdog):
    k = mx.fast.metal_kernel(
        name="py_threads_gil",
        input_names=["x"],
        output_names=["out"],
        source=f"// {time.time_ns()}\nuint i = thread_position_in_grid.x;\nout[i] = x[i] + 1;\n",
    )
    x = mx.arange(8, dtype=mx.float32)
    stream = mx.cpu if mx.default_device() == mx.cpu else mx.gpu
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.01)
    before, start = len(ticks), time.monotonic()
    out = k(
        inputs=[x],
        grid=(8, 1, 1),
        threadgroup=(8, 1, 1),
        output_shapes=[x.shape],
        output_dtypes=[x.dtype],
        stream=stream,
    )[0]
    mx.eval(out)  # compiles here
    spent, during = time.monotonic() - start, len(ticks) - before
    done.set()
    t.join()
    assert out.tolist() == [float(i + 1) for i in range(8)]
    if spent > 0.05:
        assert during >= 3, f"the other thread ran {during} times in {spent:.3f} s of compiling"
