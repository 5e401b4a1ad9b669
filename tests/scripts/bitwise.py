"""Exact comparison of trace values, for the cross-engine tests."""
import numpy as np


def same(a, b):
    """Exact equality; floats compared bit for bit (so -0.0 != 0.0 and NaN == NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        bits = np.uint64 if a.itemsize == 8 else np.uint32
        return np.array_equal(a.view(bits), b.view(bits))
    return np.array_equal(a, b)
