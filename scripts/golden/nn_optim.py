"""Golden values for nn/optim/: three steps of torch.optim.SGD (plain, momentum with dampening,
nesterov), Adam (default, L2 weight decay, amsgrad) and AdamW on the same two parameters and the
same gradients, plus torch.nn.utils.clip_grad_norm_ for several norm types; then parameter groups:
p0 and p1 in two groups with different lr and weight decay (and betas or momentum), alone and
under a LambdaLR schedule that scales each group's base lr."""
import torch

from golden._common import case, randn

STEPS = 3


def run(make_optimizer, make_schedule=None):
    """Inputs: p0, p1 and their gradients for each step; outputs: the parameters after each step
    (and, with a schedule, each group's lr after it) and the optimizer's state tensors at the
    end."""
    params = [randn(3, 2), randn(4)]
    grads = [[randn(*p.shape) for p in params] for _ in range(STEPS)]
    inputs = {f"p{i}": p.clone() for i, p in enumerate(params)}
    for s in range(STEPS):
        for i, g in enumerate(grads[s]):
            inputs[f"grad{i}_step{s + 1}"] = g
    live = [p.clone().requires_grad_(True) for p in params]
    opt = make_optimizer(live)
    schedule = make_schedule(opt) if make_schedule else None
    outputs = {}
    for s in range(STEPS):
        for p, g in zip(live, grads[s]):
            p.grad = g.clone()
        opt.step()
        if schedule:
            schedule.step()
            outputs[f"lr_step{s + 1}"] = torch.tensor([g["lr"] for g in opt.param_groups],
                                                      dtype=torch.float64)
        for i, p in enumerate(live):
            outputs[f"p{i}_step{s + 1}"] = p.detach().clone()
    for i, p in enumerate(live):
        for name, value in opt.state[p].items():
            if name != "step" and value is not None:
                outputs[f"{name}.{i}"] = value.clone()
    return inputs, outputs


def optim_case(make_optimizer, make_schedule=None, **options):
    inputs, outputs = run(make_optimizer, make_schedule)
    return case(inputs, outputs, **options)


def two_groups(optimizer, group1, **defaults):
    """p0 in a group of the defaults, p1 in a group with the options group1."""
    return lambda p: optimizer([{"params": [p[0]]}, {"params": [p[1]], **group1}], **defaults)


def cases():
    c = {}
    sgd = torch.optim.SGD
    c["sgd"] = optim_case(lambda p: sgd(p, lr=0.1, weight_decay=0.01), lr=0.1, weight_decay=0.01)
    c["sgd_momentum"] = optim_case(lambda p: sgd(p, lr=0.1, momentum=0.9, dampening=0.1),
                                   lr=0.1, momentum=0.9, dampening=0.1)
    c["sgd_nesterov"] = optim_case(
        lambda p: sgd(p, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
        lr=0.05, momentum=0.8, weight_decay=0.1)
    c["adam"] = optim_case(lambda p: torch.optim.Adam(p, lr=0.01), lr=0.01)
    c["adam_l2"] = optim_case(
        lambda p: torch.optim.Adam(p, lr=0.02, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.1),
        lr=0.02, beta1=0.9, beta2=0.98, eps=1e-9, weight_decay=0.1)
    c["adam_amsgrad"] = optim_case(
        lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.5, 0.9), amsgrad=True),
        lr=0.01, beta1=0.5, beta2=0.9)
    c["adamw"] = optim_case(lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
                            lr=0.01, weight_decay=0.1)

    for norm_type, max_norm, label in [(2.0, 1.0, "l2"), (2.0, 100.0, "l2_unclipped"),
                                       (1.0, 2.0, "l1"), (float("inf"), 0.5, "inf"),
                                       (3.0, 1.0, "l3")]:
        grads = [randn(3, 2) * 2, randn(5)]
        params = [torch.zeros_like(g, requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type)
        c[f"clip_{label}"] = case({"grad0": grads[0], "grad1": grads[1]},
                                  {"total_norm": total, "clipped0": params[0].grad,
                                   "clipped1": params[1].grad},
                                  max_norm=max_norm, norm_type=norm_type if norm_type != float("inf")
                                  else "inf")

    c["sgd_groups"] = optim_case(
        two_groups(sgd, {"lr": 0.02, "weight_decay": 0.0, "momentum": 0.5}, lr=0.1, momentum=0.9,
                   weight_decay=0.01))
    c["adam_groups"] = optim_case(
        two_groups(torch.optim.Adam, {"lr": 0.05, "weight_decay": 0.0, "betas": (0.8, 0.9)},
                   lr=0.01, weight_decay=0.1))
    c["adamw_groups"] = optim_case(
        two_groups(torch.optim.AdamW, {"lr": 0.03, "weight_decay": 0.0}, lr=0.01,
                   weight_decay=0.1))
    c["adamw_groups_lambda"] = optim_case(
        two_groups(torch.optim.AdamW, {"lr": 0.03, "weight_decay": 0.0}, lr=0.01,
                   weight_decay=0.1),
        lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (s + 1)))
    return c
