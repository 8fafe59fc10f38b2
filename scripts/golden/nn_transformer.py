"""Golden values for nn/feed_forward.cpp, nn/positional_encoding.cpp, nn/transformer_encoder.cpp,
nn/transformer_decoder.cpp and nn/transformer.cpp.

The layers are checked against torch.nn.TransformerEncoderLayer / TransformerDecoderLayer
(batch_first=True, dropout=0, both norm orders); the whole model against a reference assembled
from those layers with the same structure as ours (embedding · √D + positional encoding, a final
LayerNorm only in pre-LN, a generator Linear). Every weight is exported under OUR parameter name,
and the full-model cases export every parameter's gradient as "grad.<name>".

Torch's masks are True = may NOT attend; ours are True = may attend.
"""
import math

import torch
import torch.nn.functional as F

from golden._common import case, randn


def randomize_(module):
    """Random biases and LayerNorm weights, so a parameter mapped to the wrong name shows."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 1:
                p.copy_(randn(*p.shape) * 0.5 + (1.0 if "norm" in name and "weight" in name else 0))


def mha_names(mha, prefix):
    D = mha.embed_dim
    out = {}
    for i, n in enumerate(["w_q", "w_k", "w_v"]):
        out[f"{prefix}{n}.weight"] = (mha.in_proj_weight, slice(i * D, (i + 1) * D))
        out[f"{prefix}{n}.bias"] = (mha.in_proj_bias, slice(i * D, (i + 1) * D))
    out[f"{prefix}w_o.weight"] = (mha.out_proj.weight, slice(None))
    out[f"{prefix}w_o.bias"] = (mha.out_proj.bias, slice(None))
    return out


def layer_names(layer, prefix, decoder):
    """Our parameter name -> (torch tensor, row slice), in OUR registration order."""
    out = mha_names(layer.self_attn, prefix + "self_attn.")
    if decoder:
        out.update(mha_names(layer.multihead_attn, prefix + "cross_attn."))
    for ours, theirs in [("ffn.linear1", layer.linear1), ("ffn.linear2", layer.linear2)]:
        out[f"{prefix}{ours}.weight"] = (theirs.weight, slice(None))
        out[f"{prefix}{ours}.bias"] = (theirs.bias, slice(None))
    norms = ["norm1", "norm2"] + (["norm3"] if decoder else [])
    for n in norms:
        norm = getattr(layer, n)
        out[f"{prefix}{n}.weight"] = (norm.weight, slice(None))
        out[f"{prefix}{n}.bias"] = (norm.bias, slice(None))
    return out


def export(names, grads=False):
    """Inputs {name: weight}; with grads, outputs {"grad." + name: gradient}."""
    weights = {n: t[s].detach().clone() for n, (t, s) in names.items()}
    if not grads:
        return weights, {}
    return weights, {f"grad.{n}": t.grad[s].clone() for n, (t, s) in names.items()}


def sinusoidal_table(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.float()


def padding(lengths, L):
    return torch.arange(L)[None, :] < torch.tensor(lengths)[:, None]  # [B, L], True = real


def ffn_case(activation):
    D, F_ = 6, 10
    l1, l2 = torch.nn.Linear(D, F_), torch.nn.Linear(F_, D)
    x = randn(2, 3, D)
    act = torch.relu if activation == "relu" else F.gelu
    out = l2(act(l1(x)))
    inputs = {"x": x, "linear1.weight": l1.weight, "linear1.bias": l1.bias,
              "linear2.weight": l2.weight, "linear2.bias": l2.bias}
    return case(inputs, {"out": out}, d_model=D, d_ff=F_, activation=activation)


def encoder_layer_case(norm_first, activation):
    D, H, F_ = 8, 2, 16
    layer = torch.nn.TransformerEncoderLayer(D, H, F_, dropout=0.0, activation=activation,
                                             batch_first=True, norm_first=norm_first)
    randomize_(layer)
    layer.train()  # dropout is 0; train mode keeps torch off its inference fast path
    x = randn(2, 5, D).requires_grad_()
    real = padding([5, 3], 5)
    out = layer(x, src_key_padding_mask=~real)
    r = randn(*out.shape)
    (out * r).sum().backward()
    names = layer_names(layer, "", decoder=False)
    weights, grads = export(names, grads=True)
    inputs = {"x": x, "mask": real[:, None, None, :], "r": r, **weights}
    return case(inputs, {"out": out, "grad.x": x.grad, **grads}, d_model=D, heads=H, d_ff=F_,
                norm_first=norm_first, activation=activation, parameters=list(names))


def decoder_layer_case(norm_first, activation):
    D, H, F_ = 8, 2, 16
    layer = torch.nn.TransformerDecoderLayer(D, H, F_, dropout=0.0, activation=activation,
                                             batch_first=True, norm_first=norm_first)
    randomize_(layer)
    layer.train()
    T, S = 4, 6
    x = randn(2, T, D).requires_grad_()
    memory = randn(2, S, D).requires_grad_()
    tgt_real, src_real = padding([4, 3], T), padding([6, 2], S)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    out = layer(x, memory, tgt_mask=~causal, tgt_key_padding_mask=~tgt_real,
                memory_key_padding_mask=~src_real)
    r = randn(*out.shape)
    (out * r).sum().backward()
    names = layer_names(layer, "", decoder=True)
    weights, grads = export(names, grads=True)
    tgt_mask = tgt_real[:, None, None, :] & causal[None, None]
    inputs = {"x": x, "memory": memory, "tgt_mask": tgt_mask,
              "memory_mask": src_real[:, None, None, :], "r": r, **weights}
    return case(inputs, {"out": out, "grad.x": x.grad, "grad.memory": memory.grad, **grads},
                d_model=D, heads=H, d_ff=F_, norm_first=norm_first, activation=activation,
                parameters=list(names))


class Reference(torch.nn.Module):
    """Our Transformer's structure, built from torch.nn layers."""

    def __init__(self, o):
        super().__init__()
        self.o = o
        D = o["d_model"]
        layer_args = dict(d_model=D, nhead=o["heads"], dim_feedforward=o["d_ff"], dropout=0.0,
                          activation=o["activation"], batch_first=True,
                          norm_first=o["norm_first"])
        self.src_embed = torch.nn.Embedding(o["src_vocab"], D, padding_idx=o["pad_idx"])
        self.tgt_embed = torch.nn.Embedding(o["tgt_vocab"], D, padding_idx=o["pad_idx"])
        if o["positional"] == "learned":
            self.src_pos = torch.nn.Parameter(randn(o["max_len"], D))
            self.tgt_pos = torch.nn.Parameter(randn(o["max_len"], D))
        else:
            pe = sinusoidal_table(o["max_len"], D)
            self.src_pos = self.tgt_pos = pe
        self.enc = torch.nn.ModuleList(torch.nn.TransformerEncoderLayer(**layer_args)
                                       for _ in range(o["num_encoder_layers"]))
        self.dec = torch.nn.ModuleList(torch.nn.TransformerDecoderLayer(**layer_args)
                                       for _ in range(o["num_decoder_layers"]))
        if o["norm_first"]:
            self.enc_norm, self.dec_norm = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.generator = torch.nn.Linear(D, o["tgt_vocab"])

    def forward(self, src, tgt):
        pad, D = self.o["pad_idx"], self.o["d_model"]
        S, T = src.shape[1], tgt.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        x = self.src_embed(src) * math.sqrt(D) + self.src_pos[:S]
        for layer in self.enc:
            x = layer(x, src_key_padding_mask=src == pad)
        memory = self.enc_norm(x) if self.o["norm_first"] else x
        y = self.tgt_embed(tgt) * math.sqrt(D) + self.tgt_pos[:T]
        for layer in self.dec:
            y = layer(y, memory, tgt_mask=~causal, tgt_key_padding_mask=tgt == pad,
                      memory_key_padding_mask=src == pad)
        if self.o["norm_first"]:
            y = self.dec_norm(y)
        return self.generator(y)

    def our_names(self):
        """Our parameter name -> (tensor, slice), in our registration order."""
        every = slice(None)
        out = {"src_embed.weight": (self.src_embed.weight, every),
               "tgt_embed.weight": (self.tgt_embed.weight, every)}
        if self.o["positional"] == "learned":
            out["src_pos.weight"] = (self.src_pos, every)
            out["tgt_pos.weight"] = (self.tgt_pos, every)
        for stack, layers, norm in [("encoder", self.enc, "enc_norm"),
                                    ("decoder", self.dec, "dec_norm")]:
            for i, layer in enumerate(layers):
                out.update(layer_names(layer, f"{stack}.layers.{i}.", decoder=stack == "decoder"))
            if self.o["norm_first"]:
                out[f"{stack}.norm.weight"] = (getattr(self, norm).weight, every)
                out[f"{stack}.norm.bias"] = (getattr(self, norm).bias, every)
        out["generator.weight"] = (self.generator.weight, every)
        out["generator.bias"] = (self.generator.bias, every)
        return out


def transformer_case(norm_first, positional, activation):
    o = dict(src_vocab=7, tgt_vocab=6, d_model=8, heads=2, num_encoder_layers=2,
             num_decoder_layers=2, d_ff=16, max_len=12, pad_idx=0, dropout=0.0,
             layer_norm_eps=1e-5, norm_first=norm_first, activation=activation,
             positional=positional)
    model = Reference(o)
    randomize_(model)
    with torch.no_grad():  # keep the padding rows zero, as our constructor does
        model.src_embed.weight[0] = 0
        model.tgt_embed.weight[0] = 0
    model.train()
    src = torch.tensor([[3, 1, 4, 1, 5, 6], [2, 6, 5, 0, 0, 0]])
    tgt_in = torch.tensor([[1, 4, 2, 5, 3], [1, 3, 3, 0, 0]])
    tgt_out = torch.tensor([[4, 2, 5, 3, 2], [3, 3, 2, 0, 0]])
    logits = model(src, tgt_in)
    loss = F.cross_entropy(logits.reshape(-1, o["tgt_vocab"]), tgt_out.reshape(-1),
                           ignore_index=o["pad_idx"])
    loss.backward()
    names = model.our_names()
    weights, grads = export(names, grads=True)
    inputs = {"src": src, "tgt_in": tgt_in, "tgt_out": tgt_out, **weights}
    options = ";".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in o.items())
    return case(inputs, {"logits": logits, "loss": loss, **grads}, options=options,
                parameters=list(names))


def cases():
    c = {}
    c["ffn_relu"] = ffn_case("relu")
    c["ffn_gelu"] = ffn_case("gelu")
    c["sinusoidal_d8"] = case({}, {"pe": sinusoidal_table(20, 8)}, d_model=8, max_len=20)
    c["sinusoidal_d6"] = case({}, {"pe": sinusoidal_table(7, 6)}, d_model=6, max_len=7)
    for norm_first in [False, True]:
        tag = "pre" if norm_first else "post"
        c[f"encoder_layer_{tag}"] = encoder_layer_case(norm_first, "relu")
        c[f"decoder_layer_{tag}"] = decoder_layer_case(norm_first, "relu")
    c["encoder_layer_pre_gelu"] = encoder_layer_case(True, "gelu")
    c["transformer_post_sinusoidal_relu"] = transformer_case(False, "sinusoidal", "relu")
    c["transformer_pre_learned_gelu"] = transformer_case(True, "learned", "gelu")
    return c
