"""Golden values for autograd/ops/softmax.cpp: softmax and log_softmax along several dims,
large logits (stability), and rows with -inf (masked attention scores)."""
import torch

from golden._common import case, randn


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
    return c
