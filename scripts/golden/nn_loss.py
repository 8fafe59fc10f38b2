"""Golden values for nn/loss.cpp and autograd/ops/cross_entropy.cpp: cross_entropy (reductions,
ignore_index, label_smoothing, [B, T, V] logits), nll_loss and mse_loss, with the gradients
PyTorch computes for the logits."""
import torch
import torch.nn.functional as F

from golden._common import case, randn


def ce_case(logits, target, ignore_index=-100, label_smoothing=0.0):
    """Class dim last, as our cross_entropy: PyTorch wants it in dim 1, so move it there."""
    x = logits.clone().requires_grad_(True)
    xt = x if x.dim() <= 2 else x.movedim(-1, 1)
    outputs = {}
    for reduction in ("mean", "sum", "none"):
        outputs[reduction] = F.cross_entropy(xt, target, ignore_index=ignore_index,
                                             label_smoothing=label_smoothing, reduction=reduction)
    # d(mean)/dlogits, and for "none" the gradient of Σ loss_i · w_i with a fixed weight w.
    outputs["grad_mean"], = torch.autograd.grad(outputs["mean"], x)
    w = torch.arange(1, target.numel() + 1, dtype=logits.dtype).reshape(target.shape) / 4
    outputs["grad_none"], = torch.autograd.grad((outputs["none"] * w).sum(), x)
    return case({"logits": logits, "target": target, "weight": w}, outputs,
                ignore_index=ignore_index, label_smoothing=label_smoothing)


def cases():
    c = {}
    c["ce_basic"] = ce_case(randn(5, 7), torch.tensor([0, 6, 3, 3, 1]))
    c["ce_ignore_default"] = ce_case(randn(6, 4), torch.tensor([1, -100, 3, 0, -100, 2]))
    c["ce_ignore_pad0"] = ce_case(randn(6, 4), torch.tensor([1, 0, 3, 0, 2, 2]), ignore_index=0)
    c["ce_smoothing"] = ce_case(randn(5, 6), torch.tensor([5, 0, 2, 2, 1]), label_smoothing=0.1)
    c["ce_smoothing_ignore"] = ce_case(randn(6, 5), torch.tensor([4, 0, 1, 0, 3, 2]),
                                       ignore_index=0, label_smoothing=0.25)
    # A language model's logits [B, T, V] with padding: the case the Transformer trains on.
    c["ce_3d"] = ce_case(randn(2, 4, 9), torch.tensor([[3, 8, 0, 0], [1, 2, 7, 0]]),
                         ignore_index=0, label_smoothing=0.1)
    # Logits of 100s: the loss must come from a stable log_softmax, not log(softmax).
    c["ce_large_logits"] = ce_case(randn(3, 4) * 50 + 100, torch.tensor([2, 0, 3]))
    c["ce_float64"] = ce_case(randn(4, 3, dtype=torch.float64), torch.tensor([2, 1, 0, 2]),
                              label_smoothing=0.2)

    lp = torch.log_softmax(randn(5, 4), 1)
    t = torch.tensor([3, -100, 0, 1, 1])
    x = lp.clone().requires_grad_(True)
    mean = F.nll_loss(x, t)
    c["nll"] = case({"log_probs": lp, "target": t},
                    {"mean": mean, "sum": F.nll_loss(lp, t, reduction="sum"),
                     "none": F.nll_loss(lp, t, reduction="none"),
                     "grad_mean": torch.autograd.grad(mean, x)[0]})

    a, b = randn(3, 4), randn(3, 4)
    c["mse"] = case({"a": a, "b": b},
                    {"mean": F.mse_loss(a, b), "sum": F.mse_loss(a, b, reduction="sum"),
                     "none": F.mse_loss(a, b, reduction="none")})
    return c
