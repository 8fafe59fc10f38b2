#!/usr/bin/python3
"""The PyTorch side of the first-divergent-op finder (scripts/find_divergence.sh): one training
step of a copy_task checkpoint in PyTorch, every module's output, every output's gradient, every
parameter's gradient and the loss recorded under scratchgrad's names into a safetensors file, for
`copy_task compare` to set against what `copy_task capture` recorded.

    /usr/bin/python3 scripts/capture_torch_step.py model.safetensors batch.safetensors torch.safetensors

The model is bench/torch_copy_task.py's Transformer (the copy-task Transformer written with torch),
imported, not copied, with the checkpoint's weights, in float64. The step is copy_task capture's:
teacher forcing on the batch {"src", "tgt"}, cross-entropy ignoring padding, backward. Outputs are
recorded with forward hooks and their gradients with retain_grad(), named and ordered as
sg::nn::ActivationCapture does (nn/activation_capture.h): outputs in the order their forwards
finish, a module's second call as "name#2", then "loss", then backward from the last output to the
first, "grad_output.<module>" and, after a module's first call, "grad.<parameter>".

Where the two models are built differently, the names are mapped here:
  encoder.0 (a ModuleList item)         -> encoder.layers.0 (our Encoder holds a ModuleList "layers")
  embed(): embedding * sqrt(d) + pe     -> our modules "positional" and "dropout" (p = 0: the same
                                           tensor), once for the source and once ("#2") the target
  the last encoder/decoder layer        -> also "encoder"/"decoder" (post-LN: no final norm)
  self_attn/cross_attn/ffn output       -> also the layer's dropout1/2/3 (p = 0)
  the input of ffn.linear2              -> ffn.activation and ffn.dropout
Exit status 77 (skipped) when python3-torch is missing; 2 for a checkpoint this model cannot be.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "scripts"), os.path.join(ROOT, "bench")]

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("capture_torch_step: python3-torch is not installed", file=sys.stderr)
    sys.exit(77)

import check_safetensors  # noqa: E402  (the safetensors reader and writer, with torch)
import torch_copy_task  # noqa: E402  (the PyTorch copy-task Transformer)

PAD = torch_copy_task.PAD


def load(path):
    f = check_safetensors.read(path)
    tensors = {
        name: torch.tensor(v["values"], dtype=check_safetensors.DTYPES[v["dtype"]]).reshape(v["shape"])
        for name, v in f["tensors"].items()
    }
    return tensors, f["metadata"]


def our_name(torch_name):
    """bench/torch_copy_task.py's module and parameter names -> scratchgrad's."""
    if torch_name == "pe":
        return "positional.pe"
    return re.sub(r"^(encoder|decoder)\.(\d+)", r"\1.layers.\2", torch_name)


def build_model(checkpoint):
    tensors, metadata = load(checkpoint)
    config = {k[len("config."):]: v for k, v in metadata.items() if k.startswith("config.")}
    if metadata.get("format") != "scratchgrad-copy-task-1":
        print(f"capture_torch_step: {checkpoint} is not a copy_task checkpoint", file=sys.stderr)
        sys.exit(2)
    if config["norm_first"] != "false" or config["positional"] != "sinusoidal":
        print(f"capture_torch_step: {checkpoint}: the PyTorch model is post-LN with sinusoidal "
              f"positions; this checkpoint has norm_first={config['norm_first']}, "
              f"positional={config['positional']}", file=sys.stderr)
        sys.exit(2)
    # The PyTorch model sizes both vocabularies and the generator with this module constant.
    torch_copy_task.VOCAB = int(config["vocab"])
    model = torch_copy_task.Transformer(
        int(config["layers"]), int(config["d_model"]), int(config["heads"]), int(config["d_ff"]),
        max_len=tensors["positional.pe"].shape[0]).double()
    state = model.state_dict()
    ours = {name for name in tensors if not name.startswith("optimizer.")}
    wanted = {our_name(name) for name in state}
    if ours != wanted:
        print(f"capture_torch_step: the checkpoint's tensors do not map onto the PyTorch model: "
              f"only in the checkpoint {sorted(ours - wanted)}, only in PyTorch "
              f"{sorted(wanted - ours)}", file=sys.stderr)
        sys.exit(2)
    model.load_state_dict({name: tensors[our_name(name)].double() for name in state})
    return model, config


class Recorder:
    """ActivationCapture's records: (name, base name, tensor, module or None, first call)."""

    def __init__(self):
        self.records, self.calls = [], {}

    def record(self, base, tensor, module=None):
        n = self.calls.get(base, 0)
        self.calls[base] = n + 1
        if tensor.requires_grad:
            tensor.retain_grad()
        self.records.append((base if n == 0 else f"{base}#{n + 1}", base, tensor, module, n == 0))


def instrument(model, layers, recorder):
    # Output aliases: modules of ours that the PyTorch model has no module for (dropout p = 0).
    dropout_after = {("encoder", "self_attn"): "dropout1", ("encoder", "ffn"): "dropout2",
                     ("decoder", "self_attn"): "dropout1", ("decoder", "cross_attn"): "dropout2",
                     ("decoder", "ffn"): "dropout3"}

    def after_forward(name, module, output):
        recorder.record(name, output, module)
        m = re.fullmatch(r"(encoder|decoder)\.layers\.(\d+)\.(self_attn|cross_attn|ffn)", name)
        if m:
            recorder.record(f"{m[1]}.layers.{m[2]}.{dropout_after[(m[1], m[3])]}", output)
        for stack in ("encoder", "decoder"):
            if name == f"{stack}.layers.{layers - 1}":
                recorder.record(stack, output)

    for torch_name, module in model.named_modules():
        if torch_name == "" or isinstance(module, torch.nn.ModuleList):
            continue  # the model itself, and lists that are never called
        name = our_name(torch_name)
        module.register_forward_hook(
            lambda mod, inputs, output, name=name: after_forward(name, mod, output))
        if name.endswith(".ffn.linear2"):
            ffn = name[: -len(".linear2")]

            def before_linear2(mod, inputs, ffn=ffn):
                recorder.record(ffn + ".activation", inputs[0])
                recorder.record(ffn + ".dropout", inputs[0])

            module.register_forward_pre_hook(before_linear2)

    embed = model.embed

    def recorded_embed(embedding, tokens):
        x = embed(embedding, tokens)
        recorder.record("positional", x)
        recorder.record("dropout", x)
        return x

    model.embed = recorded_embed


def entries(model, recorder, loss):
    out = {}
    for name, _, tensor, _, _ in recorder.records:
        out[name] = tensor
    out["loss"] = loss
    done = set()

    def add_parameter_grads(prefix, module):
        for name, p in module.named_parameters(recurse=False):
            if p.grad is not None and id(p) not in done:
                done.add(id(p))
                out["grad." + (f"{prefix}.{name}" if prefix else name)] = p.grad

    for name, base, tensor, module, first in reversed(recorder.records):
        if tensor.grad is not None:
            out["grad_output." + name] = tensor.grad
        if first and module is not None:
            add_parameter_grads(base, module)
    for torch_name, module in model.named_modules():
        add_parameter_grads(our_name(torch_name), module)
    return out


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    checkpoint, batch_path, out_path = argv[1:]
    torch.set_num_threads(2)
    model, config = build_model(checkpoint)
    batch, _ = load(batch_path)
    src, tgt = batch["src"], batch["tgt"]
    recorder = Recorder()
    instrument(model, int(config["layers"]), recorder)
    # copy_task capture's step: teacher forcing, the decoder sees tgt[:, :-1] and predicts tgt[:, 1:].
    logits = model(src, tgt[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1),
                           ignore_index=PAD, label_smoothing=float(config["label_smoothing"]))
    loss.backward()
    captured = entries(model, recorder, loss)
    check_safetensors.write_tensors(out_path, captured, {"order": ",".join(captured),
                                                         "written_by": "torch " + torch.__version__})
    print(f"captured {len(recorder.records)} module outputs, their gradients and "
          f"{sum(1 for _ in model.parameters())} parameter gradients of one step "
          f"(batch {src.size(0)}, loss {loss.item():.6f}) into {out_path}")


if __name__ == "__main__":
    main(sys.argv)
