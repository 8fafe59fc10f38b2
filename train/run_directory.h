// A training run's directory and the files it keeps there:
//   model.safetensors              the best model so far (eval and decode read it)
//   last.safetensors               the latest state, everything --resume needs (model, optimizer,
//                                  moving average, metadata)
//   checkpoint-<step>.safetensors  the model every so many steps, the newest few kept, for
//                                  averaging (average_checkpoints.h)
//   averaged.safetensors           their average
// Training refuses to start over an existing run unless told to continue it (--resume) or to
// replace it (--overwrite, which removes its checkpoints and charts first), refuses a directory
// another process is training in (RunLock), and removes the temporary files of writers that were
// killed.
//
//   sg::train::RunDirectory run("runs/copy");
//   const sg::train::RunLock lock = run.lock(options.resume);   // held until the run ends
//   run.prepare(options.resume, options.overwrite);
//   if (options.resume) sg::train::restore(run.read_last(), model, &optimizer);
//   ... run.save_last(model, optimizer, metadata);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "train/checkpoint.h"

namespace sg::train {

// An exclusive lock on a run directory (flock on <dir>/.lock), held while one process trains
// there and released when it ends, however it ends (the kernel drops it with the process): two
// runs started into one directory would write the same checkpoints, the later run's silently
// lost. The file itself stays, holding the pid of its last holder for the message.
class RunLock {
 public:
  RunLock(RunLock&& other) noexcept;
  RunLock& operator=(RunLock&&) = delete;
  RunLock(const RunLock&) = delete;
  ~RunLock();

 private:
  friend class RunDirectory;
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

class RunDirectory {
 public:
  explicit RunDirectory(std::string dir);
  const std::string& path() const { return dir_; }
  std::string best() const { return dir_ + "/model.safetensors"; }
  std::string last() const { return dir_ + "/last.safetensors"; }
  std::string step_checkpoint(int64_t step) const;  // checkpoint-<step>.safetensors
  // The step a file name stands for when it is one step_checkpoint writes
  // ("checkpoint-40.safetensors": 40; "checkpoint-007.safetensors" is someone else's).
  static std::optional<int64_t> step_of(const std::string& filename);
  std::string averaged() const { return dir_ + "/averaged.safetensors"; }
  // Where versions before the one-file checkpoint kept the optimizer's state.
  std::string legacy_optimizer() const { return dir_ + "/last.optim.safetensors"; }

  // Creates the directory and locks it for this process, or names the process that trains there.
  // With `resume`, the run must be there (no empty directory is made for a resume that fails).
  [[nodiscard]] RunLock lock(bool resume = false) const;
  // Creates the directory and removes killed writers' temporary files; then, unless resuming,
  // refuses a directory that holds a run, or with `overwrite` removes that run's checkpoints, and
  // removes the files named in `outputs` (what a run writes there besides checkpoints: its
  // charts), so that a new run killed before it writes its own leaves none of another run's.
  void prepare(bool resume, bool overwrite, const std::vector<std::string>& outputs = {}) const;
  // last.safetensors, read and checked, with its optimizer state. A checkpoint of an older
  // version keeps that state in last.optim.safetensors: accepted only when both files carry the
  // same "step" metadata.
  Checkpoint read_last() const;
  // Writes last.safetensors (one file) and removes an older version's optimizer file.
  void save_last(const nn::Module& model, const optim::Optimizer& optimizer,
                 const nn::Metadata& metadata,
                 const optim::ExponentialMovingAverage* ema = nullptr) const;

  // The step checkpoints in the directory, (step, path), oldest first.
  std::vector<std::pair<int64_t, std::string>> step_checkpoints() const;
  // The newest `count` of them (all of them if there are fewer), oldest first: what is averaged.
  std::vector<std::pair<int64_t, std::string>> newest_step_checkpoints(int64_t count) const;
  // Writes the model (no optimizer) as step_checkpoint(step), then removes all step checkpoints
  // but the newest `keep` (fairseq's --keep-last-epochs).
  void save_step(int64_t step, const nn::Module& model, const nn::Metadata& metadata,
                 int64_t keep) const;
  // Removes the step checkpoints after `step`: a resumed run rewrites them, and one written
  // after its last.safetensors by a run that was then killed must not be averaged twice over.
  void remove_steps_after(int64_t step) const;

 private:
  // An error naming --out for what cannot be a run's directory (a file, a link to nowhere, a
  // loop), and with `resume` for a directory without last.safetensors.
  void check_path(bool resume) const;
  void create() const;
  std::string dir_;
};

// On --resume: an error unless the run in `dir`, at step `reached`, can go on to `steps` (a
// shorter --steps would rewrite its checkpoint as a run of fewer steps than it took).
void check_resumable_to(const std::string& dir, int64_t reached, int64_t steps);

// Removes "<name>.tmp-<pid>" files (nn/atomic_file.h) in `dir` whose writer process is gone.
void remove_stale_temporaries(const std::string& dir);

}  // namespace sg::train
