#include "nn/data/bucket_loader.h"

#include "nn/data/pad_sequences.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "autograd/error.h"
#include "autograd/factory.h"
#include "nn/data/pad_sequences.h"

namespace sg::data {

namespace {

// Fisher-Yates written out (std::shuffle's algorithm is the library's choice), so the permutation
// depends only on the generator's standard-fixed output. The modulo's bias is below 2^-40 here.
template <typename T>
void shuffle(std::vector<T>& items, std::mt19937_64& rng) {
  for (size_t i = items.size(); i > 1; --i) {
    const auto j = static_cast<size_t>(rng() % i);
    std::swap(items[i - 1], items[j]);
  }
}

std::mt19937_64 epoch_generator(uint64_t seed, int64_t epoch) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(epoch), static_cast<uint32_t>(epoch >> 32)};
  return std::mt19937_64(seq);
}

}  // namespace

BucketLoader::BucketLoader(std::vector<SequencePair> examples, int64_t max_tokens, uint64_t seed,
                           int64_t pad_id)
    : examples_(std::move(examples)), max_tokens_(max_tokens), seed_(seed), pad_id_(pad_id) {
  SG_CHECK(!examples_.empty(), "BucketLoader: no examples");
  for (size_t i = 0; i < examples_.size(); ++i) {
    const auto& e = examples_[i];
    SG_CHECK(!e.source.empty() && !e.target.empty(), "BucketLoader: example {} has an empty {}", i,
             e.source.empty() ? "source" : "target");
    const auto tokens = static_cast<int64_t>(e.source.size() + e.target.size());
    SG_CHECK(tokens <= max_tokens_,
             "BucketLoader: example {} alone has {} tokens, more than max_tokens = {}", i, tokens,
             max_tokens_);
  }
}

std::vector<std::vector<int64_t>> BucketLoader::epoch_batches(int64_t epoch) const {
  std::mt19937_64 rng = epoch_generator(seed_, epoch);
  std::vector<int64_t> order(examples_.size());
  std::iota(order.begin(), order.end(), 0);
  shuffle(order, rng);
  auto length = [&](int64_t i) {
    const auto& e = examples_[static_cast<size_t>(i)];
    return std::pair{e.target.size(), e.source.size()};
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return length(a) < length(b); });
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> current;
  size_t longest_src = 0, longest_tgt = 0;
  for (int64_t i : order) {
    const auto& e = examples_[static_cast<size_t>(i)];
    const size_t src = std::max(longest_src, e.source.size());
    const size_t tgt = std::max(longest_tgt, e.target.size());
    if (!current.empty() &&
        static_cast<int64_t>((current.size() + 1) * (src + tgt)) > max_tokens_) {
      batches.push_back(std::move(current));
      current.clear();
      longest_src = longest_tgt = 0;
    }
    current.push_back(i);
    longest_src = std::max(longest_src, e.source.size());
    longest_tgt = std::max(longest_tgt, e.target.size());
  }
  batches.push_back(std::move(current));
  shuffle(batches, rng);
  return batches;
}

const std::vector<std::vector<int64_t>>& BucketLoader::plan(int64_t epoch) {
  if (planned_epoch_ != epoch) {
    planned_ = epoch_batches(epoch);
    planned_epoch_ = epoch;
  }
  return planned_;
}

int64_t BucketLoader::batches_in_epoch(int64_t epoch) {
  return static_cast<int64_t>(plan(epoch).size());
}

namespace {

// The last epoch a loader counts to, as the optimizers' step counts (2^53: exact in a double, and
// an epoch past it never comes): set_position(INT64_MAX) was accepted and next() then overflowed.
constexpr int64_t kMaxEpoch = int64_t{1} << 53;

}  // namespace

void BucketLoader::set_position(LoaderPosition position) {
  SG_CHECK(position.epoch <= kMaxEpoch,
           "BucketLoader::set_position: epoch {} is past the last one, 2^53 = {}", position.epoch,
           kMaxEpoch);
  SG_CHECK(position.epoch >= 0 && position.batch >= 0 &&
               position.batch < batches_in_epoch(position.epoch),
           "BucketLoader::set_position: epoch {} batch {} is not a position of this data ({} "
           "batches per epoch)",
           position.epoch, position.batch,
           position.epoch >= 0 ? batches_in_epoch(position.epoch) : 0);
  position_ = position;
}

Batch BucketLoader::next() {
  const auto& batches = plan(position_.epoch);
  const bool last = position_.batch + 1 == static_cast<int64_t>(batches.size());
  SG_CHECK(!last || position_.epoch < kMaxEpoch,
           "BucketLoader: the last batch of the last epoch, 2^53 = {}, is taken", kMaxEpoch);
  Batch batch = make_batch(batches[static_cast<size_t>(position_.batch)]);
  position_ = last ? LoaderPosition{position_.epoch + 1, 0}
                   : LoaderPosition{position_.epoch, position_.batch + 1};
  return batch;
}

Batch BucketLoader::make_batch(const std::vector<int64_t>& ids) const {
  std::vector<std::vector<int64_t>> sources, targets;
  for (int64_t i : ids) {
    sources.push_back(examples_[static_cast<size_t>(i)].source);
    targets.push_back(examples_[static_cast<size_t>(i)].target);
  }
  return {pad_sequences(sources, pad_id_), pad_sequences(targets, pad_id_), ids};
}

}  // namespace sg::data
