"""Golden values for autograd/ops/views.cpp: results of view chains on a known tensor."""
import torch

from golden._common import backward_case, case, randn


def cases():
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    c = {
        "transpose": case({"x": x}, {"out": x.transpose(0, 2).contiguous()}),
        "permute": case({"x": x}, {"out": x.permute(2, 0, 1).contiguous()}),
        "slice_step": case({"x": x}, {"out": x[:, 1:, ::2].contiguous()}),
        "slice_negative": case({"x": x}, {"out": x[:, -2:, -3:-1].contiguous()}),
        "select": case({"x": x}, {"out": x[:, 1].contiguous()}),
        "expand": case({"x": x[:, :1, :]}, {"out": x[:, :1, :].expand(2, 3, 4).contiguous()}),
        "reshape_transposed": case({"x": x}, {"out": x.transpose(1, 2).reshape(2, 12)}),
        "unsqueeze_squeeze": case({"x": x}, {"out": x.unsqueeze(1).squeeze(1).unsqueeze(-1)}),
        "flatten": case({"x": x}, {"out": x.flatten(1)}),
    }
    # Backward of each view (float64, from a random upstream gradient): the gradient lands back
    # on the right elements of x, zeros where the view did not look.
    views = {
        "transpose": lambda x: x.transpose(0, 2),
        "permute": lambda x: x.permute(2, 0, 1),
        "slice_step": lambda x: x[:, 1:, ::2],
        "slice_negative": lambda x: x[:, -2:, -3:-1],
        "narrow": lambda x: x.narrow(2, 1, 2),
        "select": lambda x: x[:, 1],
        "select_negative": lambda x: x.select(-1, -1),
        "expand": lambda x: x[:, :1, :].expand(2, 3, 4),
        "view": lambda x: x.view(4, 6),
        "reshape_transposed": lambda x: x.transpose(1, 2).reshape(2, 12),
        "unsqueeze_squeeze": lambda x: x.unsqueeze(1).squeeze(1).unsqueeze(-1),
        "flatten": lambda x: x.flatten(1),
        "chain": lambda x: x.permute(1, 0, 2)[1:, :, ::3].transpose(0, 1).reshape(-1),
    }
    for name, fn in views.items():
        c[f"{name}_grad"] = backward_case(fn, {"x": randn(2, 3, 4)})
    return c
