#!/usr/bin/python3
"""An independent reader and writer of the safetensors format, with PyTorch, to check that the
files scratchgrad writes are what other tools expect (and that we read theirs).

It parses the file by hand (struct + json + torch.frombuffer) because Debian ships no
python3-safetensors; the checks are those of the reference reader (safetensors/src/tensor.rs):
header length within the file, a JSON object, known dtypes, offsets that tile the data exactly.

  /usr/bin/python3 scripts/check_safetensors.py read  FILE   # prints the file as JSON
  /usr/bin/python3 scripts/check_safetensors.py write FILE   # writes the reference file below

`read` prints {"metadata": {...}, "tensors": {name: {"dtype", "shape", "values"}}}, values
flattened row-major (floats as repr, so exact). The test tests/nn/test_safetensors_interop.cpp runs both
(and skips when python3-torch is missing: exit status 77).
"""
import json
import os
import struct
import sys

try:
    import torch
except ImportError:
    sys.exit(77)  # "skipped": the C++ test skips itself when python3-torch is missing

DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "BOOL": torch.bool,
          "BF16": torch.bfloat16}
CODES = {v: k for k, v in DTYPES.items()}


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    assert len(data) >= 8, "file shorter than the header length"
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), f"header length {n} exceeds the file"
    assert n % 8 == 0, f"header length {n} is not a multiple of 8 (data not aligned)"
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    assert isinstance(header, dict), "header is not an object"
    buffer = data[8 + n :]
    metadata = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in metadata.values()), "metadata values must be strings"
    covered = 0
    tensors = {}
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        assert set(info) == {"dtype", "shape", "data_offsets"}, f"{name}: fields {set(info)}"
        dtype = DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        assert begin == covered, f"{name}: data starts at {begin}, expected {covered}"
        numel = 1
        for d in info["shape"]:
            numel *= d
        assert end - begin == numel * torch.empty((), dtype=dtype).element_size(), name
        covered = end
        raw = bytearray(buffer[begin:end])  # frombuffer needs a writable, non-empty buffer
        flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        t = flat.reshape(info["shape"])
        tensors[name] = {"dtype": info["dtype"], "shape": list(t.shape), "values": t.flatten().tolist()}
    assert covered == len(buffer), f"tensors cover {covered} of {len(buffer)} data bytes"
    return {"metadata": metadata, "tensors": tensors}


def reference_tensors():
    """What `write` stores: every dtype, a scalar, an empty tensor, a non-contiguous source (bf16
    rounded by PyTorch)."""
    return {
        "f32": torch.tensor([[1.5, -2.25, 3.0], [0.1, -0.0, 1e-30]], dtype=torch.float32),
        "bf16": torch.tensor([[3.14159, -0.0, 0.1], [1e-30, -3e38, float("inf")]]).to(torch.bfloat16),
        "f64": torch.arange(6, dtype=torch.float64).reshape(3, 2).t() / 3,
        "i64": torch.tensor([-(2**63), -1, 0, 2**63 - 1], dtype=torch.int64),
        "mask": torch.tensor([[True, False], [False, True]]),
        "scalar": torch.tensor(7.0, dtype=torch.float64),
        "empty": torch.zeros(0, 3, dtype=torch.float32),
    }


def write_tensors(path, tensors, metadata, names=None):
    """Writes `tensors` ({name: tensor}) with `metadata` ({str: str}), data in the order of `names`
    (default: the dict's order). scripts/capture_torch_step.py writes its captures with it."""
    header, chunks, offset = {"__metadata__": dict(metadata)}, [], 0
    for name in tensors if names is None else names:
        t = tensors[name].detach().contiguous()
        # NumPy has no bfloat16: its bytes go out as int16, unchanged.
        as_numpy = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
        raw = as_numpy.numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": CODES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    temporary = f"{path}.tmp-{os.getpid()}"  # renamed when complete: never a half-written file
    with open(temporary, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    os.replace(temporary, path)


def write(path):
    # Data in reverse name order, so a reader cannot rely on header order matching data order.
    tensors = reference_tensors()
    write_tensors(path, tensors, {"written_by": "torch " + torch.__version__}, sorted(tensors, reverse=True))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("read", "write"):
        sys.exit(__doc__)
    if sys.argv[1] == "read":
        print(json.dumps(read(sys.argv[2])))
    else:
        write(sys.argv[2])
