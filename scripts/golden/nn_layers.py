"""Golden values for nn/linear.cpp, nn/embedding.cpp and nn/layer_norm.cpp: torch.nn modules with
random weights, exported by our parameter names ("weight", "bias") so the C++ test copies them in.
Gradients are those of Σ out ⊙ w for a fixed random w (inputs "w")."""
import torch

from golden._common import case, randn


def module_case(module, x, **params):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(randn(*p.shape))  # not the default init: ones/zeros would hide mistakes
    inputs = {name: p.detach().clone() for name, p in module.named_parameters()}
    xin = x.clone().requires_grad_(x.is_floating_point())
    out = module(xin)
    w = randn(*out.shape)
    (out * w).sum().backward()
    outputs = {"out": out.detach()}
    if xin.requires_grad:
        outputs["grad_x"] = xin.grad
    for name, p in module.named_parameters():
        outputs[f"grad_{name}"] = p.grad
    inputs.update({"x": x, "w": w})
    return case(inputs, outputs, **params)


def cases():
    c = {}
    c["linear"] = module_case(torch.nn.Linear(3, 4), randn(2, 5, 3), in_features=3, out_features=4)
    c["linear_no_bias"] = module_case(torch.nn.Linear(5, 2, bias=False), randn(3, 5),
                                      in_features=5, out_features=2)
    # Padding id 0 appears twice, id 7 twice: its gradient rows add up; the padding row gets none.
    ids = torch.tensor([[0, 7, 3], [7, 0, 9]])
    c["embedding"] = module_case(torch.nn.Embedding(10, 4, padding_idx=0), ids, padding_idx=0)
    c["layer_norm"] = module_case(torch.nn.LayerNorm(6), randn(2, 3, 6) * 3 + 1, eps=1e-5)
    c["layer_norm_2d"] = module_case(torch.nn.LayerNorm([3, 4], eps=1e-6), randn(2, 3, 4),
                                     eps=1e-6)
    return c
