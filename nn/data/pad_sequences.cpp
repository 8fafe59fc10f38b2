#include "nn/data/pad_sequences.h"

#include <algorithm>

#include "autograd/error.h"
#include "autograd/factory.h"

namespace sg::data {

Tensor pad_sequences(const std::vector<std::vector<int64_t>>& rows, int64_t pad) {
  SG_CHECK(!rows.empty(), "pad_sequences: no sequences to pad");
  SG_CHECK(pad >= 0, "pad_sequences: the pad id must be a token id (>= 0), got {}", pad);
  size_t longest = 0;
  for (const auto& row : rows) longest = std::max(longest, row.size());
  std::vector<int64_t> ids(rows.size() * longest, pad);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::copy(rows[r].begin(), rows[r].end(),
              ids.begin() + static_cast<std::ptrdiff_t>(r * longest));
  }
  return from_vector(ids, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(longest)});
}

}  // namespace sg::data
