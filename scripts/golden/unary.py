"""Golden values for autograd/ops/unary.cpp."""
import torch
import torch.nn.functional as F

from golden._common import case, positive, randn


def cases():
    x = randn(3, 5)
    p = positive(3, 5)
    wide = torch.linspace(-30, 30, 13, dtype=torch.float32)  # tails of sigmoid/tanh/gelu
    out = {
        "neg": case({"x": x}, {"out": -x}),
        "exp": case({"x": x}, {"out": torch.exp(x)}),
        "log": case({"x": p}, {"out": torch.log(p)}),
        "sqrt": case({"x": p}, {"out": torch.sqrt(p)}),
        "rsqrt": case({"x": p}, {"out": torch.rsqrt(p)}),
        "abs": case({"x": x}, {"out": torch.abs(x)}),
        "sign": case({"x": x}, {"out": torch.sign(x)}),
        "tanh": case({"x": wide}, {"out": torch.tanh(wide)}),
        "sigmoid": case({"x": wide}, {"out": torch.sigmoid(wide)}),
        "relu": case({"x": x}, {"out": torch.relu(x)}),
        "gelu": case({"x": wide}, {"out": F.gelu(wide)}),
        "gelu_tanh": case({"x": wide}, {"out": F.gelu(wide, approximate="tanh")}),
        "pow_2_5": case({"x": p}, {"out": torch.pow(p, 2.5)}, exponent=2.5),
        "pow_neg1": case({"x": p}, {"out": torch.pow(p, -1.0)}, exponent=-1.0),
        "square": case({"x": x}, {"out": torch.square(x)}),
        "clamp": case({"x": x}, {"out": torch.clamp(x, -0.5, 0.7)}, min=-0.5, max=0.7),
        "clamp_min": case({"x": x}, {"out": torch.clamp(x, min=0.1)}, min=0.1),
        "exp_int": case({"x": torch.arange(-3, 4)}, {"out": torch.exp(torch.arange(-3, 4))}),
    }
    # Gradients too, for ops whose backward is easy to get subtly wrong.
    for name, fn in [("gelu", F.gelu), ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh")),
                     ("sigmoid", torch.sigmoid), ("tanh", torch.tanh)]:
        xg = randn(4, 3, dtype=torch.float64).requires_grad_()
        y = fn(xg)
        y.sum().backward()
        out[name + "_grad"] = case({"x": xg.detach()}, {"out": y.detach(), "grad": xg.grad})
    return out
