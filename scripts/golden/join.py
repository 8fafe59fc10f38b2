"""Golden values for autograd/ops/join.cpp: cat and stack (split and chunk are views, checked by
their shapes and values in the C++ test)."""
import torch

from golden._common import case, randn


def cases():
    c = {}
    a, b, d = randn(2, 3), randn(2, 4), randn(2, 1)
    c["cat_dim1"] = case({"a": a, "b": b, "c": d}, {"out": torch.cat([a, b, d], 1)}, dim=1)
    a, b = randn(1, 2, 3), randn(3, 2, 3)
    c["cat_dim0"] = case({"a": a, "b": b}, {"out": torch.cat([a, b], 0)}, dim=0)
    a, b = randn(2, 3), randn(2, 3)
    c["stack_dim0"] = case({"a": a, "b": b}, {"out": torch.stack([a, b], 0)}, dim=0)
    c["stack_dim_last"] = case({"a": a, "b": b}, {"out": torch.stack([a, b], -1)}, dim=-1)
    x = randn(7, 2)
    c["chunk_7_by_3"] = case({"x": x}, {f"piece{i}": p for i, p in enumerate(torch.chunk(x, 3, 0))},
                             chunks=3)
    return c
