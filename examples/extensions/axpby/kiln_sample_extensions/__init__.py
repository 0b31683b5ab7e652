"""Sample C++ and CUDA extensions for kiln: ``axpby``.

kiln.core is imported before the compiled module ``_ext``, so that the Python types of kiln's
arrays, devices and streams (which ``_ext``'s functions take and return) are registered.
"""

import kiln.core as mx  # noqa: F401  (must come first)

from ._ext import axpby

__all__ = ["axpby"]
