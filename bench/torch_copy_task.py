#!/usr/bin/python3
"""The PyTorch side of run_copy_task_bench.sh: the copy-task Transformer of
examples/copy_task, written with torch, timed the way bench_copy_task times scratchgrad.

    /usr/bin/python3 bench/torch_copy_task.py --config tiny [--json out.json]
    /usr/bin/python3 bench/torch_copy_task.py --config decode

Same model as scratchgrad's sg::nn::Transformer (and The Annotated Transformer): post-LN encoder
and decoder layers, multi-head attention with separate w_q, w_k, w_v, w_o (bias), ReLU
feed-forward, embeddings scaled by sqrt(d_model) plus sinusoidal positions, no dropout, a linear
generator; xavier_uniform_ on every parameter with dim > 1, padding rows of the embeddings zeroed
again. Same data: sequences of `length` tokens drawn uniformly from [1, vocab), the first set to
the start symbol 1; the target is the source (copy). Same step: teacher forcing, cross-entropy
ignoring padding (id 0), backward, Adam (betas 0.9/0.98, eps 1e-9) with the Noam
learning rate, loss.item(); zero_grad first in the step, as on the scratchgrad side.
torch.set_num_threads(2). --autocast runs the forward and the loss (and decoding) under
torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's mixed precision, the counterpart of
bench_copy_task --bf16 (scratchgrad's sg::AutocastGuard). --profile adds three training steps
under torch.profiler after the timed ones and prints each op's own time, the counterpart of
bench_copy_task --profile.

Decoding: greedy decoding of 100 tiny sequences in one batch, recomputing the whole prefix at
every step, as The Annotated Transformer's greedy_decode does (PyTorch has no KV cache in it);
scratchgrad's side decodes with its KV cache. Both produce `length` tokens per sequence.
"""
import argparse
import contextlib
import json
import math
import os
import platform
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {
    # layers, d_model, heads, d_ff, length, batch
    "tiny": (2, 32, 4, 64, 10, 80),
    "annotated": (2, 512, 8, 2048, 10, 80),
    "medium": (4, 256, 8, 1024, 64, 32),
}
VOCAB, PAD, START, WARMUP = 11, 0, 1, 400


class MultiheadAttention(nn.Module):
    use_sdpa = False  # --attention sdpa: F.scaled_dot_product_attention instead of the formula

    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.w_q, self.w_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.w_v, self.w_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def split(self, x):  # [B, L, D] -> [B, H, L, Dh]
        return x.view(x.size(0), x.size(1), self.heads, self.head_dim).transpose(1, 2)

    def forward(self, query, key, value, mask):
        B, T, D = query.shape
        q, k, v = self.split(self.w_q(query)), self.split(self.w_k(key)), self.split(self.w_v(value))
        if MultiheadAttention.use_sdpa:  # PyTorch >= 2.0; a boolean mask: true = may attend
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
            scores = scores.masked_fill(mask == 0, -1e9)  # mask: true = may attend
            out = scores.softmax(-1) @ v
        return self.w_o(out.transpose(1, 2).reshape(B, T, D))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(F.relu(self.linear1(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.self_attn, self.ffn = MultiheadAttention(d_model, heads), FeedForward(d_model, d_ff)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, x, mask):
        h = self.norm1(x + self.self_attn(x, x, x, mask))  # post-LN
        return self.norm2(h + self.ffn(h))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, heads)
        self.cross_attn = MultiheadAttention(d_model, heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))

    def forward(self, x, memory, tgt_mask, src_mask):
        h = self.norm1(x + self.self_attn(x, x, x, tgt_mask))
        h = self.norm2(h + self.cross_attn(h, memory, memory, src_mask))
        return self.norm3(h + self.ffn(h))


class Transformer(nn.Module):
    def __init__(self, layers, d_model, heads, d_ff, max_len):
        super().__init__()
        self.d_model = d_model
        self.src_embed = nn.Embedding(VOCAB, d_model, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(VOCAB, d_model, padding_idx=PAD)
        position = torch.arange(max_len).unsqueeze(1)
        freq = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * freq), torch.cos(position * freq)
        self.register_buffer("pe", pe)
        self.encoder = nn.ModuleList(EncoderLayer(d_model, heads, d_ff) for _ in range(layers))
        self.decoder = nn.ModuleList(DecoderLayer(d_model, heads, d_ff) for _ in range(layers))
        self.generator = nn.Linear(d_model, VOCAB)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        with torch.no_grad():
            self.src_embed.weight[PAD].zero_()
            self.tgt_embed.weight[PAD].zero_()

    def embed(self, embedding, tokens):
        return embedding(tokens) * math.sqrt(self.d_model) + self.pe[: tokens.size(1)]

    def encode(self, src, src_mask):
        h = self.embed(self.src_embed, src)
        for layer in self.encoder:
            h = layer(h, src_mask)
        return h

    def decode(self, tgt, memory, src_mask, tgt_mask):
        h = self.embed(self.tgt_embed, tgt)
        for layer in self.decoder:
            h = layer(h, memory, tgt_mask, src_mask)
        return self.generator(h)

    @staticmethod
    def source_mask(src):  # [B, 1, 1, S]
        return (src != PAD).unsqueeze(1).unsqueeze(2)

    @staticmethod
    def target_mask(tgt):  # [B, 1, T, T]: padding and causal
        T = tgt.size(1)
        causal = torch.ones(T, T, dtype=torch.bool).tril().view(1, 1, T, T)
        return Transformer.source_mask(tgt) & causal

    def forward(self, src, tgt):
        src_mask = self.source_mask(src)
        return self.decode(tgt, self.encode(src, src_mask), src_mask, self.target_mask(tgt))


def make_batch(generator, batch, length):
    src = torch.randint(1, VOCAB, (batch, length), generator=generator)
    src[:, 0] = START
    return src, src.clone()  # copy task: the target is the source


def noam_lr(d_model, step):
    step = max(step, 1)
    return d_model**-0.5 * min(step**-0.5, step * WARMUP**-1.5)


def greedy_decode(model, src, out_len, decode_fn=None):
    """The Annotated Transformer's greedy_decode, for a batch: the whole prefix every step."""
    decode_fn = decode_fn or model.decode
    src_mask = model.source_mask(src)
    memory = model.encode(src, src_mask)
    ys = torch.full((src.size(0), 1), START, dtype=torch.long)
    for _ in range(out_len - 1):
        logits = decode_fn(ys, memory, src_mask, model.target_mask(ys))
        next_token = logits[:, -1, 1:].argmax(-1) + 1  # never padding, as scratchgrad
        ys = torch.cat([ys, next_token.unsqueeze(1)], dim=1)
    return ys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="tiny", choices=["tiny", "annotated", "medium", "decode"])
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=-1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--attention", default="manual", choices=["manual", "sdpa"],
                        help="the formula written out (as The Annotated Transformer) or "
                        "F.scaled_dot_product_attention (PyTorch >= 2.0)")
    parser.add_argument("--compile", action="store_true",
                        help="torch.compile the model (inductor); its compile time is reported "
                        "apart and not in the per-step times")
    parser.add_argument("--autocast", action="store_true",
                        help="forward and loss under torch.autocast('cpu', dtype=torch.bfloat16)")
    parser.add_argument("--profile", action="store_true",
                        help="after the timed steps, a few more under torch.profiler: the share of "
                        "each op's own time (as bench_copy_task --profile shows scratchgrad's)")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.attention == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        raise SystemExit(f"torch_copy_task: --attention sdpa needs PyTorch >= 2.0, not {torch.__version__}")
    if args.compile and not hasattr(torch, "compile"):
        raise SystemExit(f"torch_copy_task: --compile needs PyTorch >= 2.0, not {torch.__version__}")
    MultiheadAttention.use_sdpa = args.attention == "sdpa"
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    big = args.config in ("annotated", "medium")
    steps = args.steps if args.steps > 0 else (10 if big else 40)
    warmup = args.warmup if args.warmup >= 0 else (2 if big else 10)
    layers, d_model, heads, d_ff, length, batch = PRESETS["tiny" if args.config == "decode" else args.config]
    model = Transformer(layers, d_model, heads, d_ff, max(length, 16))
    data = torch.Generator().manual_seed(0x1000)
    samples = []
    # torch.compile: the model's forward (and with it the backward) compiled by inductor. Its
    # first calls compile; they are timed apart (compile_s) and the warm-up steps cover them.
    forward, decode_fn = model, model.decode
    compile_start = time.perf_counter()
    if args.compile:
        forward = torch.compile(model)
        decode_fn = torch.compile(model.decode, dynamic=True)  # the prefix grows every step
        warmup = max(warmup, 3)
    compile_s = None

    def autocast():  # PyTorch's mixed precision around the forward, as its documentation shows
        if args.autocast:
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    if args.config == "decode":
        model.eval()
        src, _ = make_batch(torch.Generator().manual_seed(7), 100, length)
        with torch.no_grad():
            for i in range(warmup + steps):
                t0 = time.perf_counter()
                with autocast():
                    greedy_decode(model, src, length, decode_fn)
                if i == 0 and args.compile:
                    compile_s = time.perf_counter() - compile_start
                if i >= warmup:
                    samples.append((time.perf_counter() - t0) * 1e3)
        what = "greedy decode of 100 tiny sequences (full recompute)"
    else:
        model.train()
        opt = torch.optim.Adam(model.parameters(), lr=noam_lr(d_model, 1), betas=(0.9, 0.98), eps=1e-9)

        def train_step(step):
            for group in opt.param_groups:
                group["lr"] = noam_lr(d_model, step)
            opt.zero_grad()  # first, as on the scratchgrad side (1.13 zeroes the gradients in place)
            src, tgt = make_batch(data, batch, length)
            with autocast():
                logits = forward(src, tgt[:, :-1])
                loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1),
                                       ignore_index=PAD)
            loss.backward()
            opt.step()
            loss.item()

        for i in range(warmup + steps):
            t0 = time.perf_counter()
            train_step(i + 1)
            if i == 0 and args.compile:
                compile_s = time.perf_counter() - compile_start
            if i >= warmup:
                samples.append((time.perf_counter() - t0) * 1e3)
        what = "training step (forward + backward + Adam)"
        if args.profile:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                for i in range(3):
                    train_step(warmup + steps + i + 1)
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB -> MiB
    med = statistics.median(samples)
    settings = {"attention": args.attention, "compile": args.compile, "autocast": args.autocast,
                "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "(default)")}
    print(f"pytorch {torch.__version__} {args.config} {settings}: {what}: median {med:.2f} ms, "
          f"min {min(samples):.2f} ms over {len(samples)} runs; peak RSS {rss:.0f} MiB"
          + (f"; compiled in {compile_s:.1f} s" if compile_s is not None else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"framework": "pytorch", "torch": torch.__version__, "config": args.config,
                       "what": what, "median_ms": med, "min_ms": min(samples), "runs": len(samples),
                       "samples_ms": samples, "peak_rss_mib": rss, "threads": torch.get_num_threads(),
                       "cpu": platform.processor(), "settings": settings,
                       "compile_s": compile_s}, f)
            f.write("\n")


if __name__ == "__main__":
    main()
