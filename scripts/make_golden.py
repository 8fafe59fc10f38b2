#!/usr/bin/python3
"""Writes the golden test files tests/golden/<family>.json from PyTorch.

Run it with Debian's own python3 and python3-torch (apt-get install python3-torch):

    /usr/bin/python3 scripts/make_golden.py            # every family
    /usr/bin/python3 scripts/make_golden.py unary      # just one
    /usr/bin/python3 scripts/make_golden.py --check    # regenerate in memory and compare

Each module scripts/golden/<family>.py defines cases() returning {name: case(...)}; inputs are
made from a fixed seed, outputs computed by PyTorch. The C++ tests read the files through
tests/support/golden.h and never need Python.

--check (scripts/check_golden.sh, in CI) wants the committed files byte for byte: the same
PyTorch on the same kind of CPU gives the same bits. PyTorch's CPU kernels differ with the
vector instructions they run (its scalar "default" kernels change the last bits of 9 of the 14
files), so the kernels are pinned to AVX2, what PyTorch 1.13 picks on any x86-64 CPU that has
it, OpenBLAS's products to its Haswell kernels, and everything to one thread. No float tolerance would do instead: some golden gradients are zero in
exact arithmetic (a key projection's bias), pure rounding noise that changes completely.
"""
import importlib
import json
import math
import os
import pathlib
import sys

os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")  # read when torch loads: set it first
# Debian's PyTorch multiplies through OpenBLAS, whose kernel family (picked for the CPU, or named
# by OPENBLAS_CORETYPE, which some machines set) changes the last bits too: pinned to Haswell's,
# the AVX2 family every x86-64 CPU with AVX2 runs (SkylakeX's would stop a CPU without AVX-512).
os.environ["OPENBLAS_CORETYPE"] = "Haswell"
import torch  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
FORMAT_VERSION = 1
sys.path.insert(0, str(ROOT / "scripts"))


def encode_value(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v  # json writes repr(), which round-trips float64 exactly


def encode_tensor(t):
    t = t.detach().cpu()
    dtype = {torch.float32: "float32", torch.float64: "float64", torch.int64: "int64",
             torch.bool: "bool"}[t.dtype]
    values = t.reshape(-1).tolist()
    return {"shape": list(t.shape), "dtype": dtype, "data": [encode_value(v) for v in values]}


def encode_case(case):
    return {
        "inputs": {k: encode_tensor(v) for k, v in case["inputs"].items()},
        "outputs": {k: encode_tensor(v) for k, v in case["outputs"].items()},
        "params": case.get("params", {}),
    }


def families():
    return sorted(p.stem for p in (ROOT / "scripts" / "golden").glob("*.py")
                  if not p.stem.startswith("_"))


def generate(family):
    """The text of tests/golden/<family>.json."""
    module = importlib.import_module(f"golden.{family}")
    torch.manual_seed(0)
    cases = module.cases()
    doc = {
        "format_version": FORMAT_VERSION,
        "torch_version": torch.__version__,
        "generated_by": "scripts/make_golden.py",
        "family": family,
        "cases": {name: encode_case(c) for name, c in sorted(cases.items())},
    }
    return json.dumps(doc, indent=None, separators=(",", ":")) + "\n", len(cases)


def differences(committed, fresh):
    """Readable differences between two golden documents (parsed JSON), at most a few."""
    out = []
    for key in ("format_version", "torch_version"):
        if committed.get(key) != fresh.get(key):
            out.append(f"{key}: committed {committed.get(key)!r}, this PyTorch gives "
                       f"{fresh.get(key)!r}")
    old, new = committed.get("cases", {}), fresh.get("cases", {})
    out += [f"case {name}: not generated any more" for name in sorted(set(old) - set(new))]
    out += [f"case {name}: new, not committed" for name in sorted(set(new) - set(old))]
    for name in sorted(set(old) & set(new)):
        for section in ("inputs", "outputs", "params"):
            a, b = old[name].get(section, {}), new[name].get(section, {})
            for key in sorted(set(a) | set(b)):
                if a.get(key) == b.get(key):
                    continue
                detail = ""
                if isinstance(a.get(key), dict) and isinstance(b.get(key), dict) and \
                        a[key].get("shape") == b[key].get("shape"):
                    pairs = list(zip(a[key]["data"], b[key]["data"]))
                    bad = [(x, y) for x, y in pairs if x != y]
                    detail = f": {len(bad)} of {len(pairs)} values differ, first {bad[0]}"
                out.append(f"case {name}: {section} {key} differs{detail}")
    return out


def cpu_capability():
    """PyTorch's line naming the vector instructions its CPU kernels use."""
    lines = [ln.strip() for ln in torch.__config__.show().splitlines() if "CPU capability" in ln]
    return lines[0].lstrip("- ") if lines else "CPU capability unknown"


def check(wanted):
    """Regenerates in memory and compares with the committed files; returns the exit status."""
    failed = 0
    for family in wanted:
        path = ROOT / "tests" / "golden" / f"{family}.json"
        text, count = generate(family)
        committed = path.read_text() if path.exists() else None
        if committed == text:
            print(f"{path.relative_to(ROOT)}: {count} cases reproduced exactly")
            continue
        failed += 1
        print(f"{path.relative_to(ROOT)}: differs from what scripts/make_golden.py generates now")
        found = differences(json.loads(committed), json.loads(text)) if committed else ["missing"]
        for line in found[:10] or ["(formatting only)"]:
            print(f"  {line}")
        if len(found) > 10:
            print(f"  ... and {len(found) - 10} more")
    if failed:
        print(f"check_golden: {failed} of {len(wanted)} files differ (PyTorch {torch.__version__}, "
              f"{cpu_capability()}). If you changed a case "
              f"on purpose, run /usr/bin/python3 scripts/make_golden.py and commit the files.")
    return 1 if failed else 0


def main(argv):
    args = argv[1:]
    checking = "--check" in args
    wanted = [a for a in args if a != "--check"] or families()
    torch.set_num_threads(1)
    if checking:
        return check(wanted)
    out_dir = ROOT / "tests" / "golden"
    out_dir.mkdir(parents=True, exist_ok=True)
    for family in wanted:
        text, count = generate(family)
        path = out_dir / f"{family}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(text)
        tmp.replace(path)  # atomic: a failed run never leaves half a file
        print(f"wrote {path.relative_to(ROOT)}: {count} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
