// nn/data/pad_sequences.h: rows of different lengths padded into one [B, longest] batch, as the
// bucketing loader, generate_in_batches and a language model's batches make them.
#include "nn/data/pad_sequences.h"

#include "tests/support/testing.h"

namespace sg::data {
namespace {

TEST(PadSequences, PadsEachRowToTheLongest) {
  const Tensor t = pad_sequences({{5, 6, 7}, {8}, {}}, 0);
  EXPECT_EQ(t.shape(), (Shape{3, 3}));
  EXPECT_EQ(t.dtype(), kInt64);
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{5, 6, 7, 8, 0, 0, 0, 0, 0}));
  EXPECT_EQ(pad_sequences({{1, 2}}, 9).to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(pad_sequences({{3}, {4, 4}}, 9).to_vector<int64_t>(),
            (std::vector<int64_t>{3, 9, 4, 4}));
}

TEST(PadSequences, RefusesNoRowsAndANegativePad) {
  EXPECT_SG_ERROR(pad_sequences({}, 0), "pad_sequences: no sequences to pad");
  EXPECT_SG_ERROR(pad_sequences({{1}}, -1), "pad_sequences: the pad id must be a token id");
}

}  // namespace
}  // namespace sg::data
