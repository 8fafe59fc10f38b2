#include "tasks.h"

#include <algorithm>

namespace copy_task {

Task parse_task(const std::string& name) {
  if (name == "copy") return Task::Copy;
  if (name == "reverse") return Task::Reverse;
  if (name == "sort") return Task::Sort;
  SG_FAIL("unknown task '{}' (expected copy, reverse or sort)", name);
}

TaskGenerator::TaskGenerator(Task task, int64_t vocab, int64_t min_len, int64_t max_len,
                             uint64_t seed)
    : task_(task), vocab_(vocab), min_len_(min_len), max_len_(max_len), gen_(seed) {
  SG_CHECK(vocab >= 3, "task: vocab must be at least 3 (pad, start and one token), got {}", vocab);
  SG_CHECK(min_len >= 2 && min_len <= max_len,
           "task: need 2 <= min_len <= max_len, got min_len {} and max_len {}", min_len, max_len);
}

std::vector<int64_t> TaskGenerator::target_for(const std::vector<int64_t>& src) const {
  std::vector<int64_t> tgt = src;
  if (task_ == Task::Reverse) std::reverse(tgt.begin() + 1, tgt.end());
  if (task_ == Task::Sort) std::sort(tgt.begin() + 1, tgt.end());
  return tgt;
}

Batch TaskGenerator::next(int64_t batch_size) {
  // Written straight into its tensors (padding is 0): a batch too large for the machine is
  // refused by name when they are made (sg::OutOfMemoryError), not a bare std::bad_alloc.
  static_assert(kPad == 0, "the tensors start as padding");
  Batch batch{sg::zeros({batch_size, max_len_}, sg::kInt64),
              sg::zeros({batch_size, max_len_}, sg::kInt64), sg::empty({batch_size}, sg::kInt64)};
  int64_t* src = batch.src.data_ptr<int64_t>();
  int64_t* tgt = batch.tgt.data_ptr<int64_t>();
  int64_t* lengths = batch.lengths.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch_size; ++b) {
    int64_t n = min_len_ + static_cast<int64_t>(gen_.next_u64() % (max_len_ - min_len_ + 1));
    // As in The Annotated Transformer: tokens drawn from [1, vocab), then the first set to start.
    std::vector<int64_t> seq(static_cast<size_t>(n));
    for (int64_t& t : seq) t = 1 + static_cast<int64_t>(gen_.next_u64() % (vocab_ - 1));
    seq[0] = kStart;
    std::vector<int64_t> out = target_for(seq);
    std::copy(seq.begin(), seq.end(), src + b * max_len_);
    std::copy(out.begin(), out.end(), tgt + b * max_len_);
    lengths[b] = n;
  }
  return batch;
}

}  // namespace copy_task
