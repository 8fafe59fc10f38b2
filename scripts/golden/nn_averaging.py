"""Golden values for averaged weights: sg::optim::ExponentialMovingAverage against
torch.optim.swa_utils.AveragedModel with an exponential-moving-average rule, and
sg::train::average_checkpoints against fairseq's mean of checkpoints (summed in float64 here).

The model: a Linear(3, 2) and a float buffer "running" [2] (averaged too: use_buffers=True). Its
states s0 (at construction), s1 .. s4 (after four made-up training steps) are the inputs; the
outputs are the average after each update. AveragedModel copies the model at its first
update_parameters(), so it is called once at construction, where the C++ average starts as a
copy; its avg_fn then gets the number of averages so far, k for the k-th real update, which is
torch_ema's num_updates."""
import torch

from golden._common import case, randn

STATES = 5


class Model(torch.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.fc = torch.nn.Linear(3, 2, dtype=dtype)
        self.register_buffer("running", torch.zeros(2, dtype=dtype))


def ema_case(decay, use_num_updates, dtype):
    def decay_at(k):
        return min(decay, (1 + k) / (10 + k)) if use_num_updates else decay

    def avg_fn(averaged, current, num_averaged):
        # torch_ema's update, average -= (1 - d) · (average - current)
        return averaged - (1 - decay_at(int(num_averaged))) * (averaged - current)

    model = Model(dtype)
    states = [{"fc.weight": randn(2, 3, dtype=dtype), "fc.bias": randn(2, dtype=dtype),
               "running": randn(2, dtype=dtype)} for _ in range(STATES)]
    with torch.no_grad():
        model.load_state_dict(states[0])
    averaged = torch.optim.swa_utils.AveragedModel(model, avg_fn=avg_fn, use_buffers=True)
    averaged.update_parameters(model)  # the copy at construction
    inputs, outputs = {}, {}
    for s, state in enumerate(states):
        for name, value in state.items():
            inputs[f"{name}_state{s}"] = value.clone()
    for s in range(1, STATES):
        with torch.no_grad():
            model.load_state_dict(states[s])
        averaged.update_parameters(model)
        for name, value in averaged.module.state_dict().items():
            outputs[f"{name}_update{s}"] = value.detach().clone()
    return case(inputs, outputs, decay=decay, use_num_updates=use_num_updates)


def cases():
    c = {}
    c["ema_float64"] = ema_case(0.9, False, torch.float64)
    c["ema_num_updates_float64"] = ema_case(0.95, True, torch.float64)
    c["ema_num_updates_float32"] = ema_case(0.999, True, torch.float32)

    # Three checkpoints of the same float32 tensors: their mean, summed in float64.
    files = [{"w": randn(4, 3), "b": randn(3)} for _ in range(3)]
    inputs = {f"{name}_file{i}": t for i, f in enumerate(files) for name, t in f.items()}
    outputs = {name: torch.stack([f[name].double() for f in files]).sum(0).div(len(files)).float()
               for name in files[0]}
    c["average_checkpoints"] = case(inputs, outputs)
    return c
