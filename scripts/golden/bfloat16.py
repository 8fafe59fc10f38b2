"""Golden values for the bfloat16 dtype (autograd/bfloat16.cpp) and autocast (autograd/autocast.h).

Rounding: float32 values, special ones and random ones over many magnitudes, converted by
tensor.to(torch.bfloat16) (stored back as float32: every bfloat16 is a float32 value).

Products under torch.autocast("cpu", dtype=torch.bfloat16): PyTorch rounds the operands to
bfloat16 and returns a bfloat16 result (scratchgrad keeps the float32 sum; PyTorch 1.13's CPU
kernels also round the partial sums, so its error is several bfloat16 steps). The "exact_" outputs
are the float64 products of the operands as PyTorch rounds them: what a float32 accumulation of
the same bfloat16 inputs approximates to float32 rounding, the tight check. The gradients come
back float32 for float32 leaves, as ours do; the backward products read the gradient rounded too.
"""
import torch
import torch.nn.functional as F

from golden._common import case, randn


def rounded(x):
    return x.to(torch.bfloat16).to(torch.float32)


def special_values():
    bits = [
        0x3F800000, 0x40490FDB, 0x3DCCCCCD,  # 1, pi, 0.1
        0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF,  # ties and their neighbours
        0x3FFFFFFF, 0x7F7F7FFF, 0x7F7FFFFF,  # a carry into the exponent; the top of the range
        0x7F800000, 0xFF800000, 0x80000000, 0x00000000,  # inf, -inf, -0, 0
        0x00000001, 0x00018000, 0x00800000, 0x007FFFFF,  # denormals; the smallest normal
        0xC0490FDB, 0x7FC00000,  # -pi, NaN
    ]
    return torch.tensor(bits, dtype=torch.int64).to(torch.int32).view(torch.float32)


def autocast_product(a, b):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = a @ b
    exact = rounded(a).double() @ rounded(b).double()
    return case({"a": a, "b": b}, {"out": out.float(), "exact": exact})


def autocast_linear(x, w, bias, grad_out):
    x, w, bias = (t.clone().requires_grad_() for t in (x, w, bias))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = F.linear(x, w, bias)
    out.float().backward(grad_out)
    grads = {"grad_x": x.grad, "grad_w": w.grad, "grad_bias": bias.grad}
    x, w, bias = x.detach(), w.detach(), bias.detach()
    rx, rw, rg = (rounded(t).double() for t in (x, w, grad_out))
    rows_x, rows_g = rx.flatten(0, -2), rg.flatten(0, -2)
    exact = {"exact_out": rx @ rw.t() + bias.double(), "exact_grad_x": rg @ rw,
             "exact_grad_w": rows_g.t() @ rows_x,
             "exact_grad_bias": grad_out.double().flatten(0, -2).sum(0)}  # not a product
    return case({"x": x, "w": w, "bias": bias, "grad_out": grad_out},
                {"out": out.detach().float(), **grads, **exact})


def cases():
    c = {}
    x = special_values()
    c["round_special"] = case({"x": x}, {"out": rounded(x)})
    scales = torch.pow(10.0, torch.randint(-30, 30, (512,)).double()).float()
    x = randn(512) * scales
    c["round_random"] = case({"x": x}, {"out": rounded(x)})
    c["matmul_autocast"] = autocast_product(randn(5, 24), randn(24, 7))
    c["matmul_autocast_batched"] = autocast_product(randn(2, 3, 33), randn(2, 33, 4))
    c["linear_autocast"] = autocast_linear(randn(2, 3, 16), randn(8, 16), randn(8),
                                           randn(2, 3, 8))
    return c
