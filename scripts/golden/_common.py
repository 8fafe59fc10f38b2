"""Helpers shared by the golden case modules."""
import torch


def case(inputs, outputs, **params):
    """One golden case: named input tensors, named output tensors, extra parameters."""
    return {"inputs": inputs, "outputs": outputs, "params": params}


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=torch.float64).to(dtype)


def positive(*shape, dtype=torch.float32):
    """Values in [0.5, 2.5): safe for log, sqrt, rsqrt, pow."""
    return (torch.rand(*shape, dtype=torch.float64) * 2 + 0.5).to(dtype)
