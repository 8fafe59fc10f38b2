"""Golden values for autograd/ops/views.cpp: results of view chains on a known tensor."""
import torch

from golden._common import case


def cases():
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    return {
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
