"""The array framework under the example: kiln by default, or MLX itself with
``LLM_FRAMEWORK=mlx`` (e.g. MLX's CUDA build, for a side-by-side run on the same GPU).

The example is MLX code: these imports are the only lines that differ between the two.
"""

import os

from .errors import LLMError

NAME = os.environ.get("LLM_FRAMEWORK", "kiln")

if NAME == "kiln":
    import kiln.core as mx
    import kiln.nn as nn
    import kiln.optimizers as optim
    from kiln.utils import tree_flatten, tree_unflatten
elif NAME == "mlx":
    try:
        import mlx.core as mx
        import mlx.nn as nn
        import mlx.optimizers as optim
        from mlx.utils import tree_flatten, tree_unflatten
    except ImportError as e:
        raise LLMError(
            f"LLM_FRAMEWORK=mlx but MLX cannot be imported ({e}); install it with:  pip install mlx"
        ) from e
else:
    raise LLMError(f"LLM_FRAMEWORK={NAME!r}: choose kiln or mlx")

__all__ = ["NAME", "mx", "nn", "optim", "tree_flatten", "tree_unflatten"]
