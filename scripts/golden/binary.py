"""Golden values for autograd/ops/binary.cpp: broadcasting, promotion, comparisons."""
import torch

from golden._common import case, positive, randn


def cases():
    a = randn(3, 1, 4)
    b = randn(5, 1)
    p = positive(2, 3)
    q = randn(2, 3)
    i = torch.tensor([[1, -2, 3], [4, 5, -6]])
    ties_a = torch.tensor([1.0, 2.0, 3.0, 2.0])
    ties_b = torch.tensor([2.0, 2.0, 1.0, 2.0])
    out = {
        "add_broadcast": case({"a": a, "b": b}, {"out": a + b}),
        "sub_broadcast": case({"a": a, "b": b}, {"out": a - b}),
        "mul_broadcast": case({"a": a, "b": b}, {"out": a * b}),
        "div_broadcast": case({"a": a, "b": b}, {"out": a / b}),
        "add_alpha": case({"a": q, "b": p}, {"out": torch.add(q, p, alpha=2.5)}, alpha=2.5),
        "pow_tensor": case({"a": p, "b": q}, {"out": torch.pow(p, q)}),
        "maximum": case({"a": ties_a, "b": ties_b}, {"out": torch.maximum(ties_a, ties_b)}),
        "minimum": case({"a": ties_a, "b": ties_b}, {"out": torch.minimum(ties_a, ties_b)}),
        "add_int_float": case({"a": i, "b": q}, {"out": i + q}),
        "div_int_int": case({"a": i, "b": torch.tensor([2, 4, -5])}, {"out": i / torch.tensor([2, 4, -5])}),
        "add_float64_float32": case({"a": q.double(), "b": p}, {"out": q.double() + p}),
        "lt": case({"a": a, "b": b}, {"out": a < b}),
        "eq_int": case({"a": i, "b": torch.tensor([1, 5, 3])}, {"out": i == torch.tensor([1, 5, 3])}),
    }
    # Gradients: ties in maximum/minimum are split evenly; broadcast inputs get summed gradients.
    grad_inputs = {
        "maximum": (ties_a.double(), ties_b.double()),
        "minimum": (ties_a.double(), ties_b.double()),
        "mul": (randn(3, 1, 4, dtype=torch.float64), randn(5, 1, dtype=torch.float64)),
        "div": (randn(3, 1, 4, dtype=torch.float64), positive(5, 1, dtype=torch.float64)),
    }
    for name, (ga, gb) in grad_inputs.items():
        ga, gb = ga.requires_grad_(), gb.requires_grad_()
        y = getattr(torch, name)(ga, gb)
        y.sum().backward()
        out[name + "_grad"] = case({"a": ga.detach(), "b": gb.detach()},
                                   {"out": y.detach(), "grad_a": ga.grad, "grad_b": gb.grad})
    return out
