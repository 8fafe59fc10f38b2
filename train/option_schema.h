// A program's options declared once: each with its key, type, bounds, help and rule on --resume.
// The command-line flags (cli.h: add_options), their checks, the checkpoint's "config.<key>"
// metadata, the strict reading of a checkpoint's config with the same bounds, and resume's
// "changed setting" check (run_config.h) are all derived from the one list, so they cannot drift
// apart.
//
//   struct Config {
//     int64_t layers = 3;
//     double dropout = 0.1;
//     sg::train::OptionSchema schema() {
//       return sg::train::OptionSchema()
//           .integer("layers", layers, 1, 64, OnResume::kFixedModel, "Transformer blocks")
//           .real("dropout", dropout, 0, 1, OnResume::kFixedModel, "dropout probability")
//           .excluding_hi();                                          // [0, 1)
//     }
//   };
//   sg::train::add_options(*train_cmd, config.schema());         // --layers, --dropout
//   metadata = sg::train::config_metadata(config.schema().to_map());
//   config.schema().read(md.with_prefix("config."), path);     // bounds checked, strictly
//   config.schema().check_resume(md.with_prefix("config."), path);      // on --resume
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "train/numbers.h"
#include "train/run_config.h"

namespace sg::train {

struct Option {
  std::string key;  // "eval_every": metadata "config.eval_every", flag "--eval-every"
  std::variant<int64_t*, uint64_t*, double*, bool*, std::string*> value;  // the config's member
  // The bounds of a number, for its flag and for a checkpoint's value.
  int64_t integer_lo = 0, integer_hi = 0;
  RealInterval real_range;
  OnResume on_resume = OnResume::kFixed;
  std::string help;
  std::string flag_name;             // empty: from the key
  bool command_line = true;          // false: set by a preset, not by a flag of its own
  std::vector<std::string> choices;  // a text option's allowed values (empty: any)
  // The value of a checkpoint written before the option existed; none: the key must be there.
  std::optional<std::string> before_it_existed;
  std::string flag() const;
};

class OptionSchema {
 public:
  OptionSchema& integer(std::string key, int64_t& value, int64_t lo, int64_t hi, OnResume rule,
                        std::string help);
  OptionSchema& unsigned_integer(std::string key, uint64_t& value, OnResume rule,
                                 std::string help);  // any 64-bit value (a seed)
  OptionSchema& real(std::string key, double& value, double lo, double hi, OnResume rule,
                     std::string help);
  OptionSchema& boolean(std::string key, bool& value, OnResume rule, std::string help);
  OptionSchema& text(std::string key, std::string& value, OnResume rule, std::string help);
  // Modifiers of the option added last: its flag when it is not the key's ("--ffn" for "d_ff"),
  // a real's bound left out of its range (dropout in [0, 1): 1 would drop everything), the values
  // a text may take, and the value a checkpoint written before it existed stands for.
  OptionSchema& flag(std::string name);
  OptionSchema& excluding_lo();
  OptionSchema& excluding_hi();
  OptionSchema& one_of(std::vector<std::string> choices);
  OptionSchema& before_it_existed(std::string value);
  // An option no flag sets (a preset's value), named `shown_as` in resume's messages.
  OptionSchema& no_flag(std::string shown_as);

  const std::vector<Option>& options() const { return options_; }
  // Every value as text: integers in decimal, reals in the shortest form that reads back the same,
  // booleans "true"/"false".
  ConfigMap to_map() const;
  std::vector<ConfigField> fields() const;
  // (flag, value) of every option, in order: what ranks compare before they train together.
  std::vector<std::pair<std::string, std::string>> flag_values() const;
  // Each value checked against its bounds and choices: "--layers must be in [1, 64], got 65".
  void check() const;
  // Sets every option from `saved` (a checkpoint's config), strictly: each key present (or known
  // from before it existed), parsed in full and within its bounds, or an error naming `source` and
  // the key.
  void read(const ConfigMap& saved, const std::string& source) const;
  // Refuses to resume the run saved in `path` (its config `saved`) with these values: the
  // first option that differs and may not change is named (check_resume in run_config.h).
  void check_resume(const ConfigMap& saved, const std::string& path) const;

 private:
  Option& last(const char* modifier);
  std::vector<Option> options_;
};

}  // namespace sg::train
