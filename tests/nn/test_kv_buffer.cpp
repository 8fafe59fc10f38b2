// Tests for nn::KVBuffer, the decoding cache's growing keys and values: append is cat along the
// positions (exactly, across every growth of the buffer, in both layouts), copies never see each
// other's positions, reorder is index_select along the batch and keeps the layout, and with grad
// mode on gradients flow through it as through cat. Cached against recomputed decoding, which
// runs through it, is tested in test_transformer.cpp and test_generation.cpp.
#include <vector>

#include "nn/kv_buffer.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::tensors_equal;
using Layout = KVBuffer::Layout;

// Whether t is laid out as the buffer keeps it: each head dim's positions contiguous (Columns),
// or each position's numbers (Rows).
bool in_layout(const Tensor& t, Layout layout) {
  return layout == Layout::Columns ? t.stride(2) == 1 : t.stride(3) == 1;
}

TEST(TransformerKVBuffer, AppendIsConcatenationAcrossEveryGrowth) {
  manual_seed(1);
  for (Layout layout : {Layout::Rows, Layout::Columns}) {
    SCOPED_TRACE(layout == Layout::Rows ? "rows" : "columns");
    KVBuffer buffer(layout);
    EXPECT_FALSE(buffer.tensor().defined());
    EXPECT_EQ(buffer.length(), 0);
    Tensor expected;
    // 1, 3, 1, 1, ... positions at a time: past a capacity of 16, then of 34.
    int64_t step = 0;
    while (buffer.length() < 40) {
      const int64_t n = step++ % 3 == 1 ? 3 : 1;
      const Tensor x = randn({2, 3, 5, n}).transpose(2, 3);  // [2, 3, n, 5], any strides
      buffer.append(x);
      expected = expected.defined() ? cat({expected, x}, 2) : x;
      ASSERT_EQ(buffer.tensor().shape(), expected.shape());
      ASSERT_TRUE(tensors_equal(buffer.tensor(), expected)) << "after " << expected.size(2);
      EXPECT_TRUE(in_layout(buffer.tensor(), layout));
    }
  }
}

TEST(TransformerKVBuffer, ACopyNeverSeesAnotherCopysPositions) {
  manual_seed(2);
  const Tensor x1 = randn({1, 2, 2, 4}), x2 = randn({1, 2, 1, 4}), x3 = randn({1, 2, 1, 4});
  KVBuffer a(Layout::Columns);
  a.append(x1);
  const Tensor before = a.tensor();
  KVBuffer b = a;  // shares a's buffer, which has room for both to append in place
  a.append(x2);
  b.append(x3);  // no longer the newest: copies its positions out first
  EXPECT_TRUE(tensors_equal(a.tensor(), cat({x1, x2}, 2)));
  EXPECT_TRUE(tensors_equal(b.tensor(), cat({x1, x3}, 2)));
  EXPECT_TRUE(tensors_equal(before, x1));  // a tensor handed out earlier keeps its positions
  a.append(x3);
  EXPECT_TRUE(tensors_equal(b.tensor(), cat({x1, x3}, 2)));
}

TEST(TransformerKVBuffer, ReorderIsIndexSelectAndKeepsTheLayout) {
  manual_seed(3);
  for (Layout layout : {Layout::Rows, Layout::Columns}) {
    KVBuffer buffer(layout);
    const Tensor x1 = randn({2, 2, 3, 4}), x2 = randn({3, 2, 1, 4});
    buffer.append(x1);
    const Tensor index = from_vector<int64_t>({1, 1, 0}, {3});  // 2 rows become 3
    buffer.reorder(index);
    EXPECT_TRUE(tensors_equal(buffer.tensor(), x1.index_select(0, index)));
    EXPECT_TRUE(in_layout(buffer.tensor(), layout));
    buffer.append(x2);
    EXPECT_TRUE(tensors_equal(buffer.tensor(), cat({x1.index_select(0, index), x2}, 2)));
  }
  KVBuffer empty_buffer;
  empty_buffer.reorder(from_vector<int64_t>({0}, {1}));  // nothing to reorder
  EXPECT_FALSE(empty_buffer.tensor().defined());
}

TEST(TransformerKVBuffer, GradientsFlowThroughAppendWhereAutogradRecords) {
  manual_seed(4);
  Tensor x1 = randn({1, 2, 2, 3}).requires_grad_(true),
         x2 = randn({1, 2, 1, 3}).requires_grad_(true);
  KVBuffer buffer(Layout::Columns);
  buffer.append(x1);
  buffer.append(x2);
  (buffer.tensor() * arange(9.0).view({1, 1, 3, 3})).sum().backward();
  EXPECT_TRUE(tensors_equal(x1.grad(), arange(6.0).view({1, 1, 2, 3}).expand({1, 2, 2, 3})));
  EXPECT_TRUE(tensors_equal(x2.grad(), arange(6.0, 9.0).view({1, 1, 1, 3}).expand({1, 2, 1, 3})));
  // With grad mode off the same tensors go into the buffer, in place.
  NoGradGuard no_grad;
  KVBuffer inference(Layout::Columns);
  inference.append(x1);
  inference.append(x2);
  EXPECT_FALSE(inference.tensor().requires_grad());
  EXPECT_TRUE(in_layout(inference.tensor(), Layout::Columns));
  EXPECT_TRUE(tensors_equal(inference.tensor(), cat({x1, x2}, 2)));
}

TEST(TransformerKVBuffer, PositionsOfAnotherShapeAreAnError) {
  KVBuffer buffer;
  EXPECT_SG_ERROR(buffer.append(randn({2, 3, 4})), "KVBuffer::append: expected [B, H, n, D]");
  buffer.append(randn({2, 3, 1, 4}));
  EXPECT_SG_ERROR(buffer.append(randn({2, 3, 1, 5})),
                  "KVBuffer::append: positions of shape [2, 3, 1, 5]");
  EXPECT_SG_ERROR(buffer.append(randn({1, 3, 1, 4})), "do not extend the [2, 3, 1, 4] held");
}

}  // namespace
}  // namespace sg::nn
