// History: what a training run has measured so far, for its plots and for --resume (a resumed
// run continues it). The training loss of every step, and at each evaluation the step and named
// metrics ("exact_match", "dev_wer"); totals such as wall seconds. Kept in a checkpoint's
// metadata as one flat JSON object:
//   {"losses": [2.4, 2.1, ...], "eval_steps": [100, 200], "exact": [0.1, 0.6], "seconds": 12.5}
//
//   sg::train::History h;
//   h.losses.push_back(loss);
//   h.add_evaluation(step, {{"exact", 0.93}, {"token_acc", 0.99}});
//   metadata["history"] = h.to_json();
//   History again = History::from_json(metadata.at("history"), path);
#pragma once

#include <map>
#include <string>
#include <vector>

namespace sg::train {

struct History {
  std::vector<double> losses;                        // the training loss of step 1, 2, ...
  std::vector<double> eval_steps;                    // the step of each evaluation
  std::map<std::string, std::vector<double>> evals;  // metric -> one value per evaluation
  std::map<std::string, double> totals;              // e.g. "seconds" of training so far

  // Appends one evaluation; its metric names must be those of the evaluations before it.
  void add_evaluation(int64_t step, const std::map<std::string, double>& metrics);
  // One metric's values, one per evaluation: none before the first evaluation; an error names a
  // metric the evaluations do not have.
  const std::vector<double>& eval(const std::string& metric) const;
  // 1, 2, ..., losses.size(): the x of each loss.
  std::vector<double> loss_steps() const;

  // Non-finite numbers are written as null (JSON has no NaN) and read back as NaN.
  std::string to_json() const;
  // Strict: a flat object of number lists and numbers, every metric list as long as eval_steps;
  // `source` names the file in errors. (A list named "steps", 1..n, which older checkpoints wrote,
  // is skipped.)
  static History from_json(const std::string& text, const std::string& source);
};

}  // namespace sg::train
