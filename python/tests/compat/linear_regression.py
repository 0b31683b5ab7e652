"""Linear regression by gradient descent with value_and_grad, written as MLX code."""

import kiln.core as mx

num_features = 100
num_examples = 1_000
num_iters = 200
lr = 0.5

mx.random.seed(0)
# The true parameters and a noisy data set.
w_star = mx.random.normal((num_features,))
X = mx.random.normal((num_examples, num_features))
eps = 1e-2 * mx.random.normal((num_examples,))
y = X @ w_star + eps


def loss_fn(w):
    return 0.5 * mx.mean(mx.square(X @ w - y))


loss_and_grad_fn = mx.value_and_grad(loss_fn)

w = 1e-2 * mx.random.normal((num_features,))
first_loss = None
for it in range(num_iters):
    loss, grad = loss_and_grad_fn(w)
    w = w - lr * grad
    mx.eval(w, loss)
    if first_loss is None:
        first_loss = loss.item()

error_norm = mx.sqrt(mx.sum(mx.square(w - w_star))).item()
print(f"loss {first_loss:.4f} -> {loss.item():.6f}, |w - w*| = {error_norm:.5f}")
assert loss.item() < 1e-3 * first_loss
assert error_norm < 2e-2
print("ok")
