"""``Sequential``: modules applied one after the other."""

from kiln.nn.layers.base import Module


class Sequential(Module):
    """Calls its modules (or any callables) in order, each on the previous one's output.

    The modules are kept in the list ``layers``, so their parameters are named
    ``layers.0.weight``, ``layers.1.weight``, ...
    """

    def __init__(self, *modules):
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
