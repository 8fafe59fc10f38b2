"""Golden values for gradients of gradients (autograd/grad.h, create_graph): Hessian-vector
products of a small MLP and of one torch.nn.TransformerEncoderLayer, and a gradient penalty,
each from torch.autograd.grad(..., create_graph=True).

Hessian-vector products (Pearlmutter): Hv = d/dθ (∇_θ L · v), one more backward through the graph
of the gradient, never the Hessian itself. The gradient penalty (WGAN-GP) is
P = mean_i (‖∂D(x)/∂x_i‖ - 1)², whose gradient with respect to D's parameters goes through ∂D/∂x.
Weights are exported under OUR parameter names (as in nn_transformer.py).
"""
import torch

from golden._common import case, randn
from golden.nn_transformer import layer_names, padding, randomize_


def mlp():
    """Linear(4, 8) -> tanh -> Linear(8, 3): our Sequential of Linear, Tanh, Linear ("0.", "2.")."""
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def mlp_names(net):
    return {"0.weight": net[0].weight, "0.bias": net[0].bias,
            "2.weight": net[2].weight, "2.bias": net[2].bias}


def hvp(loss, params, vs):
    grads = torch.autograd.grad(loss, params, create_graph=True)
    dot = sum((g * v).sum() for g, v in zip(grads, vs))
    return grads, torch.autograd.grad(dot, params)


def mlp_hvp_case():
    net = mlp()
    names = mlp_names(net)
    x, t = randn(5, 4), randn(5, 3)
    params = list(names.values())
    vs = [randn(*p.shape) for p in params]
    loss = ((net(x) - t) ** 2).mean()
    grads, hv = hvp(loss, params, vs)
    inputs = {"x": x, "t": t, **{n: p.detach().clone() for n, p in names.items()},
              **{f"v.{n}": v for n, v in zip(names, vs)}}
    outputs = {"loss": loss, **{f"grad.{n}": g for n, g in zip(names, grads)},
               **{f"hvp.{n}": h for n, h in zip(names, hv)}}
    return case(inputs, outputs, parameters=list(names))


def encoder_layer_hvp_case():
    D, H, F_ = 8, 2, 16
    layer = torch.nn.TransformerEncoderLayer(D, H, F_, dropout=0.0, activation="relu",
                                             batch_first=True, norm_first=False)
    randomize_(layer)
    layer.train()  # dropout is 0; train mode keeps torch off its inference fast path
    x = randn(2, 5, D).requires_grad_()
    real = padding([5, 3], 5)
    r = randn(2, 5, D)
    names = layer_names(layer, "", decoder=False)
    # Our parameters are torch's (slices of in_proj for q, k, v): differentiate the full tensors,
    # and give each slice its own v, so that the product is per our parameter.
    torch_params = [layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias,
                    layer.self_attn.out_proj.weight, layer.self_attn.out_proj.bias,
                    layer.linear1.weight, layer.linear1.bias, layer.linear2.weight,
                    layer.linear2.bias, layer.norm1.weight, layer.norm1.bias, layer.norm2.weight,
                    layer.norm2.bias]
    v_of = {n: randn(*t[s].shape) for n, (t, s) in names.items()}
    v_x = randn(*x.shape)
    full_v = []
    for p in torch_params:
        v = torch.zeros_like(p)
        for n, (t, s) in names.items():
            if t is p:
                v[s] = v_of[n]
        full_v.append(v)
    loss = (layer(x, src_key_padding_mask=~real) * r).sum()
    grads = torch.autograd.grad(loss, torch_params + [x], create_graph=True)
    dot = sum((g * v).sum() for g, v in zip(grads, full_v + [v_x]))
    wrt = torch_params + [x]
    # A gradient that is constant (the last bias's: Σ r) has no graph: its second derivative is 0.
    second = torch.autograd.grad(dot, wrt, allow_unused=True)
    hv = {id(p): torch.zeros_like(p) if h is None else h for p, h in zip(wrt, second)}
    inputs = {"x": x.detach().clone(), "mask": real[:, None, None, :], "r": r, "v.x": v_x,
              **{n: t[s].detach().clone() for n, (t, s) in names.items()},
              **{f"v.{n}": v for n, v in v_of.items()}}
    outputs = {"hvp.x": hv[id(x)], **{f"hvp.{n}": hv[id(t)][s] for n, (t, s) in names.items()}}
    return case(inputs, outputs, d_model=D, heads=H, d_ff=F_, norm_first=False,
                activation="relu", parameters=list(names))


def gradient_penalty_case():
    torch.manual_seed(2)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    names = mlp_names(net)
    x = randn(6, 4).requires_grad_()
    (dx,) = torch.autograd.grad(net(x).sum(), x, create_graph=True)
    penalty = ((dx.pow(2).sum(1).sqrt() - 1.0) ** 2).mean()
    wrt = list(names.values()) + [x]
    # The last bias does not change ∂D/∂x: unused (None), exported as zeros.
    grads = [torch.zeros_like(p) if g is None else g
             for p, g in zip(wrt, torch.autograd.grad(penalty, wrt, allow_unused=True))]
    inputs = {"x": x.detach().clone(), **{n: p.detach().clone() for n, p in names.items()}}
    outputs = {"penalty": penalty, "dx": dx, "grad.x": grads[-1],
               **{f"grad.{n}": g for n, g in zip(names, grads)}}
    return case(inputs, outputs, parameters=list(names))


def cases():
    return {"mlp_hvp": mlp_hvp_case(), "encoder_layer_hvp": encoder_layer_hvp_case(),
            "gradient_penalty": gradient_penalty_case()}
