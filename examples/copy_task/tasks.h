// The toy sequence tasks: copy, reverse, sort. Each example is a source sequence and the target
// the model must produce from it.
//
//   src = [1, 7, 3, 9, 2, ...]      1 = the start symbol, 0 = padding
//   copy:    tgt = src
//   reverse: tgt = [1, ..., 2, 9, 3, 7]
//   sort:    tgt = [1, 2, 3, 7, 9, ...]
//
// With min_len < max_len, each sequence gets a random length and is padded with 0 to max_len, so
// the padding masks do real work. Batches come from a seeded generator of their own, so training
// data is reproducible and resumable (state()/set_state()).
#pragma once

#include <string>

#include "autograd/autograd.h"

namespace copy_task {

enum class Task { Copy, Reverse, Sort };
Task parse_task(const std::string& name);  // "copy" | "reverse" | "sort"

inline constexpr int64_t kPad = 0;
inline constexpr int64_t kStart = 1;

struct Batch {
  sg::Tensor src;      // [B, L] int64
  sg::Tensor tgt;      // [B, L] int64: the full target, starting with kStart
  sg::Tensor lengths;  // [B] int64: real (non-pad) length of each sequence, start symbol included
};

class TaskGenerator {
 public:
  // Sequences of min_len..max_len tokens (start symbol included), content tokens in [1, vocab).
  TaskGenerator(Task task, int64_t vocab, int64_t min_len, int64_t max_len, uint64_t seed);
  Batch next(int64_t batch_size);
  // The target for one source sequence (a row of real tokens, start symbol first).
  std::vector<int64_t> target_for(const std::vector<int64_t>& src) const;
  uint64_t state() const { return gen_.state(); }
  void set_state(uint64_t s) { gen_.set_state(s); }

 private:
  Task task_;
  int64_t vocab_, min_len_, max_len_;
  sg::Generator gen_;
};

}  // namespace copy_task
