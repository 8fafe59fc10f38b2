#!/usr/bin/python3
"""Writes the golden test files tests/golden/<family>.json from PyTorch.

Run it with Debian's own python3 and python3-torch (apt-get install python3-torch):

    /usr/bin/python3 scripts/make_golden.py            # every family
    /usr/bin/python3 scripts/make_golden.py unary      # just one

Each module scripts/golden/<family>.py defines cases() returning {name: case(...)}; inputs are
made from a fixed seed, outputs computed by PyTorch. The C++ tests read the files through
tests/support/golden.h and never need Python.
"""
import importlib
import json
import math
import pathlib
import sys

import torch

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


def main(argv):
    wanted = argv[1:] or families()
    out_dir = ROOT / "tests" / "golden"
    out_dir.mkdir(parents=True, exist_ok=True)
    for family in wanted:
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
        path = out_dir / f"{family}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=None, separators=(",", ":")) + "\n")
        tmp.replace(path)  # atomic: a failed run never leaves half a file
        print(f"wrote {path.relative_to(ROOT)}: {len(cases)} cases")


if __name__ == "__main__":
    main(sys.argv)
