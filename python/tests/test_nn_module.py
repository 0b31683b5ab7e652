"""kiln.nn.Module: attribute storage, parameter and module trees, update, freezing, modes,
dtypes, repr, load/save_weights, and nn.value_and_grad / checkpoint / average_gradients."""

import gc
import os

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn
from kiln.utils import tree_flatten, tree_map
from nn_helpers import check_grad, f64, np64


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 4)
        self.norm = nn.LayerNorm(4)
        self.extra = {"scale": mx.ones((4,)), "inner": [nn.Linear(4, 2), mx.zeros((2,))]}
        self._private = mx.ones((1,))
        self.note = "text"

    def __call__(self, x):
        y = self.norm(self.linear(x)) * self.extra["scale"]
        return self.extra["inner"][0](y) + self.extra["inner"][1]


PARAMETER_KEYS = [
    "linear.weight",
    "linear.bias",
    "norm.weight",
    "norm.bias",
    "extra.scale",
    "extra.inner.0.weight",
    "extra.inner.0.bias",
    "extra.inner.1",
]


def keys(tree):
    return [k for k, _ in tree_flatten(tree)]


def test_module_is_a_dict_of_its_state():
    m = Block()
    assert isinstance(m, dict)
    assert m.state is m
    assert set(m.keys()) == {"linear", "norm", "extra", "_private"}
    assert "note" not in m and m.note == "text"
    assert m.linear is m["linear"]


def test_setattr_getattr_delattr():
    m = nn.Module()
    m.value = 3  # plain attribute
    assert "value" not in m and m.value == 3
    m.value = mx.ones((2,))  # now a dict item; the plain attribute is gone
    assert "value" in m and "value" not in m.__dict__
    m.value = 4  # back to a plain attribute; the item is removed
    assert "value" not in m and m.value == 4
    m.items_list = [mx.zeros((1,))]
    del m.items_list
    assert "items_list" not in m
    del m.value
    with pytest.raises(AttributeError, match="missing"):
        m.missing


def test_attribute_errors_inside_properties_reach_the_caller():
    class WithProperty(nn.Module):
        @property
        def broken(self):
            raise AttributeError("inner detail")

    with pytest.raises(AttributeError, match="inner detail"):
        WithProperty().broken


def test_parameters_and_trainable_parameters():
    m = Block()
    assert keys(m.parameters()) == PARAMETER_KEYS
    assert keys(m.trainable_parameters()) == PARAMETER_KEYS
    params = m.parameters()
    assert params["linear"]["weight"] is m.linear.weight
    # List positions are kept: the array at extra.inner.1 stays at index 1.
    assert isinstance(params["extra"]["inner"], list) and len(params["extra"]["inner"]) == 2


def test_children_and_leaf_modules():
    m = Block()
    children = m.children()
    assert children["linear"] is m.linear and children["norm"] is m.norm
    assert children["extra"]["inner"][0] is m.extra["inner"][0]
    assert children["extra"]["scale"] == {} and children["extra"]["inner"][1] == {}
    leaves = [v for _, v in tree_flatten(m.leaf_modules(), is_leaf=nn.Module.is_module)]
    assert leaves == [m.linear, m.norm, m.extra["inner"][0]]
    seq = nn.Sequential(nn.Sequential(nn.Linear(2, 2)), nn.Linear(2, 2))
    assert keys(tree_map(lambda _: 0, seq.leaf_modules(), is_leaf=nn.Module.is_module)) == [
        "layers.0.layers.0",
        "layers.1",
    ]
    # As in MLX: a module whose submodules hold nothing (parameter-free modules are empty
    # dicts, which flatten to nothing) counts as a leaf itself.
    seq = nn.Sequential(nn.Sequential(nn.ReLU()), nn.Linear(2, 2))
    assert keys(tree_map(lambda _: 0, seq.leaf_modules(), is_leaf=nn.Module.is_module)) == [
        "layers.0",
        "layers.1",
    ]


def test_modules_and_named_modules():
    m = Block()
    named = m.named_modules()
    assert named[0] == ("", m)
    assert {name for name, _ in named} == {"", "linear", "norm", "extra.inner.0"}
    assert [mod for _, mod in named] == m.modules()
    # Parents come before their children.
    seq = nn.Sequential(nn.Sequential(nn.ReLU()))
    names = [n for n, _ in seq.named_modules()]
    assert names.index("layers.0") < names.index("layers.0.layers.0")


def test_update_full_and_partial():
    m = Block()
    new = tree_map(lambda p: mx.full(p.shape, 7.0), m.parameters())
    m.update(new)
    assert all(np.all(np64(v) == 7) for _, v in tree_flatten(m.parameters()))
    w = mx.zeros((4, 3))
    m.update({"linear": {"weight": w}})
    assert m.linear.weight is w and np.all(np64(m.linear.bias) == 7)
    m.update({"extra": {"inner": [{}, mx.ones((2,))]}})
    assert np.all(np64(m.extra["inner"][1]) == 1)


def test_update_strict_errors():
    m = Block()
    with pytest.raises(ValueError, match='parameter named "nope"'):
        m.update({"nope": mx.zeros((1,))})
    with pytest.raises(ValueError, match="List index 2 is out of bounds"):
        m.update({"extra": {"inner": [{}, mx.zeros((2,)), mx.zeros((1,))]}})
    with pytest.raises(ValueError, match="invalid type: dict"):
        m.update({"extra": {"inner": [{}, {}]}})
    with pytest.raises(ValueError, match="invalid type: int"):
        m.update({"linear": {"weight": 3}})
    with pytest.raises(ValueError, match="invalid type: int"):
        m.update(3)
    # Non-strict ignores what does not fit.
    m.update({"nope": mx.zeros((1,)), "linear": {"weight": 3}}, strict=False)
    assert m.linear.weight == 3


def test_update_modules():
    m = Block()
    replacement = nn.Identity()
    m.update_modules({"norm": replacement, "extra": {"inner": [nn.Linear(4, 5)]}})
    assert m.norm is replacement and m.extra["inner"][0].weight.shape == (5, 4)
    with pytest.raises(ValueError, match='sub-module named "nope"'):
        m.update_modules({"nope": nn.Identity()})
    with pytest.raises(ValueError, match="invalid type"):
        m.update_modules({"extra": {"scale": nn.Linear(1, 1)}})
    m.update_modules({"extra": {"scale": {}}})  # empty dicts are always accepted
    with pytest.raises(ValueError, match="out of bounds"):
        m.update_modules({"extra": {"inner": [{}, {}, nn.Identity()]}})


def test_apply_and_apply_to_modules():
    m = Block()
    m.apply(lambda p: p.astype(mx.float16))
    assert all(v.dtype == mx.float16 for _, v in tree_flatten(m.parameters()))
    assert m._private.dtype == mx.float32  # private arrays are not parameters
    m.apply(
        lambda p: p * 0, filter_fn=lambda mod, k, v: k == "linear" or isinstance(mod, nn.Linear)
    )
    assert np.all(np64(m.linear.weight) == 0) and not np.all(np64(m.norm.weight) == 0)
    seen = []
    m.apply_to_modules(lambda path, mod: seen.append((path, type(mod).__name__)))
    assert (
        ("linear", "Linear") in seen
        and ("extra.inner.0", "Linear") in seen
        and seen[0] == ("", "Block")
    )


def test_set_dtype():
    m = Block()
    m.counts = mx.array([1, 2, 3])
    m.set_dtype(mx.bfloat16)
    assert m.linear.weight.dtype == mx.bfloat16 and m.counts.dtype == mx.int32
    m.set_dtype(mx.float32, predicate=None)
    assert m.counts.dtype == mx.float32


def test_freeze_and_unfreeze():
    m = Block()
    m.freeze()
    assert keys(m.trainable_parameters()) == []
    assert keys(m.parameters()) == PARAMETER_KEYS
    m.unfreeze(keys="bias")
    assert keys(m.trainable_parameters()) == ["linear.bias", "norm.bias", "extra.inner.0.bias"]
    m.unfreeze()
    m.freeze(keys=["weight"], recurse=True)
    assert "linear.weight" not in keys(m.trainable_parameters())
    m.unfreeze()
    m.freeze(recurse=False)
    # Only the module's own arrays freeze: "extra" holds arrays directly in the root.
    assert keys(m.trainable_parameters()) == [
        "linear.weight",
        "linear.bias",
        "norm.weight",
        "norm.bias",
        "extra.inner.0.weight",
        "extra.inner.0.bias",
    ]
    m.unfreeze(recurse=False)
    assert keys(m.trainable_parameters()) == PARAMETER_KEYS


def test_freeze_strict_keys():
    m = Block()
    with pytest.raises(KeyError, match="nope"):
        m.freeze(keys="nope", strict=True)
    m.freeze(keys="bias", strict=True)  # exists in some submodules: fine
    m.linear.freeze(keys="bias", recurse=False, strict=True)
    with pytest.raises(KeyError, match="nope"):
        m.norm.freeze(keys="nope", recurse=False, strict=True)
    m.freeze(keys="nope")  # not strict: ignored silently
    with pytest.raises(KeyError):
        m.unfreeze(keys=["nope"], strict=True)


def test_batchnorm_running_stats_stay_frozen():
    bn = nn.BatchNorm(3)
    assert keys(bn.trainable_parameters()) == ["weight", "bias"]
    bn.unfreeze()
    assert keys(bn.trainable_parameters()) == ["weight", "bias"]
    assert keys(bn.parameters()) == ["weight", "bias", "running_mean", "running_var"]


def test_train_and_eval_modes():
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), [nn.BatchNorm(2)])
    assert m.training and all(mod.training for mod in m.modules())
    m.eval()
    assert not m.training and all(not mod.training for mod in m.modules())
    x = mx.ones((4, 2))
    assert np.array_equal(np64(m.layers[1](x)), np64(x))  # dropout is the identity in eval
    m.train()
    assert all(mod.training for mod in m.modules())


def test_repr_matches_mlx_format():
    m = nn.Sequential(nn.Linear(2, 3, bias=False), nn.ReLU(), nn.Sequential(nn.LayerNorm(3)))
    assert repr(m) == (
        "Sequential(\n"
        "  (layers.0): Linear(input_dims=2, output_dims=3, bias=False)\n"
        "  (layers.1): ReLU()\n"
        "  (layers.2): Sequential(\n"
        "    (layers.0): LayerNorm(3, eps=1e-05, affine=True)\n"
        "  )\n"
        ")"
    )
    assert repr(nn.Dropout(0.25)) == "Dropout(p=0.25)"
    assert repr(nn.Module()) == "Module()"


def weights_of(model):
    return [
        (k, mx.array(np.full(v.shape, i, dtype=np.float32)))
        for i, (k, v) in enumerate(tree_flatten(model.parameters()))
    ]


def test_load_weights_from_list():
    m = Block()
    weights = weights_of(m)
    assert m.load_weights(weights) is m
    for i, (k, v) in enumerate(tree_flatten(m.parameters())):
        assert np.all(np64(v) == i), k
    with pytest.raises(ValueError, match="Missing 8 parameters"):
        m.load_weights([])


def test_load_weights_strict_lists_every_problem_by_name():
    m = Block()
    weights = dict(weights_of(m))
    del weights["norm.bias"]
    del weights["extra.inner.1"]
    weights["head.weight"] = mx.zeros((2,))
    weights["linear.weight"] = mx.zeros((3, 3))
    weights["extra.scale"] = np.ones(4)
    with pytest.raises(ValueError) as info:
        m.load_weights(list(weights.items()))
    message = str(info.value)
    assert "1 parameters not in model" in message and "head.weight" in message
    assert (
        "Missing 2 parameters" in message and "norm.bias" in message and "extra.inner.1" in message
    )
    assert "Expected shape (4, 3) but received shape (3, 3) for parameter linear.weight" in message
    assert "for parameter extra.scale" in message and "mx.array" in message
    # Nothing was loaded.
    assert m.linear.weight.shape == (4, 3)


def test_load_weights_non_strict():
    m = Block()
    before = np64(m.norm.weight)
    m.load_weights(
        [
            ("linear.weight", mx.zeros((4, 3))),
            ("head.weight", mx.zeros((1,))),
            ("linear.bias", mx.zeros((9,))),
        ],
        strict=False,
    )
    assert np.all(np64(m.linear.weight) == 0)
    assert m.linear.bias.shape == (9,)  # shapes are not checked when not strict
    assert "head" not in m
    assert np.array_equal(np64(m.norm.weight), before)


def test_load_weights_strict_empty_model():
    m = nn.ReLU()
    m.load_weights([])
    with pytest.raises(ValueError, match="not in model"):
        m.load_weights([("w", mx.zeros((1,)))])


def test_save_weights_rejects_unknown_extension(tmp_path):
    with pytest.raises(ValueError, match="weights.bin"):
        Block().save_weights(str(tmp_path / "weights.bin"))


@pytest.mark.parametrize("extension", ["npz", "safetensors"])
@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16])
def test_save_and_load_weights_round_trip(tmp_path, extension, dtype):
    if extension == "npz" and dtype == mx.bfloat16:
        pytest.skip("NumPy's .npz has no bfloat16")
    source = Block()
    source.set_dtype(dtype)
    path = str(tmp_path / f"model.{extension}")
    source.save_weights(path)
    target = Block()
    target.set_dtype(dtype)
    target.load_weights(path)
    for (k, a), (_, b) in zip(tree_flatten(source.parameters()), tree_flatten(target.parameters())):
        assert b.dtype == dtype, k
        assert np.array_equal(np64(a), np64(b)), k
    bad = Block()
    bad.linear = nn.Linear(3, 5)
    with pytest.raises(ValueError, match="linear.weight"):
        bad.load_weights(path)


def test_value_and_grad_uses_trainable_parameters(rng):
    m = Block()
    m.set_dtype(mx.float64)
    m.norm.freeze()
    x = f64(rng.standard_normal((5, 3)))

    def loss(x):
        return mx.sum(m(x) ** 2)

    value, grads = nn.value_and_grad(m, loss)(x)
    assert keys(grads) == [k for k in PARAMETER_KEYS if not k.startswith("norm")]
    assert np.isclose(value.item(), loss(x).item())
    # The gradient matches finite differences of the same function of the parameters.
    params = m.trainable_parameters()

    def as_function(p):
        m.update(p)
        return loss(x)

    check_grad(as_function, (params,), rng)
    m.update(params)
    g = dict(tree_flatten(grads))
    gg = dict(tree_flatten(mx.grad(as_function)(params)))
    for k in g:
        assert np.allclose(np64(g[k]), np64(gg[k]), rtol=1e-10, atol=1e-12), k


def test_value_and_grad_keeps_kwargs_and_wraps():
    m = nn.Linear(2, 1)

    def my_loss(x, scale=1.0):
        """doc"""
        return mx.sum(m(x)) * scale

    f = nn.value_and_grad(m, my_loss)
    assert f.__name__ == "my_loss" and f.__doc__ == "doc"
    v1, g1 = f(mx.ones((3, 2)))
    v2, g2 = f(mx.ones((3, 2)), scale=2.0)
    assert np.isclose(v2.item(), 2 * v1.item())
    assert np.allclose(np64(g2["weight"]), 2 * np64(g1["weight"]))


def test_checkpoint_matches_plain_gradients(rng):
    layer = nn.Linear(4, 4)
    layer.set_dtype(mx.float64)
    x = f64(rng.standard_normal((3, 4)))

    def loss_with(fn):
        return nn.value_and_grad(layer, lambda x: mx.sum(mx.tanh(fn(x))))(x)

    v1, g1 = loss_with(layer)
    v2, g2 = loss_with(nn.checkpoint(layer))
    assert np.isclose(v1.item(), v2.item())
    for (k, a), (_, b) in zip(tree_flatten(g1), tree_flatten(g2)):
        assert np.allclose(np64(a), np64(b)), k


def test_transformer_checkpoint_option(rng):
    mx.random.seed(3)
    a = nn.TransformerEncoder(2, 8, 2, checkpoint=False)
    b = nn.TransformerEncoder(2, 8, 2, checkpoint=True)
    b.update(a.parameters())
    x = mx.array(rng.standard_normal((2, 5, 8)).astype(np.float32))
    mask = nn.MultiHeadAttention.create_additive_causal_mask(5)
    va, ga = nn.value_and_grad(a, lambda x: mx.sum(a(x, mask) ** 2))(x)
    vb, gb = nn.value_and_grad(b, lambda x: mx.sum(b(x, mask) ** 2))(x)
    assert np.isclose(va.item(), vb.item(), rtol=1e-5)
    for (k, u), (_, v) in zip(tree_flatten(ga), tree_flatten(gb)):
        assert np.allclose(np64(u), np64(v), rtol=1e-4, atol=1e-5), k


def test_average_gradients_single_process_is_identity():
    grads = {"w": mx.ones((2, 2)), "b": [mx.zeros((3,))]}
    assert nn.average_gradients(grads) is grads


@pytest.mark.parametrize(
    "use",
    [
        lambda m: m.update_modules({}),
        lambda m: m.children(),
        lambda m: m.leaf_modules(),
        lambda m: m.freeze(),
        lambda m: m.apply_to_modules(lambda path, module: None),
        lambda m: repr(m),
    ],
)
def test_modules_are_freed_without_the_cycle_collector(use):
    # MLX frees a module as soon as its last reference goes: no method leaves a cycle behind.
    gc.disable()
    try:
        mx.synchronize()
        before = mx.get_active_memory()

        def make_and_use():
            model = nn.Sequential(nn.Linear(256, 128), nn.Linear(128, 4))
            mx.eval(model.parameters())
            use(model)

        make_and_use()
        mx.synchronize()
        assert mx.get_active_memory() == before
    finally:
        gc.enable()
