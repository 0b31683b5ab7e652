"""kiln.optimizers: each optimizer step by step against its formula in NumPy (bias
correction and weight decay placement included), schedules, the state tree (save, load,
resume), MultiOptimizer, clip_grad_norm and bad arguments."""

import math

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn
import kiln.optimizers as optim
from kiln.utils import tree_flatten, tree_map, tree_unflatten
from nn_helpers import f64, np64

SHAPES = {"a": (3, 4), "b.0": (5,), "c": (2, 3, 4), "d": ()}
STEPS = 4


def make_tree(rng, scale=1.0):
    return {k: rng.standard_normal(s) * scale for k, s in SHAPES.items()}


def to_mx(flat):
    return tree_unflatten([(k, f64(v)) for k, v in flat.items()])


def run(optimizer, reference, rng, steps=STEPS, rtol=1e-12):
    """Applies `steps` random gradients with `optimizer` and with `reference(g, w, state, t)`
    (NumPy, per parameter, t from 1) and compares the parameters after every step."""
    params = make_tree(rng)
    expected = dict(params)
    states = {k: {} for k in params}
    current = to_mx(params)
    for t in range(1, steps + 1):
        grads = make_tree(rng)
        current = optimizer.apply_gradients(to_mx(grads), current)
        for k in params:
            expected[k] = reference(grads[k], expected[k], states[k], t)
        flat = dict(tree_flatten(current))
        for k in params:
            np.testing.assert_allclose(
                np64(flat[k]), expected[k], rtol=rtol, atol=rtol, err_msg=f"{k} at step {t}"
            )
    assert optimizer.state["step"].item() == steps and optimizer.state["step"].dtype == mx.uint64


LR = 0.125  # exactly representable: the learning rate is stored as a float32 array


@pytest.mark.parametrize(
    "momentum, weight_decay, dampening, nesterov",
    [
        (0.0, 0.0, 0.0, False),
        (0.0, 0.1, 0.0, False),
        (0.9, 0.0, 0.0, False),
        (0.9, 0.05, 0.25, False),
        (0.5, 0.01, 0.0, True),
    ],
)
def test_sgd(rng, momentum, weight_decay, dampening, nesterov):
    def reference(g, w, s, t):
        g = g + weight_decay * w  # L2 decay goes into the gradient
        if momentum <= 0:
            return w - LR * g
        v = momentum * s.get("v", 0) + (1 - dampening) * g
        s["v"] = v
        return w - LR * (g + momentum * v if nesterov else v)

    run(optim.SGD(LR, momentum, weight_decay, dampening, nesterov), reference, rng)


def test_rmsprop_adagrad_adadelta(rng):
    def rmsprop(g, w, s, t):
        s["v"] = 0.9 * s.get("v", 0) + 0.1 * g**2
        return w - LR * g / (np.sqrt(s["v"]) + 1e-6)

    run(optim.RMSprop(LR, alpha=0.9, eps=1e-6), rmsprop, rng)

    def adagrad(g, w, s, t):
        s["v"] = s.get("v", 0) + g**2
        return w - LR * g / (np.sqrt(s["v"]) + 1e-8)

    run(optim.Adagrad(LR), adagrad, rng)

    def adadelta(g, w, s, t):
        v = 0.8 * s.get("v", 0) + 0.2 * g**2
        delta = np.sqrt(s.get("u", 0) + 1e-6) / np.sqrt(v + 1e-6) * g
        s["u"] = 0.8 * s.get("u", 0) + 0.2 * delta**2
        s["v"] = v
        return w - 0.5 * delta

    run(optim.AdaDelta(0.5, rho=0.8), adadelta, rng)


def adam_reference(lr, b1, b2, eps, bias_correction, decoupled_decay=0.0):
    def reference(g, w, s, t):
        w = w * (1 - lr * decoupled_decay)  # AdamW: decay the weights, not the gradient
        m = b1 * s.get("m", 0) + (1 - b1) * g
        v = b2 * s.get("v", 0) + (1 - b2) * g**2
        s["m"], s["v"] = m, v
        if bias_correction:
            return w - lr / (1 - b1**t) * m / (np.sqrt(v) / np.sqrt(1 - b2**t) + eps)
        return w - lr * m / (np.sqrt(v) + eps)

    return reference


@pytest.mark.parametrize("bias_correction", [False, True])
def test_adam(rng, bias_correction):
    # The bias-correction factors are computed in float32 (the step is a uint64 array).
    rtol = 1e-6 if bias_correction else 1e-12
    run(
        optim.Adam(LR, betas=[0.8, 0.95], eps=1e-6, bias_correction=bias_correction),
        adam_reference(LR, 0.8, 0.95, 1e-6, bias_correction),
        rng,
        rtol=rtol,
    )


@pytest.mark.parametrize("bias_correction", [False, True])
def test_adamw_decays_weights_before_the_adam_step(rng, bias_correction):
    rtol = 1e-6 if bias_correction else 1e-12
    run(
        optim.AdamW(LR, betas=[0.9, 0.99], weight_decay=0.25, bias_correction=bias_correction),
        adam_reference(LR, 0.9, 0.99, 1e-8, bias_correction, decoupled_decay=0.25),
        rng,
        rtol=rtol,
    )
    assert optim.AdamW(0.1).weight_decay == 0.01


def test_adamax(rng):
    def reference(g, w, s, t):
        s["m"] = 0.9 * s.get("m", 0) + 0.1 * g
        s["v"] = np.maximum(0.99 * s.get("v", 0), np.abs(g))
        return w - LR * s["m"] / (s["v"] + 1e-8)

    run(optim.Adamax(LR, betas=[0.9, 0.99]), reference, rng)


@pytest.mark.parametrize("weight_decay", [0.0, 0.5])
def test_lion(rng, weight_decay):
    def reference(g, w, s, t):
        m = s.get("m", 0)
        direction = 0.9 * m + 0.1 * g
        s["m"] = 0.99 * m + 0.01 * g
        return (1 - LR * weight_decay) * w - LR * np.sign(direction)

    run(optim.Lion(LR, weight_decay=weight_decay), reference, rng)


def adafactor_reference(
    lr=None,
    eps=(1e-30, 1e-3),
    clip=1.0,
    decay=-0.8,
    beta_1=None,
    weight_decay=0.0,
    scale_parameter=True,
    relative_step=True,
    warmup_init=False,
):
    def rms(x):
        return np.sqrt(np.mean(x**2))

    def reference(g, w, s, t):
        step_size = (
            min(1e-6 * t if warmup_init else 1e-2, 1 / math.sqrt(t)) if relative_step else lr
        )
        alpha = max(eps[1], rms(w)) * step_size if scale_parameter else step_size
        beta_2 = 1 - t**decay
        squared = g**2 + eps[0]
        if g.ndim >= 2:
            s["row"] = beta_2 * s.get("row", 0) + (1 - beta_2) * squared.mean(-1)
            s["col"] = beta_2 * s.get("col", 0) + (1 - beta_2) * squared.mean(-2)
            row = s["row"] / s["row"].mean(-1, keepdims=True)
            update = g / np.sqrt(row[..., :, None] * s["col"][..., None, :])
        else:
            s["sq"] = beta_2 * s.get("sq", 0) + (1 - beta_2) * squared
            update = g / np.sqrt(s["sq"])
        update = update / max(1.0, rms(update) / clip)
        update = alpha * update
        if beta_1 is not None:
            s["m"] = beta_1 * s.get("m", 0) + (1 - beta_1) * update
            update = s["m"]
        if weight_decay:
            w = w - weight_decay * alpha * w
        return w - update

    return reference


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        dict(warmup_init=True),
        dict(learning_rate=LR, relative_step=False, scale_parameter=False, clip_threshold=0.5),
        dict(learning_rate=LR, relative_step=False, beta_1=0.9, weight_decay=0.1),
    ],
)
def test_adafactor(rng, kwargs):
    reference_kwargs = {
        ("lr" if k == "learning_rate" else "clip" if k == "clip_threshold" else k): v
        for k, v in kwargs.items()
    }
    # Step sizes and beta_2 come from the uint64 step in float32.
    run(optim.Adafactor(**kwargs), adafactor_reference(**reference_kwargs), rng, rtol=1e-5)


def np_newton_schulz(x, steps):
    # c goes through addmm's alpha, a float32 (as in MLX).
    a, b, c = 3.4445, -4.7750, float(np.float32(2.0315))
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    x = x / (np.linalg.norm(x) + 1e-7)
    for _ in range(steps):
        A = x @ x.T
        x = a * x + (b * A + c * A @ A) @ x
    return x.T if tall else x


@pytest.mark.parametrize("nesterov", [True, False])
def test_muon(rng, nesterov):
    def reference(g, w, s, t):
        g = g + 0.05 * w
        v = 0.9 * s.get("v", 0) + 0.1 * g
        s["v"] = v
        update = 0.1 * g + 0.9 * v if nesterov else v
        lr = LR
        if update.ndim >= 2:
            shape = update.shape
            update = np_newton_schulz(update.reshape(shape[0], -1), 3).reshape(shape)
            lr = LR * max(1, update.shape[-2] / update.shape[-1]) ** 0.5
        return w - lr * update

    run(
        optim.Muon(LR, momentum=0.9, weight_decay=0.05, nesterov=nesterov, ns_steps=3),
        reference,
        rng,
        rtol=1e-10,
    )


def test_muon_orthogonalizes():
    rng = np.random.default_rng(0)
    g = rng.standard_normal((8, 16))
    x = np64(optim.Muon(1.0)._zeropower_via_newtonschulz5(f64(g), steps=5))
    singular = np.linalg.svd(x, compute_uv=False)
    assert np.all((singular > 0.6) & (singular < 1.25))  # the quintic iteration's band


# ---------------------------------------------------------------- schedules


def test_schedules():
    steps = np.arange(0, 12)
    cases = [
        (optim.exponential_decay(0.1, 0.9), 0.1 * 0.9**steps),
        (optim.step_decay(0.1, 0.5, 3), 0.1 * 0.5 ** (steps // 3)),
        (
            optim.cosine_decay(0.1, 8, end=0.01),
            0.01 + 0.5 * (1 + np.cos(np.pi * np.minimum(steps, 8) / 8)) * 0.09,
        ),
        (optim.cosine_decay(0.1, 8), 0.05 * (1 + np.cos(np.pi * np.minimum(steps, 8) / 8))),
        (optim.linear_schedule(0.0, 0.1, 5), np.minimum(steps, 5) * 0.02),
    ]
    for schedule, expected in cases:
        got = np.array([np64(mx.array(schedule(mx.array(int(s))))) for s in steps])
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
        # Python ints work too.
        assert np.isclose(float(np64(mx.array(schedule(5)))), expected[5], rtol=1e-6)


def test_join_schedules():
    warmup = optim.linear_schedule(0.0, 0.1, 4)
    decay = optim.cosine_decay(0.1, 6)
    constant = optim.exponential_decay(0.01, 1.0)
    joined = optim.join_schedules([warmup, decay, constant], [4, 10])
    got = [np64(mx.array(joined(mx.array(s)))).item() for s in range(14)]
    expected = [0.025 * s for s in range(4)]
    expected += [0.05 * (1 + math.cos(math.pi * (s - 4) / 6)) for s in range(4, 10)]
    expected += [0.01] * 4
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_schedule_errors():
    with pytest.raises(ValueError, match="step_size must be greater than 0, but got 0"):
        optim.step_decay(0.1, 0.9, 0)
    with pytest.raises(ValueError, match="decay_steps must be greater than 0, but got -1"):
        optim.cosine_decay(0.1, -1)
    with pytest.raises(ValueError, match="steps must be greater than 0, but got 0"):
        optim.linear_schedule(0.1, 0.0, 0)
    with pytest.raises(ValueError, match="at least 1 schedule"):
        optim.join_schedules([], [])
    with pytest.raises(ValueError, match="Received 2 boundaries but expected 1"):
        optim.join_schedules([optim.linear_schedule(0, 1, 2)] * 2, [1, 2])


def test_scheduled_learning_rate_uses_the_step_before_the_update():
    schedule = optim.exponential_decay(1.0, 0.5)
    opt = optim.SGD(schedule)
    assert opt.learning_rate.item() == 1.0
    w = {"w": f64([0.0])}
    g = {"w": f64([1.0])}
    history = []
    for _ in range(4):
        w = opt.apply_gradients(g, w)
        history.append(np64(w["w"]).item())
    # Updates use 1, 0.5, 0.25, 0.125: schedule(step) before the step advances.
    np.testing.assert_allclose(history, [-1.0, -1.5, -1.75, -1.875])
    assert opt.learning_rate.item() == 0.125 and opt.step.item() == 4


def test_learning_rate_setter_and_state_keys():
    opt = optim.Adam(0.1)
    assert set(opt.state) == {"step", "learning_rate"}
    opt.learning_rate = 0.5
    assert isinstance(opt.learning_rate, mx.array) and opt.learning_rate.item() == 0.5
    opt.apply_gradients({"w": mx.ones((2,))}, {"w": mx.zeros((2,))})
    assert set(opt.state["w"]) == {"m", "v"}


# ---------------------------------------------------------------- state, init, update(model)


def test_state_round_trip_resumes_identically(rng):
    params = to_mx(make_tree(rng))
    grads = [to_mx(make_tree(rng)) for _ in range(6)]
    schedule = optim.cosine_decay(0.1, 5)
    reference = optim.AdamW(schedule, bias_correction=True)
    p = params
    for g in grads[:3]:
        p = reference.apply_gradients(g, p)
    # Flatten the state as a checkpoint would, then restore it into a new optimizer.
    saved = [(k, mx.array(np64(v), dtype=mx.float64).astype(v.dtype)) for k, v in tree_flatten(reference.state)]
    resumed = optim.AdamW(schedule, bias_correction=True)
    resumed.state = tree_unflatten(saved)
    q = p
    for g in grads[3:]:
        p = reference.apply_gradients(g, p)
        q = resumed.apply_gradients(g, q)
    for (k, a), (_, b) in zip(tree_flatten(p), tree_flatten(q)):
        np.testing.assert_array_equal(np64(a), np64(b), err_msg=k)
    assert resumed.step.item() == 6


def test_init_keeps_existing_state_and_adds_new_parameters():
    opt = optim.SGD(0.1, momentum=0.9)
    existing = mx.full((2,), 3.0)
    opt.state = {
        "step": mx.array(5, mx.uint64),
        "learning_rate": mx.array(0.1),
        "a": {"v": existing},
        "layers": [{"v": mx.ones((1,))}],
    }
    params = {"a": mx.zeros((2,)), "b": mx.zeros((3,)), "layers": [mx.zeros((1,)), mx.zeros((4,))]}
    opt.init(params)
    assert opt.state["a"]["v"] is existing
    assert np.all(np64(opt.state["b"]["v"]) == 0) and opt.state["b"]["v"].shape == (3,)
    assert opt.state["layers"][1]["v"].shape == (4,)
    assert np.all(np64(opt.state["layers"][0]["v"]) == 1)


def test_update_model_in_place(rng):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    model.layers[0].freeze(keys="bias")
    x = mx.array(rng.standard_normal((16, 3)).astype(np.float32))
    y = mx.array(rng.standard_normal((16, 1)).astype(np.float32))
    loss_and_grad = nn.value_and_grad(model, lambda: nn.losses.mse_loss(model(x), y))
    opt = optim.SGD(0.05)
    frozen_bias = model.layers[0].bias
    before = np64(model.layers[2].weight)
    _, grads = loss_and_grad()
    opt.update(model, grads)
    np.testing.assert_allclose(
        np64(model.layers[2].weight), before - 0.05 * np64(grads["layers"][2]["weight"]), rtol=1e-6
    )
    assert model.layers[0].bias is frozen_bias  # frozen: no gradient, no update
    losses = []
    for _ in range(30):
        loss, grads = loss_and_grad()
        opt.update(model, grads)
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_multi_optimizer(rng):
    params = {
        "w": f64(rng.standard_normal((2, 2))),
        "bias": f64(rng.standard_normal(2)),
        "layers": [{"bias": f64(rng.standard_normal(3))}],
    }
    grads = tree_map(lambda p: f64(np.ones(p.shape)), params)
    sgd, adam = optim.SGD(0.5), optim.Adam(0.25)
    multi = optim.MultiOptimizer([sgd, adam], [lambda path, g: path.endswith("bias")])
    out = multi.apply_gradients(grads, params)
    np.testing.assert_allclose(np64(out["bias"]), np64(params["bias"]) - 0.5)
    np.testing.assert_allclose(
        np64(out["layers"][0]["bias"]), np64(params["layers"][0]["bias"]) - 0.5
    )
    adam_step = 0.25 * 0.1 / (math.sqrt(0.001) + 1e-8)
    np.testing.assert_allclose(np64(out["w"]), np64(params["w"]) - adam_step, rtol=1e-6)
    assert set(multi.state) == {"states"} and len(multi.state["states"]) == 2
    assert "w" in adam.state and "bias" in sgd.state and "w" not in sgd.state
    multi.learning_rate = 0.01
    assert sgd.learning_rate.item() == pytest.approx(
        0.01
    ) and multi.learning_rate.item() == pytest.approx(0.01)
    multi.state = {"states": [sgd.state, adam.state]}
    with pytest.raises(ValueError, match="Invalid state"):
        multi.state = {"states": [sgd.state]}
    with pytest.raises(ValueError, match="Given 0 filters but 1 needed"):
        optim.MultiOptimizer([sgd, adam])
    single = optim.MultiOptimizer([optim.SGD(1.0)])
    np.testing.assert_allclose(
        np64(single.apply_gradients(grads, params)["w"]), np64(params["w"]) - 1
    )


# ---------------------------------------------------------------- clip_grad_norm


def test_clip_grad_norm(rng):
    grads = {"a": rng.standard_normal((3, 4)), "b": [rng.standard_normal(5)]}
    total = math.sqrt(sum((g**2).sum() for _, g in tree_flatten(grads)))
    mx_grads = tree_map(f64, grads)
    clipped, norm = optim.clip_grad_norm(mx_grads, max_norm=total / 2)
    assert np.isclose(norm.item(), total)
    scale = (total / 2) / (total + 1e-6)
    np.testing.assert_allclose(np64(clipped["a"]), grads["a"] * scale, rtol=1e-12)
    np.testing.assert_allclose(np64(clipped["b"][0]), grads["b"][0] * scale, rtol=1e-12)
    unclipped, _ = optim.clip_grad_norm(mx_grads, max_norm=2 * total)
    np.testing.assert_allclose(np64(unclipped["a"]), grads["a"], rtol=1e-12)
    with pytest.raises(ValueError, match="max_norm should be >=0, -1.0"):
        optim.clip_grad_norm(mx_grads, -1.0)


def test_clip_grad_norm_half_precision():
    grads = {"a": mx.full((4,), 300.0, dtype=mx.float16)}  # squares overflow float16
    clipped, norm = optim.clip_grad_norm(grads, 1.0)
    assert np.isclose(norm.item(), 600.0)
    assert clipped["a"].dtype == mx.float16
    np.testing.assert_allclose(np64(clipped["a"]), 0.5, rtol=1e-3)


# ---------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    "make, text",
    [
        (lambda: optim.SGD(0.1, nesterov=True), "momentum=0.0"),
        (lambda: optim.SGD(0.1, momentum=0.9, dampening=0.1, nesterov=True), "dampening=0.1"),
        (lambda: optim.Adam(0.1, betas=[0.9, 1.0]), "beta2 should be in [0, 1), 1.0"),
        (lambda: optim.AdamW(0.1, betas=[-0.1, 0.9]), "beta1 should be in [0, 1), -0.1"),
        (lambda: optim.Adam(0.1, eps=-1.0), "eps should be >=0, -1.0"),
        (lambda: optim.Lion(0.1, betas=[0.9, 1.5]), "beta2 should be in [0, 1), 1.5"),
        (lambda: optim.RMSprop(0.1, alpha=-0.5), "alpha should be >=0, -0.5"),
        (lambda: optim.RMSprop(0.1, eps=0.0), "eps should be >0, 0.0"),
        (lambda: optim.Adagrad(0.1, eps=-1e-8), "eps should be >0, -1e-08"),
        (lambda: optim.AdaDelta(0.1, rho=-0.9), "rho should be >=0, -0.9"),
        (lambda: optim.AdaDelta(0.1, eps=0.0), "eps should be >0, 0.0"),
        (lambda: optim.Adafactor(relative_step=False), "learning_rate is required"),
    ],
)
def test_invalid_optimizer_arguments(make, text):
    with pytest.raises(ValueError) as info:
        make()
    assert text in str(info.value)


def test_every_optimizer_keeps_shapes_and_dtypes():
    params = {
        "first": [mx.zeros((10,)), mx.zeros((1,))],
        "second": mx.zeros((3, 2)),
        "half": mx.zeros((4, 4), dtype=mx.bfloat16),
    }
    grads = tree_map(mx.ones_like, params)
    for opt in [
        optim.SGD(0.1),
        optim.RMSprop(0.1),
        optim.Adagrad(0.1),
        optim.AdaDelta(0.1),
        optim.Adam(0.1),
        optim.AdamW(0.1),
        optim.Adamax(0.1),
        optim.Lion(0.1),
        optim.Adafactor(),
        optim.Muon(0.1),
    ]:
        out = opt.apply_gradients(grads, params)
        for (k, a), (_, b) in zip(tree_flatten(params), tree_flatten(out)):
            assert a.shape == b.shape and a.dtype == b.dtype, (type(opt).__name__, k, b.dtype)
