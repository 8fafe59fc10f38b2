#!/usr/bin/env python3
"""PyTorch eager side of the copy-task GPU benchmark: the same model, batch and training step as
`copy_task train` (examples/copy_task), timed the same way, on the same GPU.

    python3 bench/gpu/torch_copy_task.py --preset tiny --steps 300 --json torch_tiny.json

The model is scratchgrad's Transformer built from torch.nn layers (the structure of
scripts/golden/nn_transformer.py's Reference): embeddings scaled by sqrt(d_model) plus sinusoidal
positions, post-LN encoder and decoder layers (ReLU, no dropout), a generator Linear, Xavier
initialisation. One step: a fresh batch made on the host and copied to the GPU, the forward pass
with padding and causal masks, cross-entropy ignoring padding, backward, Adam with the Noam
learning rate. The loss and the token accuracy counts stay on the GPU and are read back every
--sync-every steps (default 25, the trainer's default on a GPU: a read every step would make the
host wait for the GPU and the GPU for the host's next launches). As in the trainer, a step's time
is the wall time of its window (from the first step's batch to the read) over the window's steps;
the median over the steps is reported, as the trainer's median_ms_per_step.
"""
import argparse
import json
import math
import statistics
import sys
import time

PRESETS = {
    # layers, d_model, heads, d_ff, length, batch (examples/copy_task/config.cpp)
    "tiny": dict(layers=2, d_model=32, heads=4, d_ff=64, length=10, batch=80),
    "annotated": dict(layers=2, d_model=512, heads=8, d_ff=2048, length=10, batch=80),
    "medium": dict(layers=4, d_model=256, heads=8, d_ff=1024, length=64, batch=32),
}
VOCAB, PAD, START, WARMUP, BETAS, EPS = 11, 0, 1, 400, (0.9, 0.98), 1e-9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=PRESETS, default="tiny")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sync-every", type=int, default=25,
                        help="read the loss and counts back every N steps (the trainer's default)")
    parser.add_argument("--compile", action="store_true",
                        help='torch.compile(mode="reduce-overhead") over the forward and the loss '
                             "(CUDA graphs through Inductor), with the fused Adam")
    parser.add_argument("--bf16", action="store_true",
                        help="the forward and the loss under torch.autocast(dtype=torch.bfloat16)")
    parser.add_argument("--json", help="write the result here as one JSON object")
    args = parser.parse_args()

    try:
        import torch
    except ImportError as e:
        sys.exit(f"torch_copy_task: PyTorch is not installed here ({e})")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("torch_copy_task: torch.cuda.is_available() is False")
    import torch.nn.functional as F

    p = PRESETS[args.preset]
    D, L, B = p["d_model"], p["length"], p["batch"]
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    # matmuls in full float32, as scratchgrad's cuBLAS calls (and PyTorch's default since 1.12)
    torch.backends.cuda.matmul.allow_tf32 = False

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layer_args = dict(d_model=D, nhead=p["heads"], dim_feedforward=p["d_ff"], dropout=0.0,
                              activation="relu", batch_first=True, norm_first=False)
            self.src_embed = torch.nn.Embedding(VOCAB, D, padding_idx=PAD)
            self.tgt_embed = torch.nn.Embedding(VOCAB, D, padding_idx=PAD)
            max_len = max(L, 16)
            pos = torch.arange(max_len, dtype=torch.float64)[:, None]
            div = torch.exp(torch.arange(0, D, 2, dtype=torch.float64) * (-math.log(10000.0) / D))
            pe = torch.zeros(max_len, D, dtype=torch.float64)
            pe[:, 0::2] = torch.sin(pos * div)
            pe[:, 1::2] = torch.cos(pos * div)
            self.register_buffer("pe", pe.float())
            self.enc = torch.nn.ModuleList(torch.nn.TransformerEncoderLayer(**layer_args)
                                           for _ in range(p["layers"]))
            self.dec = torch.nn.ModuleList(torch.nn.TransformerDecoderLayer(**layer_args)
                                           for _ in range(p["layers"]))
            self.generator = torch.nn.Linear(D, VOCAB)
            for prm in self.parameters():
                if prm.dim() > 1:
                    torch.nn.init.xavier_uniform_(prm)
            with torch.no_grad():
                self.src_embed.weight[PAD] = 0
                self.tgt_embed.weight[PAD] = 0

        def forward(self, src, tgt):
            S, T = src.shape[1], tgt.shape[1]
            src_pad, tgt_pad = src == PAD, tgt == PAD  # True = may NOT attend (torch's convention)
            causal = torch.ones(T, T, dtype=torch.bool, device=src.device).tril()
            x = self.src_embed(src) * math.sqrt(D) + self.pe[:S]
            for layer in self.enc:
                x = layer(x, src_key_padding_mask=src_pad)
            y = self.tgt_embed(tgt) * math.sqrt(D) + self.pe[:T]
            for layer in self.dec:
                y = layer(y, x, tgt_mask=~causal, tgt_key_padding_mask=tgt_pad,
                          memory_key_padding_mask=src_pad)
            return self.generator(y)

    model = Model().to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=BETAS, eps=EPS,
                                 fused=True if args.compile else None)

    def forward_loss(src, tgt_in, tgt_out):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
            logits = model(src, tgt_in)
            flat_logits, flat_labels = logits.reshape(-1, VOCAB), tgt_out.reshape(-1)
            loss = F.cross_entropy(flat_logits, flat_labels, ignore_index=PAD)
        return loss, flat_logits, flat_labels

    if args.compile:
        forward_loss = torch.compile(forward_loss, mode="reduce-overhead")
    gen = torch.Generator().manual_seed(args.seed + 0x1000)

    def noam(step):
        s = max(step, 1)
        return D ** -0.5 * min(s ** -0.5, s * WARMUP ** -1.5)

    times, losses, pending = [], [], []
    window_start = time.perf_counter()
    for step in range(1, args.steps + 1):
        if not pending:
            window_start = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = noam(step)
        seq = torch.randint(1, VOCAB, (B, L), generator=gen)  # on the host, as TaskGenerator
        seq[:, 0] = START
        seq = seq.to(device)
        tgt_in, tgt_out = seq[:, :-1], seq[:, 1:]
        if args.compile:
            torch.compiler.cudagraph_mark_step_begin()  # the last step's graph outputs are done
        loss, flat_logits, flat_labels = forward_loss(seq, tgt_in, tgt_out)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            real = flat_labels != PAD
            right = (flat_logits.argmax(-1) == flat_labels) & real
            pending.append(torch.stack([loss.detach().double(), right.sum().double(),
                                        real.sum().double()]))
        if len(pending) >= args.sync_every or step == args.steps:
            values = torch.stack(pending).tolist()  # the one read back of the window
            window_ms = (time.perf_counter() - window_start) * 1000
            losses.extend(v[0] for v in values)
            times.extend([window_ms / len(values)] * len(values))
            pending = []

    result = {
        "framework": "pytorch",
        "mode": "compile(reduce-overhead)" if args.compile else "eager",
        "bf16": args.bf16,
        "torch": torch.__version__,
        "preset": args.preset,
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else "",
        "steps": args.steps,
        "sync_every": args.sync_every,
        "median_ms_per_step": statistics.median(times),
        "final_loss": losses[-1],
    }
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
