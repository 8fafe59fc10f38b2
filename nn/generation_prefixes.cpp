// Prefixes (nn/generation.h): the tokens each row was fed so far, for decoding without a cache.
#include "autograd/error.h"
#include "autograd/factory.h"
#include "nn/generation.h"

namespace sg::nn {

Prefixes::Prefixes(int64_t rows) {
  SG_CHECK(rows >= 1, "generation: Prefixes needs at least one row, got {}", rows);
  rows_.resize(static_cast<size_t>(rows));
}

Tensor Prefixes::append(const std::vector<int64_t>& tokens, Device device) {
  SG_CHECK(!rows_.empty(), "generation: no rows to append to (reorder kept none)");
  SG_CHECK(tokens.size() == rows_.size(), "generation: {} tokens for {} rows", tokens.size(),
           rows_.size());
  std::vector<int64_t> flat;
  for (size_t r = 0; r < tokens.size(); ++r) {
    rows_[r].push_back(tokens[r]);
    flat.insert(flat.end(), rows_[r].begin(), rows_[r].end());
  }
  const auto T = static_cast<int64_t>(rows_.front().size());
  return from_vector(flat, {static_cast<int64_t>(rows_.size()), T}).to(device);
}

void Prefixes::reorder(const std::vector<int64_t>& rows) {
  std::vector<std::vector<int64_t>> next;
  next.reserve(rows.size());
  for (int64_t r : rows) {
    SG_CHECK(r >= 0 && r < static_cast<int64_t>(rows_.size()),
             "generation: reorder names row {} of {} rows", r, rows_.size());
    next.push_back(rows_[static_cast<size_t>(r)]);
  }
  rows_ = std::move(next);
}

}  // namespace sg::nn
