#!/usr/bin/python3
"""The PyTorch side of run_ddp_comparison.sh: data-parallel training of the copy-task Transformer
with torch.nn.parallel.DistributedDataParallel over the gloo backend (PyTorch's CPU one), N
processes on this machine, timed the way `copy_task train --distributed` times itself.

    python=$(bash bench/torch2_venv.sh)
    $python bench/torch_ddp_copy_task.py --config medium --threads 1 --bucket-cap-mb 25 --json out.json

Same model, data and step as bench/torch_copy_task.py (whose Transformer it imports): the global
batch of the preset (medium 32, annotated 80) drawn from one data stream that every rank draws
alike, each rank training on its rows [rank*B/N, (rank+1)*B/N), as the copy task's --distributed
does; cross-entropy over the rank's tokens (every sequence is full length, so each rank's mean
weighs tokens as the global mean does), backward (DDP all-reduces the gradients in buckets of
bucket_cap_mb during it), Adam with the Noam rate, loss.item(). Every rank starts from the same
seed, and DDP broadcasts rank 0's parameters anyway. Each rank uses --threads intra-op threads.

Rank 0 reports the median and minimum of its step times after the warm-up steps, and writes them
with the settings to --json.
"""
import argparse
import json
import os
import platform
import resource
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_copy_task import PAD, PRESETS, VOCAB, MultiheadAttention, Transformer, make_batch, noam_lr  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, args, port):
    torch.set_num_threads(args.threads)
    MultiheadAttention.use_sdpa = args.attention == "sdpa"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.world_size)
    layers, d_model, heads, d_ff, length, batch = PRESETS[args.config]
    if batch % args.world_size:
        raise SystemExit(f"torch_ddp_copy_task: the batch of {batch} does not split over {args.world_size} ranks")
    rows = batch // args.world_size
    torch.manual_seed(0)
    model = Transformer(layers, d_model, heads, d_ff, max(length, 16))
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, bucket_cap_mb=args.bucket_cap_mb,
        gradient_as_bucket_view=args.gradient_as_bucket_view)
    opt = torch.optim.Adam(model.parameters(), lr=noam_lr(d_model, 1), betas=(0.9, 0.98), eps=1e-9)
    data = torch.Generator().manual_seed(0x1000)  # the same stream on every rank
    model.train()
    samples = []
    dist.barrier()
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = noam_lr(d_model, i + 1)
        opt.zero_grad()
        src, tgt = make_batch(data, batch, length)
        src, tgt = src[rank * rows:(rank + 1) * rows], tgt[rank * rows:(rank + 1) * rows]
        logits = ddp(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1), ignore_index=PAD)
        loss.backward()
        opt.step()
        loss.item()
        if i >= args.warmup:
            samples.append((time.perf_counter() - t0) * 1e3)
    gradient_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    if rank == 0:
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        med = statistics.median(samples)
        settings = {"threads_per_rank": args.threads, "bucket_cap_mb": args.bucket_cap_mb,
                    "gradient_as_bucket_view": args.gradient_as_bucket_view,
                    "attention": args.attention, "backend": "gloo", "world_size": args.world_size}
        print(f"pytorch {torch.__version__} DDP {args.config} {settings}: training step, global batch "
              f"{batch} ({rows} per rank): median {med:.2f} ms, min {min(samples):.2f} ms over "
              f"{len(samples)} steps; {gradient_bytes / 1e6:.2f} MB of gradients; rank 0 peak RSS "
              f"{rss:.0f} MiB")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"framework": "pytorch-ddp", "torch": torch.__version__, "config": args.config,
                           "global_batch": batch, "median_ms": med, "min_ms": min(samples),
                           "runs": len(samples), "samples_ms": samples, "peak_rss_mib": rss,
                           "gradient_bytes": gradient_bytes, "cpu": platform.processor(),
                           "settings": settings}, f)
                f.write("\n")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="medium", choices=["tiny", "annotated", "medium"])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    parser.add_argument("--bucket-cap-mb", type=float, default=25)
    parser.add_argument("--no-gradient-as-bucket-view", dest="gradient_as_bucket_view",
                        action="store_false",
                        help="copy gradients into the buckets (PyTorch's default) instead of "
                        "letting .grad view them (the faster setting, used by default here)")
    parser.add_argument("--attention", default="manual", choices=["manual", "sdpa"])
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.steps < 1 or args.world_size < 1 or args.threads < 1:
        raise SystemExit("torch_ddp_copy_task: --steps, --world-size and --threads must be >= 1")
    mp.spawn(worker, args=(args, free_port()), nprocs=args.world_size, join=True)


if __name__ == "__main__":
    main()
