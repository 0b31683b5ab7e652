"""Adam (Kingma and Ba, 2015, "Adam: A Method for Stochastic Optimization", Algorithm 1)
written with kiln ops, over a dict of parameter arrays."""

import math

import kiln.core as mx


class Adam:
    """m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
    p -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)   (the paper's efficient form)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        self.lr, (self.b1, self.b2), self.eps = lr, betas, eps
        self.m = {k: mx.zeros_like(p) for k, p in params.items()}
        self.v = {k: mx.zeros_like(p) for k, p in params.items()}
        self.t = 0

    def update(self, params, grads):
        """The parameters after one step (new arrays; lazy until evaluated)."""
        self.t += 1
        step = self.lr * math.sqrt(1.0 - self.b2**self.t) / (1.0 - self.b1**self.t)
        new = {}
        for k, p in params.items():
            g = grads[k]
            self.m[k] = self.b1 * self.m[k] + (1.0 - self.b1) * g
            self.v[k] = self.b2 * self.v[k] + (1.0 - self.b2) * mx.square(g)
            new[k] = p - step * self.m[k] / (mx.sqrt(self.v[k]) + self.eps)
        return new

    def state(self):
        """The arrays to evaluate with the parameters after each step."""
        return [self.m, self.v]
