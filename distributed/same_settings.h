// The check at the start of a data-parallel run that every rank was started with the same
// settings. Ranks given a different --batch, --seed or --steps would train together on different
// things, or wait for each other in different collectives until a timeout; instead, each rank
// shares its settings (name and value, as text) with all the others, and if any differ, every
// rank throws the same error, naming each setting that differs and each rank's value:
//
//   copy_task train: the ranks were started with different settings: --batch is 80 on rank 0 and
//   40 on rank 1; every rank must be given the same flags
//
//   sg::distributed::check_same_settings(*group, {{"--batch", "80"}, {"--seed", "0"}}, "train");
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "autograd/error.h"
#include "distributed/process_group.h"

namespace sg::distributed {

// Thrown alike on every rank: no rank waits for another, so each may end on its own (without
// aborting the job) and one of them report it.
class RanksDisagree : public Error {
 public:
  using Error::Error;
};

using Settings = std::vector<std::pair<std::string, std::string>>;  // (name, value)

// Collective: every rank calls it with its own values. Throws RanksDisagree when any name or value
// differs between ranks; the message starts with `program`.
void check_same_settings(ProcessGroup& group, const Settings& settings, const std::string& program);

// Every rank's `text`, in rank order (collective: two all-gathers, of the lengths, then of the
// bytes packed into int64).
std::vector<std::string> all_gather_strings(ProcessGroup& group, const std::string& text);

}  // namespace sg::distributed
