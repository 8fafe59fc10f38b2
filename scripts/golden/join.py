"""Golden values for autograd/ops/join.cpp: cat and stack (split and chunk are views, checked by
their shapes and values in the C++ test)."""
import torch

from golden._common import backward_case, case, randn


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

    # Backward (float64, from a random upstream gradient): each input gets its slice of g back.
    c["cat_grad_dim1"] = backward_case(lambda a, b, c: torch.cat([a, b, c], 1),
                                       {"a": randn(2, 3), "b": randn(2, 4), "c": randn(2, 1)})
    c["cat_grad_dim0_same_tensor_twice"] = backward_case(lambda a, b: torch.cat([a, b, a], 0),
                                                         {"a": randn(1, 2, 3), "b": randn(3, 2, 3)})
    c["stack_grad_dim0"] = backward_case(lambda a, b: torch.stack([a, b], 0),
                                         {"a": randn(2, 3), "b": randn(2, 3)})
    c["stack_grad_dim_last"] = backward_case(lambda a, b: torch.stack([a, b], -1),
                                             {"a": randn(2, 3), "b": randn(2, 3)})
    # Two of the three chunks, swapped: the unused chunk's rows get zeros.
    c["chunk_grad_7_by_3"] = backward_case(
        lambda x: torch.cat([torch.chunk(x, 3, 0)[2], torch.chunk(x, 3, 0)[0]], 0),
        {"x": randn(7, 2)})
    c["split_grad_2"] = backward_case(lambda x: torch.split(x, 2, 1)[1] * 2.0, {"x": randn(3, 5)})
    return c
