"""
Fused operations and custom kernels written as source strings.
"""
from __future__ import annotations
__all__: list[str] = list()
