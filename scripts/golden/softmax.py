"""Golden values for autograd/ops/softmax.cpp: softmax and log_softmax along several dims,
large logits (stability), rows with -inf (masked attention scores), and masked_softmax."""
import torch

from golden._common import backward_case, case, randn


def both(x, dim):
    return case({"x": x}, {"softmax": torch.softmax(x, dim), "log_softmax": torch.log_softmax(x, dim)},
                dim=dim)


def cases():
    c = {}
    c["last_dim"] = both(randn(3, 5), -1)
    c["middle_dim"] = both(randn(4, 3, 2), 1)
    c["first_dim"] = both(randn(4, 3), 0)
    # Logits around 1000: exp would overflow without subtracting the max first.
    c["large_logits"] = both(randn(2, 4) * 10 + 1000, 1)
    c["large_negative_logits"] = both(randn(2, 4) * 10 - 1000, 1)
    # A causal-mask row: -inf entries get probability 0 (log-probability -inf); a row that is
    # entirely -inf gives NaN, as in PyTorch.
    x = randn(3, 4)
    x[0, 2:] = float("-inf")
    x[2, :] = float("-inf")
    c["masked_rows"] = both(x, 1)
    # A transposed view: the C++ test computes softmax(x.t(), 1).
    x = randn(5, 3)
    c["transposed"] = case({"x": x}, {"softmax": torch.softmax(x.t(), 1),
                                      "log_softmax": torch.log_softmax(x.t(), 1)}, dim=1)
    # masked_softmax: softmax over the entries where mask is true, 0 elsewhere, and a row with no
    # true entry all zeros. PyTorch has no such op; it is -inf where masked, softmax, NaN -> 0.
    def masked(x, mask):
        return torch.softmax(x.masked_fill(~mask, float("-inf")), -1).nan_to_num(0.0)
    x = randn(2, 3, 5)
    mask = torch.rand(3, 5) > 0.4
    mask[0, :] = False  # a query with nothing to attend to
    mask[1, :] = True
    c["masked"] = case({"x": x, "mask": mask}, {"out": masked(x, mask)})
    # Attention's shapes: scores [B, H, T, S], a padding mask [B, 1, 1, S] (batch 0 all padding).
    x = randn(2, 3, 4, 12) * 3
    mask = torch.rand(2, 1, 1, 12) > 0.3
    mask[0] = False
    mask[1, ..., 0] = True
    c["masked_padding"] = case({"x": x, "mask": mask}, {"out": masked(x, mask)})
    # A causal mask [T, T] on rows longer than 32 (the kernel's long-row path).
    x = randn(2, 40, 40)
    mask = torch.ones(40, 40, dtype=torch.bool).tril()
    c["masked_causal_long"] = case({"x": x, "mask": mask}, {"out": masked(x, mask)})
    # Backward, from a random upstream gradient (scripts/golden/_common.py: backward_case).
    for name, fn in [("softmax", torch.softmax), ("log_softmax", torch.log_softmax)]:
        c[f"{name}_grad_last_dim"] = backward_case(lambda x: fn(x, -1), {"x": randn(3, 5)}, dim=-1)
        c[f"{name}_grad_middle_dim"] = backward_case(lambda x: fn(x, 1), {"x": randn(2, 3, 4)},
                                                     dim=1)
        x = randn(3, 4)
        x[0, 2:] = float("-inf")  # a causal-mask row
        c[f"{name}_grad_masked_row"] = backward_case(lambda x: fn(x, 1), {"x": x}, dim=1)
    mask = torch.rand(3, 5) > 0.4
    mask[:, 0] = True
    c["masked_grad"] = backward_case(masked, {"x": randn(2, 3, 5), "mask": mask})
    mask = mask.clone()
    mask[1, :] = False  # a query with nothing to attend to: all zeros, and no gradient
    c["masked_grad_empty_row"] = backward_case(masked, {"x": randn(2, 3, 5), "mask": mask})
    return c
