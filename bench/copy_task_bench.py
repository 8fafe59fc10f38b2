#!/usr/bin/python3
"""The driver of run_copy_task_bench.sh (which builds what it needs and finds the Pythons): every
side in its own best settings, then side by side in rounds, then one table.

1. Settings. Each side's candidate settings run a short timed run per config, all candidates in
   turn and then all again (one probe each on a busy machine once picked a thread count from a
   neighbour's burst); a candidate's faster probe counts, and the fastest candidate is that side's
   setting for the config, printed and kept in the JSON. PyTorch: 1 or 2 threads, the
   OpenMP wait policy left to its default or PASSIVE (idle threads sleep instead of spinning), and
   (PyTorch >= 2) the attention written out or F.scaled_dot_product_attention. scratchgrad: 1 or 2
   threads.
2. Rounds. Per round, per config, one process per side, A B A B...: a neighbour's burst on this
   shared machine hits both sides alike, and each round gives its own ratio.
3. Extras: torch.compile (inductor) once per config in PyTorch 2's best eager settings, with its
   compile time; the machine's FMA peak (fma_peak) and the GFLOP/s of scratchgrad's matrix
   products (one profiled run per training config) as a share of it.
4. --bf16: mixed precision as two more sides in the same rounds, scratchgrad under
   sg::AutocastGuard (bench_copy_task --bf16) and PyTorch (2, else Debian's) under
   torch.autocast("cpu", dtype=torch.bfloat16) in its own best settings, and their ratios:
   scratchgrad bf16 against PyTorch's autocast, against PyTorch's float32 and against
   scratchgrad's float32 (fma_peak gives the vdpbf16ps peak beside the float32 one).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

CONFIGS = ["tiny", "annotated", "medium", "decode"]
WHAT = {"tiny": "tiny training step", "annotated": "annotated training step",
        "medium": "medium training step", "decode": "tiny greedy decode, 100 sequences"}
TUNE_STEPS = {"tiny": 20, "annotated": 4, "medium": 3, "decode": 5}


def run(cmd, env_changes, json_path):
    """Runs one benchmark process with the environment changed; returns its JSON."""
    env = dict(os.environ)
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    subprocess.run(cmd + ["--json", json_path], env=env, check=True, stdout=subprocess.DEVNULL)
    with open(json_path) as f:
        return json.load(f)


class Side:
    """One program under test and how to run it with a given setting."""

    def __init__(self, name, label, cmd, candidates, steps_flag="--steps"):
        self.name, self.label, self.cmd, self.candidates = name, label, cmd, candidates
        self.best = {}  # config -> setting
        self.tuning = {}  # config -> [(setting, median_ms)]
        self.steps_flag = steps_flag

    def command(self, config, setting, steps=None, extra=()):
        cmd = self.cmd + ["--config", config, "--threads", str(setting["threads"])]
        if setting.get("attention"):
            cmd += ["--attention", setting["attention"]]
        if steps:
            cmd += [self.steps_flag, str(steps)]
        return cmd + list(extra)

    @staticmethod
    def env(setting):
        t = setting["threads"]
        return {"OMP_NUM_THREADS": t, "OPENBLAS_NUM_THREADS": t, "SCRATCHGRAD_NUM_THREADS": t,
                "OMP_WAIT_POLICY": setting.get("wait_policy")}

    def tune(self, config, tmp, passes=2):
        probes = [[] for _ in self.candidates]
        for p in range(passes):  # every candidate in turn, then again
            for i, s in enumerate(self.candidates):
                r = run(self.command(config, s, TUNE_STEPS[config]), self.env(s),
                        f"{tmp}/tune.{self.name}.{config}.{i}.{p}.json")
                probes[i].append(r["median_ms"])
        results = [(s, min(times)) for s, times in zip(self.candidates, probes)]
        self.tuning[config] = results
        self.best[config] = min(results, key=lambda x: x[1])[0]

    def timed(self, config, path, extra=()):
        s = self.best[config]
        return run(self.command(config, s, extra=extra), self.env(s), path)


def describe(setting):
    parts = [f"{setting['threads']} thread{'s' if setting['threads'] > 1 else ''}"]
    if "wait_policy" in setting:
        parts.append(f"OMP_WAIT_POLICY={setting['wait_policy'] or 'default'}")
    if setting.get("attention"):
        parts.append(f"attention {setting['attention']}")
    return ", ".join(parts)


def torch_candidates(python):
    version = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    attentions = ["manual", "sdpa"] if int(version.split(".")[0]) >= 2 else ["manual"]
    return version, [{"threads": t, "wait_policy": w, "attention": a}
                     for t in (2, 1) for w in (None, "PASSIVE") for a in attentions]


def ms(x):
    return "n/a" if x is None else (f"{x:.1f} ms" if x >= 10 else f"{x:.2f} ms")


def spread(ratios):
    return (f"{min(ratios):.2f} / {statistics.median(ratios):.2f} / {max(ratios):.2f}"
            if ratios else "n/a")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--configs", default=" ".join(CONFIGS))
    p.add_argument("--torch2", help="the Python of a PyTorch 2.x environment")
    p.add_argument("--debian", help="Debian's Python with python3-torch 1.13 (an extra column)")
    p.add_argument("--baseline", help="an older build folder: its bench_copy_task as 'before'")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile column")
    p.add_argument("--bf16", action="store_true",
                   help="add scratchgrad under autocast and PyTorch under torch.autocast")
    p.add_argument("--json")
    a = p.parse_args()
    configs = a.configs.split()
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"copy_task_bench: unknown config '{c}' (one of {' '.join(CONFIGS)})")

    sides = [Side("scratchgrad", "scratchgrad", [f"{a.build}/bench/bench_copy_task"],
                  [{"threads": 2}, {"threads": 1}])]
    versions = {}
    if a.torch2:
        versions["pytorch2"], cands = torch_candidates(a.torch2)
        sides.append(Side("pytorch2", f"PyTorch {versions['pytorch2']}",
                          [a.torch2, "bench/torch_copy_task.py"], cands))
    if a.debian:
        versions["debian"], cands = torch_candidates(a.debian)
        sides.append(Side("debian", f"PyTorch {versions['debian']} (Debian)",
                          [a.debian, "bench/torch_copy_task.py"], cands))
    if a.bf16:
        sides.append(Side("sg_bf16", "scratchgrad bf16", [f"{a.build}/bench/bench_copy_task",
                                                          "--bf16"], [{"threads": 2}, {"threads": 1}]))
        torch_side = "pytorch2" if a.torch2 else "debian" if a.debian else None
        if torch_side:  # PyTorch 2's autocast, or Debian's 1.13 without PyTorch 2
            python = a.torch2 or a.debian
            sides.append(Side("autocast", f"PyTorch {versions[torch_side]} autocast",
                              [python, "bench/torch_copy_task.py", "--autocast"],
                              torch_candidates(python)[1]))
    if a.baseline:
        sides.append(Side("baseline", "before", [f"{a.baseline}/bench/bench_copy_task"],
                          [{"threads": 2}]))
    anchor = sides[1] if len(sides) > 1 and sides[1].name in ("pytorch2", "debian") else None

    tmp = tempfile.mkdtemp(prefix="copy_task_bench.")
    log = lambda *x: print(*x, file=sys.stderr, flush=True)
    log(f"copy-task benchmark: {a.repeats} rounds of [{' '.join(configs)}]; load average "
        f"{' '.join(open('/proc/loadavg').read().split()[:3])}")

    peak = None
    fma = f"{a.build}/bench/fma_peak"
    if os.path.exists(fma):
        peak = run([fma, "--threads", "2"], {}, f"{tmp}/fma.json")
        log(f"  FMA peak ({peak['isa']}): {peak['gflops']:.1f} GFLOP/s on 2 threads, "
            f"{peak['gflops_one_thread']:.1f} on 1")

    for c in configs:
        for side in sides:
            if side.name == "baseline":  # scratchgrad's setting: before/after compares the code
                side.best[c] = sides[0].best[c]
                continue
            if len(side.candidates) == 1:
                side.best[c] = side.candidates[0]
                continue
            side.tune(c, tmp)
            log(f"  settings, {c}, {side.label}: " + "; ".join(
                f"{describe(s)}: {ms(t)}" for s, t in side.tuning[c]) +
                f"  -> {describe(side.best[c])}")

    runs = {(s.name, c): [] for s in sides for c in configs}
    for r in range(1, a.repeats + 1):
        for c in configs:
            log(f"  round {r}/{a.repeats}: {c}")
            for side in sides:
                runs[(side.name, c)].append(side.timed(c, f"{tmp}/{side.name}.{c}.{r}.json"))

    compiled = {}
    if anchor and anchor.name == "pytorch2" and not a.no_compile:
        for c in configs:
            log(f"  torch.compile: {c}")
            try:
                compiled[c] = anchor.timed(c, f"{tmp}/compiled.{c}.json", extra=["--compile"])
            except subprocess.CalledProcessError as e:
                log(f"  torch.compile failed for {c} (exit {e.returncode}): column left empty")

    products = {}
    for c in configs:
        if c == "decode":
            continue
        # Enough steps for a steady figure: 3 tiny steps (~7 ms) gave half the GFLOP/s of 300.
        steps = "3" if c in ("annotated", "medium") else "300"
        r = sides[0].timed(c, f"{tmp}/profile.{c}.json", extra=["--profile", "--steps", steps])
        if r.get("product_ms_per_step"):
            products[c] = r["product_gflop_per_step"] / r["product_ms_per_step"] * 1e3

    rows = []
    for c in configs:
        row = {"config": c, "what": WHAT[c]}
        for side in sides:
            rs = runs[(side.name, c)]
            row[side.name] = {
                "label": side.label, "settings": side.best[c],
                "tuning": [{"settings": s, "median_ms": t} for s, t in side.tuning.get(c, [])],
                "median_ms": statistics.median(x["median_ms"] for x in rs),
                "per_round_median_ms": [x["median_ms"] for x in rs],
                "peak_rss_mib": max(x["peak_rss_mib"] for x in rs)}
        sg = row["scratchgrad"]
        for side in sides[1:]:
            other = row[side.name]
            other["ratio"] = sg["median_ms"] / other["median_ms"]
            other["round_ratios"] = [x / y for x, y in zip(sg["per_round_median_ms"],
                                                           other["per_round_median_ms"])]
            other["rss_ratio"] = sg["peak_rss_mib"] / other["peak_rss_mib"]
        if c in compiled:
            row["torch_compile"] = {"median_ms": compiled[c]["median_ms"],
                                    "compile_s": compiled[c].get("compile_s"),
                                    "ratio": sg["median_ms"] / compiled[c]["median_ms"]}
        if "sg_bf16" in row:  # mixed precision: scratchgrad bf16 against the others
            b = row["sg_bf16"]
            for name in ("autocast", anchor.name if anchor else "", "scratchgrad"):
                if name in row:
                    o = row[name]
                    b[f"over_{name}"] = b["median_ms"] / o["median_ms"]
                    b[f"round_ratios_over_{name}"] = [
                        x / y for x, y in zip(b["per_round_median_ms"], o["per_round_median_ms"])]
        if c in products:
            row["products_gflops"] = products[c]
            if peak:
                row["products_share_of_peak"] = products[c] / peak["gflops"]
        rows.append(row)

    head = ["config", "scratchgrad"]
    if anchor:
        head += [anchor.label, "sg / PyTorch", "rounds' ratios (min / median / max)"]
    if compiled:
        head += ["torch.compile", "sg / compiled"]
    bf16_sides = [s for s in sides if s.name in ("sg_bf16", "autocast")]
    extra_sides = [s for s in sides[1:] if s is not anchor and s not in bf16_sides]
    # The columns in the order the rows fill them: the extra sides (a baseline), then bf16's.
    for s in extra_sides:
        head += [s.label, f"sg / {s.name}"]
    for s in bf16_sides:
        head += [s.label]
    if bf16_sides:
        head += ["sg bf16 / PyTorch autocast (rounds)", "sg bf16 / PyTorch f32",
                 "sg bf16 / sg f32"]
    head += ["RSS sg"] + (["RSS PyTorch", "RSS ratio"] if anchor else [])
    if products:
        head += ["sg products GFLOP/s" + (" (of peak)" if peak else "")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        sg = row["scratchgrad"]
        cells = [row["what"], ms(sg["median_ms"])]
        if anchor:
            o = row[anchor.name]
            cells += [ms(o["median_ms"]), f"**{o['ratio']:.2f}x**", spread(o["round_ratios"])]
        if compiled:
            tc = row.get("torch_compile")
            cells += [f"{ms(tc['median_ms'])} (compiled in {tc['compile_s']:.0f} s)"
                      if tc and tc.get("compile_s") else ms(tc and tc["median_ms"]),
                      f"{tc['ratio']:.2f}x" if tc else "n/a"]
        for s in extra_sides:
            o = row[s.name]
            cells += [ms(o["median_ms"]), f"{o['ratio']:.2f}x ({spread(o['round_ratios'])})"]
        for s in bf16_sides:
            cells.append(ms(row[s.name]["median_ms"]))
        if bf16_sides:
            b = row["sg_bf16"]
            cells.append(f"**{b['over_autocast']:.2f}x** ({spread(b['round_ratios_over_autocast'])})"
                         if "over_autocast" in b else "n/a")
            cells += [f"{b[k]:.2f}x" if k in b else "n/a"
                      for k in (f"over_{anchor.name}" if anchor else "", "over_scratchgrad")]
        cells.append(f"{sg['peak_rss_mib']:.0f} MiB")
        if anchor:
            o = row[anchor.name]
            cells += [f"{o['peak_rss_mib']:.0f} MiB", f"{o['rss_ratio']:.2f}x"]
        if products:
            g = row.get("products_gflops")
            cells.append("n/a" if g is None else f"{g:.0f}" + (
                f" ({100 * row['products_share_of_peak']:.0f}%)" if peak else ""))
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines))
    print("\nsettings (the fastest of each side's candidates, per config):")
    for row in rows:
        print(f"  {row['config']}: " + "; ".join(
            f"{s.label}: {describe(row[s.name]['settings'])}" for s in sides))
    if peak:
        print(f"FMA peak ({peak['isa']}, float32, 2 threads): {peak['gflops']:.1f} GFLOP/s")
        if peak.get("bf16_gflops"):
            print(f"vdpbf16ps peak (bfloat16, 2 threads): {peak['bf16_gflops']:.1f} GFLOP/s")

    sample = runs[("scratchgrad", configs[0])][0]
    result = {"benchmark": "copy_task", "date": datetime.date.today().isoformat(),
              "cpu": sample.get("cpu"), "hardware_threads": sample.get("hardware_threads"),
              "blas_core": sample.get("blas_core"), "repeats": a.repeats,
              "load_average": open("/proc/loadavg").read().split()[:3],
              "torch_versions": versions, "fma_peak": peak, "rows": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        print(f"\nJSON: {a.json}")


if __name__ == "__main__":
    main()
