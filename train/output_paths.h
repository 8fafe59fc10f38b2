// An output must not land on what a program reads or keeps.
//
// A path given for an output (--metrics-json, --log-jsonl, an SVG, a predictions file) that names
// an input (--data, --checkpoint) or a file the run keeps (its model, its last checkpoint) would
// replace that file: the dictionary, the model or the resume lost, and the program ends well.
// So every output is compared with every such path before any work starts, and the clash is an
// error naming both flags.
//
//   sg::train::check_outputs({{"--metrics-json", metrics}},
//                            {{"--data", data}, {"--checkpoint", checkpoint}});
#pragma once

#include <string>
#include <vector>

namespace sg::train {

// A path with the flag (or the words) that gave it: {"--data", "cmudict.dict"}.
struct NamedPath {
  std::string flag, path;
};

// Whether two paths name the same file: the same file when both exist (links followed), else the
// same absolute, normalized path ("runs/x" and "./runs/x" before either is written).
bool same_file(const std::string& a, const std::string& b);

// An error naming both when an output is one of `kept` or another output; empty paths are skipped
// (an output not asked for).
void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& kept);

// One file a program writes whole, replacing what is there: nn::check_can_replace (no FIFO, device
// or directory there), not a checkpoint (is_checkpoint: any run's model or state, not only the
// inputs named), then check_outputs against `kept`. Nothing for an empty path.
void check_replaced_output(const NamedPath& output, const std::vector<NamedPath>& kept);

// Whether `path` is a checkpoint scratchgrad wrote: a safetensors file whose metadata names its
// format or its step (a trained model, a run's last state, an average). Reads the header only.
bool is_checkpoint(const std::string& path);

// What a training run writes besides its checkpoints, checked before the run starts (and before
// --overwrite removes anything): --metrics-json can be replaced and --log-jsonl appended to, and
// neither is one of `inputs`, the run directory, a checkpoint's name in it, one of `run_files`
// (the charts it draws there: "loss.svg"), or the other.
void check_run_outputs(const std::string& run_dir, const std::string& metrics_json,
                       const std::string& log_jsonl, std::vector<NamedPath> inputs,
                       const std::vector<std::string>& run_files = {});

// An error naming `flag` unless lines can be appended at `path` later: anything there but a
// directory (a FIFO with a reader streams the log), or a new file, whose missing parent
// directories this creates now. So a --log-jsonl that cannot be opened fails before the first
// step, not at the first evaluation.
void check_can_append(const std::string& path, const std::string& flag);

}  // namespace sg::train
