"""Golden values for autograd/ops/masking.cpp: where, masked_fill, tril, triu."""
import torch

from golden._common import backward_case, case, randn


def cases():
    c = {}
    cond = torch.rand(3, 1) > 0.5
    cond[0, 0], cond[1, 0] = True, False
    a, b = randn(1, 4), randn(3, 4)
    c["where_broadcast"] = case({"condition": cond, "a": a, "b": b},
                                {"out": torch.where(cond, a, b)})
    cond = torch.rand(2, 3) > 0.5
    a, b = randn(2, 3), randn(2, 3, dtype=torch.float64)
    c["where_promotes"] = case({"condition": cond, "a": a, "b": b},
                               {"out": torch.where(cond, a, b)})
    x = randn(2, 3, 4)
    mask = torch.rand(3, 1) > 0.5
    mask[0, 0], mask[1, 0] = True, False
    c["masked_fill_broadcast"] = case({"x": x, "mask": mask},
                                      {"out": x.masked_fill(mask, -1.5)}, value=-1.5)
    x = randn(2, 4)
    mask = torch.ones(4, 4, dtype=torch.bool).tril().logical_not()[:2]
    c["masked_fill_neg_inf"] = case({"x": x, "mask": mask},
                                    {"out": x.masked_fill(mask, float("-inf"))})
    for diagonal in (-1, 0, 2):
        x = randn(2, 4, 5)
        name = f"{'m' if diagonal < 0 else ''}{abs(diagonal)}"
        c[f"tril_diagonal_{name}"] = case({"x": x}, {"out": x.tril(diagonal)}, diagonal=diagonal)
        c[f"triu_diagonal_{name}"] = case({"x": x}, {"out": x.triu(diagonal)}, diagonal=diagonal)

    # Backward (float64, from a random upstream gradient): masked entries get no gradient, and
    # the broadcast operands of where get theirs summed.
    cond = torch.rand(3, 1) > 0.5
    cond[0, 0], cond[1, 0] = True, False
    c["where_grad_broadcast"] = backward_case(torch.where, {"condition": cond, "input": randn(1, 4),
                                                           "other": randn(3, 4)})
    mask = torch.rand(3, 1) > 0.5
    mask[0, 0], mask[1, 0] = True, False
    c["masked_fill_grad_broadcast"] = backward_case(lambda x, mask: x.masked_fill(mask, -1.5),
                                                    {"x": randn(2, 3, 4), "mask": mask})
    c["tril_grad_diagonal_m1"] = backward_case(lambda x: x.tril(-1), {"x": randn(2, 4, 5)})
    c["triu_grad_diagonal_1"] = backward_case(lambda x: x.triu(1), {"x": randn(2, 4, 5)})
    return c
