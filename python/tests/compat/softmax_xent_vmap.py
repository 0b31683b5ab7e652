"""A softmax classifier: per-example cross-entropy written for one example and batched
with vmap, per-example gradients with vmap(grad), training with value_and_grad."""

import kiln.core as mx

mx.random.seed(1)
num_classes, dim, n = 4, 8, 512

# Gaussian blobs around one center per class.
centers = 3 * mx.random.normal((num_classes, dim))
labels = mx.random.randint(0, num_classes, (n,))
X = centers[labels] + mx.random.normal((n, dim))


def log_softmax(logits):
    return logits - mx.logsumexp(logits, axis=-1, keepdims=True)


def cross_entropy(logits, label):
    """One example: logits (C,), label a scalar."""
    return -log_softmax(logits)[label]


batched_xent = mx.vmap(cross_entropy)


def loss_fn(params, x, y):
    logits = x @ params["W"] + params["b"]
    return mx.mean(batched_xent(logits, y))


# vmap agrees with the batched formula.
params = {"W": 0.01 * mx.random.normal((dim, num_classes)), "b": mx.zeros((num_classes,))}
logits = X @ params["W"] + params["b"]
direct = -mx.take_along_axis(log_softmax(logits), labels[:, None], axis=1)[:, 0]
assert mx.allclose(batched_xent(logits, labels), direct, atol=1e-5).item()

# Per-example gradients (vmap of grad) average to the batch gradient.
def example_loss(params, x, y):
    return cross_entropy(x @ params["W"] + params["b"], y)


per_example = mx.vmap(mx.grad(example_loss), in_axes=(None, 0, 0))(params, X, labels)
batch_grad = mx.grad(loss_fn)(params, X, labels)
assert per_example["W"].shape == (n, dim, num_classes)
assert mx.allclose(per_example["W"].mean(axis=0), batch_grad["W"], atol=1e-5).item()
assert mx.allclose(per_example["b"].mean(axis=0), batch_grad["b"], atol=1e-5).item()

loss_and_grad = mx.value_and_grad(loss_fn)
for step in range(100):
    loss, grads = loss_and_grad(params, X, labels)
    params = {k: params[k] - 0.5 * grads[k] for k in params}
    mx.eval(params)

accuracy = mx.mean(mx.argmax(X @ params["W"] + params["b"], axis=1) == labels).item()
print(f"loss {loss.item():.4f}, accuracy {accuracy:.3f}")
assert accuracy > 0.9
print("ok")
