"""Golden values for nn/decoder_only_transformer.cpp: a GPT-shaped language model against a
reference assembled from torch.nn.TransformerEncoderLayer (batch_first=True, dropout=0) with a
causal mask, the same structure as ours (embedding · √D + positional encoding, a final LayerNorm
only in pre-LN, a generator Linear). Every weight is exported under OUR parameter name, with the
gradient of the next-token loss (cross-entropy ignoring padding) as "grad.<name>".
"""
import math

import torch
import torch.nn.functional as F

from golden._common import case, randn
from golden.nn_transformer import export, layer_names, randomize_, sinusoidal_table


class Reference(torch.nn.Module):
    def __init__(self, o):
        super().__init__()
        self.o = o
        D = o["d_model"]
        self.embed = torch.nn.Embedding(o["vocab"], D, padding_idx=o["pad_idx"])
        if o["positional"] == "learned":
            self.pos = torch.nn.Parameter(randn(o["max_len"], D))
        else:
            self.pos = sinusoidal_table(o["max_len"], D)
        self.blocks = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(d_model=D, nhead=o["heads"], dim_feedforward=o["d_ff"],
                                             dropout=0.0, activation=o["activation"],
                                             batch_first=True, norm_first=o["norm_first"])
            for _ in range(o["layers"]))
        if o["norm_first"]:
            self.norm = torch.nn.LayerNorm(D)
        self.generator = torch.nn.Linear(D, o["vocab"])

    def forward(self, tokens):
        T = tokens.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool).tril()  # True = may attend (ours)
        x = self.embed(tokens) * math.sqrt(self.o["d_model"]) + self.pos[:T]
        for block in self.blocks:
            x = block(x, src_mask=~causal)  # torch: True = may NOT attend
        if self.o["norm_first"]:
            x = self.norm(x)
        return self.generator(x)

    def our_names(self):
        every = slice(None)
        out = {"embed.weight": (self.embed.weight, every)}
        if self.o["positional"] == "learned":
            out["pos.weight"] = (self.pos, every)
        for i, block in enumerate(self.blocks):
            out.update(layer_names(block, f"blocks.layers.{i}.", decoder=False))
        if self.o["norm_first"]:
            out["blocks.norm.weight"] = (self.norm.weight, every)
            out["blocks.norm.bias"] = (self.norm.bias, every)
        out["generator.weight"] = (self.generator.weight, every)
        out["generator.bias"] = (self.generator.bias, every)
        return out


def language_model_case(norm_first, positional, activation):
    o = dict(vocab=9, d_model=8, heads=2, layers=2, d_ff=16, max_len=10, pad_idx=0,
             norm_first=norm_first, activation=activation, positional=positional)
    model = Reference(o)
    randomize_(model)
    with torch.no_grad():  # the padding row stays zero, as our constructor leaves it
        model.embed.weight[0] = 0
    # <bos>=1 w o r d <eos>=2, then padding: the input is all but the last token, the target all
    # but the first.
    sequences = torch.tensor([[1, 5, 3, 7, 8, 2], [1, 4, 6, 2, 0, 0]])
    tokens, target = sequences[:, :-1], sequences[:, 1:]
    logits = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, o["vocab"]), target.reshape(-1),
                           ignore_index=o["pad_idx"])
    loss.backward()
    names = model.our_names()
    weights, grads = export(names, grads=True)
    return case({"tokens": tokens, "target": target, **weights},
                {"logits": logits, "loss": loss, **grads},
                parameters=list(names), **o)


def cases():
    return {
        "pre_learned_gelu": language_model_case(True, "learned", "gelu"),
        "post_sinusoidal_relu": language_model_case(False, "sinusoidal", "relu"),
    }
