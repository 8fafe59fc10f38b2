// Batches of variable-length sequence pairs, bucketed by length under a token budget.
//
// Each epoch: shuffle the examples with a generator seeded by (seed, epoch); sort them by length
// (stable, so equal lengths keep the shuffled order); cut the sorted list into batches whose
// padded size, rows × (longest source + longest target), stays within max_tokens; shuffle the
// order of the batches. Sorting puts words of similar length together, so little of a batch is
// padding; the shuffles keep batches and their order different every epoch.
//
// An epoch's batches are a pure function of (examples, seed, epoch), so the loader's whole state
// is its position (epoch, next batch): saved in a checkpoint and restored, training resumes on
// exactly the batch it would have seen. The shuffles use mt19937_64 (its output is fixed by the
// C++ standard) and their own index arithmetic, not std::shuffle (whose algorithm is not), so the
// batches are the same on every machine.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/tensor.h"

namespace sg::data {

struct SequencePair {
  std::vector<int64_t> source;  // e.g. the letters of a word
  std::vector<int64_t> target;  // e.g. <bos> phonemes <eos>
};

struct Batch {
  Tensor source;                 // [B, S] int64, padded with pad_id
  Tensor target;                 // [B, T] int64, padded with pad_id
  std::vector<int64_t> indices;  // which examples, in row order
};

struct LoaderPosition {
  int64_t epoch = 0;
  int64_t batch = 0;  // the next batch of that epoch
  bool operator==(const LoaderPosition&) const = default;
};

class BucketLoader {
 public:
  // Throws when examples is empty, a sequence is empty, or one example alone exceeds max_tokens.
  BucketLoader(std::vector<SequencePair> examples, int64_t max_tokens, uint64_t seed,
               int64_t pad_id = 0);

  // The batch at position(), then advances (to the next epoch after its last batch).
  Batch next();
  LoaderPosition position() const { return position_; }
  // Throws when the position is past the end of its epoch.
  void set_position(LoaderPosition position);

  int64_t batches_in_epoch(int64_t epoch);
  const std::vector<SequencePair>& examples() const { return examples_; }
  // The example ids of one epoch's batches, in the order next() returns them.
  std::vector<std::vector<int64_t>> epoch_batches(int64_t epoch) const;

 private:
  const std::vector<std::vector<int64_t>>& plan(int64_t epoch);
  Batch make_batch(const std::vector<int64_t>& ids) const;

  std::vector<SequencePair> examples_;
  int64_t max_tokens_;
  uint64_t seed_;
  int64_t pad_id_;
  LoaderPosition position_;
  int64_t planned_epoch_ = -1;
  std::vector<std::vector<int64_t>> planned_;
};

}  // namespace sg::data
