"""Golden values for nn/attention.cpp and nn/multihead_attention.cpp.

scaled_dot_product_attention is written here with plain torch ops; MultiheadAttention is checked
against torch.nn.MultiheadAttention, whose packed in_proj_weight [3D, D] is our w_q, w_k, w_v
stacked, and whose out_proj is our w_o. Weights are exported under OUR parameter names.

Mask conventions differ: ours is True = may attend; torch's attn_mask and key_padding_mask are
True = may NOT attend, so every mask is inverted on the way into torch.
"""
import math

import torch

from golden._common import case, randn


def sdpa_reference(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def sdpa_case(q, k, v, mask=None):
    out, weights = sdpa_reference(q, k, v, mask)
    inputs = {"q": q, "k": k, "v": v}
    if mask is not None:
        inputs["mask"] = mask
    return case(inputs, {"out": out, "weights": weights})


def padding_mask(lengths, S):
    """[B, 1, 1, S], True = a real token (the first `length` positions of each row)."""
    return (torch.arange(S)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril()[None, None]


def make_mha(D, H):
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True, bias=True)
    with torch.no_grad():  # torch starts the biases at 0; random ones catch a mis-mapped bias
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    return mha


def mha_weights(mha):
    """Our names -> tensors: in_proj rows [0, D) are w_q, [D, 2D) w_k, [2D, 3D) w_v."""
    D = mha.embed_dim
    W, b = mha.in_proj_weight, mha.in_proj_bias
    out = {}
    for i, name in enumerate(["w_q", "w_k", "w_v"]):
        out[f"{name}.weight"] = W[i * D:(i + 1) * D]
        out[f"{name}.bias"] = b[i * D:(i + 1) * D]
    out["w_o.weight"] = mha.out_proj.weight
    out["w_o.bias"] = mha.out_proj.bias
    return out


def mha_case(D, H, query, key, key_mask=None, attn_mask=None, grads=False):
    """key_mask: [B, S] True = real; attn_mask: [T, S] True = may attend (our convention)."""
    mha = make_mha(D, H)
    query = query.clone().requires_grad_(grads)
    key = key.clone().requires_grad_(grads)
    out, weights = mha(query, key, key,
                       key_padding_mask=None if key_mask is None else ~key_mask,
                       attn_mask=None if attn_mask is None else ~attn_mask,
                       need_weights=True, average_attn_weights=False)
    inputs = {"query": query, "key": key}
    inputs.update(mha_weights(mha))
    mask = None
    if key_mask is not None:
        mask = key_mask[:, None, None, :]
    if attn_mask is not None:
        am = attn_mask[None, None]
        mask = am if mask is None else mask & am
    if mask is not None:
        inputs["mask"] = mask
    outputs = {"out": out, "weights": weights}
    if grads:
        # L = Σ out ⊙ r: gradients for the inputs and every parameter, by our names.
        r = randn(*out.shape)
        inputs["r"] = r
        (out * r).sum().backward()
        outputs["grad.query"] = query.grad
        outputs["grad.key"] = key.grad
        D = mha.embed_dim
        for i, name in enumerate(["w_q", "w_k", "w_v"]):
            outputs[f"grad.{name}.weight"] = mha.in_proj_weight.grad[i * D:(i + 1) * D]
            outputs[f"grad.{name}.bias"] = mha.in_proj_bias.grad[i * D:(i + 1) * D]
        outputs["grad.w_o.weight"] = mha.out_proj.weight.grad
        outputs["grad.w_o.bias"] = mha.out_proj.bias.grad
    return case(inputs, outputs, d_model=D, heads=H)


def cases():
    c = {}
    # ---- scaled dot-product attention: T != S and Dv != Dh, masks of several broadcast shapes
    c["sdpa_no_mask"] = sdpa_case(randn(2, 2, 3, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 6))
    c["sdpa_padding_mask"] = sdpa_case(randn(2, 2, 3, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 6),
                                       padding_mask([5, 2], 5))
    c["sdpa_causal_mask"] = sdpa_case(randn(2, 2, 4, 4), randn(2, 2, 4, 4), randn(2, 2, 4, 3),
                                      causal_mask(4))
    c["sdpa_padding_and_causal"] = sdpa_case(randn(2, 2, 4, 4), randn(2, 2, 4, 4),
                                             randn(2, 2, 4, 3),
                                             padding_mask([4, 3], 4) & causal_mask(4))
    c["sdpa_3d"] = sdpa_case(randn(3, 4, 8), randn(3, 5, 8), randn(3, 5, 2))
    # ---- MultiheadAttention vs torch.nn.MultiheadAttention ----
    D, H = 8, 2
    x = randn(2, 5, D)
    c["mha_self"] = mha_case(D, H, x, x)
    c["mha_self_padding"] = mha_case(D, H, x, x, key_mask=padding_mask([5, 3], 5)[:, 0, 0])
    c["mha_self_causal"] = mha_case(D, H, x, x, attn_mask=torch.ones(5, 5, dtype=torch.bool).tril())
    c["mha_cross_padding"] = mha_case(D, H, randn(2, 3, D), randn(2, 6, D),
                                      key_mask=padding_mask([6, 4], 6)[:, 0, 0], grads=True)
    c["mha_four_heads_cross"] = mha_case(12, 4, randn(3, 2, 12), randn(3, 7, 12),
                                         key_mask=padding_mask([7, 1, 5], 7)[:, 0, 0])
    return c
