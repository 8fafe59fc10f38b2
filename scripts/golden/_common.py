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


def backward_case(fn, inputs, **params):
    """A case with PyTorch's gradients as well as its output.

    The floating point inputs become float64 leaves; out = fn(**inputs) is backpropagated from a
    fixed random upstream gradient grad_out (stored as an input), not from out.sum(), whose
    all-ones gradient would hide a transposed or misplaced entry. Outputs: out and grad_<name>
    for each floating point input (their names are in the params as grad_inputs); the C++ side is
    tests/support/golden.h's backward_matches_pytorch.
    """
    leaves = {k: v.detach().double().requires_grad_() if v.is_floating_point() else v
              for k, v in inputs.items()}
    out = fn(**leaves)
    grad_out = torch.randn(out.shape, dtype=torch.float64)
    out.backward(grad_out)
    wanted = [k for k, v in leaves.items() if v.is_floating_point()]
    grads = {f"grad_{k}": leaves[k].grad if leaves[k].grad is not None
             else torch.zeros_like(leaves[k]) for k in wanted}
    stored = {k: v.detach().clone() for k, v in leaves.items()}  # later edits must not leak in
    return case({**stored, "grad_out": grad_out}, {"out": out.detach(), **grads},
                grad_inputs=wanted, **params)
