"""A two-layer MLP on a two-spirals problem: parameters in a tree, random initialization
with explicit keys, minibatches by indexing, SGD with momentum, and evaluation."""

import math

import kiln.core as mx


def tree_map(fn, tree, *rest):
    if isinstance(tree, dict):
        return {k: tree_map(fn, tree[k], *(r[k] for r in rest)) for k in tree}
    if isinstance(tree, (list, tuple)):
        return type(tree)(tree_map(fn, t, *(r[i] for r in rest)) for i, t in enumerate(tree))
    return fn(tree, *rest)


def spirals(n, key):
    k1, k2 = mx.random.split(key)
    t = mx.random.uniform(0.25, 1.0, (n,), key=k1) * 3 * math.pi
    label = mx.random.randint(0, 2, (n,), key=k2)
    sign = 2 * label.astype(mx.float32) - 1
    x = mx.stack([sign * t * mx.cos(t), sign * t * mx.sin(t)], axis=1) / (3 * math.pi)
    return x, label


def init(key, sizes):
    keys = mx.random.split(key, len(sizes) - 1)
    return [
        {"w": mx.random.normal((i, o), key=k) * math.sqrt(2 / i), "b": mx.zeros((o,))}
        for k, i, o in zip(keys, sizes[:-1], sizes[1:])
    ]


def forward(params, x):
    for layer in params[:-1]:
        x = mx.maximum(x @ layer["w"] + layer["b"], 0)
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    logits = forward(params, x)
    return mx.mean(mx.logsumexp(logits, axis=1) - mx.take_along_axis(logits, y[:, None], axis=1)[:, 0])


key = mx.random.key(0)
data_key, init_key, shuffle_key = mx.random.split(key, 3)
X, Y = spirals(2048, data_key)
params = init(init_key, [2, 64, 64, 2])
velocity = tree_map(mx.zeros_like, params)
step = mx.value_and_grad(loss_fn)

losses = []
for epoch in range(30):
    shuffle_key, k = mx.random.split(shuffle_key)
    perm = mx.argsort(mx.random.uniform(shape=(X.shape[0],), key=k))
    for i in range(0, X.shape[0], 256):
        idx = perm[i : i + 256]
        loss, grads = step(params, X[idx], Y[idx])
        velocity = tree_map(lambda v, g: 0.9 * v + g, velocity, grads)
        params = tree_map(lambda p, v: p - 0.1 * v, params, velocity)
        mx.eval(params, velocity)
    losses.append(loss.item())

pred = mx.argmax(forward(params, X), axis=1)
accuracy = mx.mean(pred == Y).item()
confusion = mx.zeros((2, 2), dtype=mx.int32).at[Y, pred.astype(mx.int32)].add(1)
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}, accuracy {accuracy:.3f}, confusion {confusion.tolist()}")
assert confusion.sum().item() == X.shape[0]
assert losses[-1] < 0.5 * losses[0]
assert accuracy > 0.9
print("ok")
