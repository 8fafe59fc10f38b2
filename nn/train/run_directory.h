// A training run's directory and the files it keeps there:
//   model.safetensors   the best model so far (eval and decode read it)
//   last.safetensors    the latest state, everything --resume needs (model, optimizer, metadata)
// Training refuses to start over an existing run unless told to continue it (--resume) or to
// replace it (--overwrite), and removes the temporary files of writers that were killed.
//
//   sg::train::RunDirectory run("runs/copy");
//   run.prepare(options.resume, options.overwrite);
//   if (options.resume) sg::train::restore(run.read_last(), model, &optimizer);
//   ... run.save_last(model, optimizer, metadata);
#pragma once

#include <string>

#include "nn/train/checkpoint.h"

namespace sg::train {

class RunDirectory {
 public:
  explicit RunDirectory(std::string dir);
  const std::string& path() const { return dir_; }
  std::string best() const { return dir_ + "/model.safetensors"; }
  std::string last() const { return dir_ + "/last.safetensors"; }
  // Where versions before the one-file checkpoint kept the optimizer's state.
  std::string legacy_optimizer() const { return dir_ + "/last.optim.safetensors"; }

  // Creates the directory and removes killed writers' temporary files; then, unless resuming,
  // refuses a directory that holds a run, or with `overwrite` removes that run's checkpoints.
  void prepare(bool resume, bool overwrite) const;
  // last.safetensors, read and checked, with its optimizer state. A checkpoint of an older
  // version keeps that state in last.optim.safetensors: accepted only when both files carry the
  // same "step" metadata.
  Checkpoint read_last() const;
  // Writes last.safetensors (one file) and removes an older version's optimizer file.
  void save_last(const nn::Module& model, const optim::Optimizer& optimizer,
                 const nn::Metadata& metadata) const;

 private:
  std::string dir_;
};

// Removes "<name>.tmp-<pid>" files (nn/atomic_file.h) in `dir` whose writer process is gone.
void remove_stale_temporaries(const std::string& dir);

}  // namespace sg::train
