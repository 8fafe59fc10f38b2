// Views share storage, compute strides correctly, reject impossible requests, and route
// gradients back into the base tensor's geometry.
#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::golden;
using testing::random_leaf;
using testing::tensors_equal;

TEST(ViewsTest, ShareStorageAndStrides) {
  Tensor x = arange(24, kFloat32).view({2, 3, 4});
  EXPECT_EQ(x.strides(), (Strides{12, 4, 1}));
  Tensor t = x.transpose(0, 2);
  EXPECT_EQ(t.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(t.strides(), (Strides{1, 4, 12}));
  EXPECT_TRUE(t.shares_storage(x));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.contiguous().is_contiguous());
  EXPECT_FALSE(t.contiguous().shares_storage(x));
  EXPECT_TRUE(x.contiguous().is_same(x));

  Tensor e = tensor({1, 2, 3}).unsqueeze(0).expand({4, 3});
  EXPECT_EQ(e.strides(), (Strides{0, 1}));
  Tensor s = x.slice(2, 1, 4, 2);
  EXPECT_EQ(s.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(s.strides(), (Strides{12, 4, 2}));
  EXPECT_EQ(s.storage_offset(), 1);
  EXPECT_EQ(x.select(1, 2).storage_offset(), 8);

  // A write through a view is seen by the base (and bumps the shared version counter).
  int64_t v0 = x.version();
  x.select(0, 1).select(0, 0).fill_(-1);
  EXPECT_EQ(x.at<float>({1, 0, 3}), -1.0f);
  EXPECT_EQ(x.at<float>({0, 0, 3}), 3.0f);
  EXPECT_GT(x.version(), v0);
}

TEST(ViewsTest, MatchPyTorch) {
  const auto& c = golden("views", "transpose");
  Tensor x = c.input("x");
  EXPECT_TRUE(tensors_equal(x.transpose(0, 2), golden("views", "transpose").output()));
  EXPECT_TRUE(tensors_equal(x.permute({2, 0, 1}), golden("views", "permute").output()));
  EXPECT_TRUE(
      tensors_equal(x.slice(1, 1, 3).slice(2, 0, 4, 2), golden("views", "slice_step").output()));
  EXPECT_TRUE(tensors_equal(x.slice(1, -2, 100).slice(2, -3, -1),
                            golden("views", "slice_negative").output()));
  EXPECT_TRUE(tensors_equal(x.select(1, 1), golden("views", "select").output()));
  EXPECT_TRUE(tensors_equal(golden("views", "expand").input("x").expand({2, 3, 4}),
                            golden("views", "expand").output()));
  EXPECT_TRUE(tensors_equal(x.transpose(1, 2).reshape({2, 12}),
                            golden("views", "reshape_transposed").output()));
  EXPECT_TRUE(tensors_equal(x.unsqueeze(1).squeeze(1).unsqueeze(-1),
                            golden("views", "unsqueeze_squeeze").output()));
  EXPECT_TRUE(tensors_equal(x.flatten(1), golden("views", "flatten").output()));
}

TEST(ViewsTest, ViewNeedsCompatibleStridesReshapeCopies) {
  Tensor x = arange(6, kFloat32).view({2, 3});
  EXPECT_SG_ERROR(x.t().view({6}), "view: shape [6] is not compatible");
  Tensor r = x.t().reshape({6});
  EXPECT_FALSE(r.shares_storage(x));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // Splitting one dim of a transposed view is still a view.
  Tensor y = arange(24, kFloat32).view({4, 6}).t();  // [6, 4] strides [1, 6]
  EXPECT_TRUE(y.view({2, 3, 4}).shares_storage(y));
  EXPECT_TRUE(x.reshape({3, 2}).shares_storage(x));
}

TEST(ViewsTest, RejectBadArguments) {
  Tensor x = zeros({2, 3});
  EXPECT_SG_ERROR(x.transpose(0, 2), "transpose: dim 2 out of range for a 2-D tensor");
  EXPECT_SG_ERROR(x.permute({0, 0}), "permute: dim 0 appears twice in [0, 0]");
  EXPECT_SG_ERROR(x.permute({0}), "permute: got 1 dims [0] for a tensor of shape [2, 3]");
  EXPECT_SG_ERROR(x.expand({4, 3}), "expand: the expanded size 4 must match the existing size 2");
  EXPECT_SG_ERROR(x.expand({3}), "expand: the target shape [3] has fewer dims");
  EXPECT_SG_ERROR(x.select(1, 3), "select: index 3 is out of range for dim 1 of size 3");
  EXPECT_SG_ERROR(x.narrow(1, 2, 2), "narrow: start 2 + length 2 exceeds dim 1 of size 3");
  // start + length past int64 once wrapped around into a "valid" empty narrow.
  EXPECT_SG_ERROR(x.narrow(1, 1, std::numeric_limits<int64_t>::max()),
                  "narrow: start 1 + length 9223372036854775807 exceeds dim 1 of size 3");
  // A negative size other than -1, or more elements than 64 bits count, made a tensor whose
  // numel() was negative or wrapped: sums of -15 elements, gradients from nowhere.
  EXPECT_SG_ERROR(ones({1, 3}).expand({-5, 3}),
                  "expand: the target shape [-5, 3] has a negative size (shape [1, 3])");
  EXPECT_SG_ERROR(ones({1, 1}).expand({int64_t{1} << 40, int64_t{1} << 40}),
                  "shape [1099511627776, 1099511627776] has more elements than fit");
  EXPECT_SG_ERROR(x.slice(0, 0, 2, 0), "slice: step must be positive");
  EXPECT_SG_ERROR(x.view({4, 2}), "view: shape [4, 2] is invalid for input of size 6");
  EXPECT_SG_ERROR(x.unsqueeze(3), "unsqueeze: dim 3 out of range");
  EXPECT_EQ(x.slice(1, 5, 10).shape(), (Shape{2, 0}));  // Python-style clamping
  EXPECT_EQ(x.expand({4, -1, 3}).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(zeros({1, 3, 1}).squeeze().shape(), (Shape{3}));
  EXPECT_EQ(zeros({1, 3, 1}).squeeze(0).shape(), (Shape{3, 1}));
  EXPECT_EQ(zeros({2, 3}).squeeze(0).shape(), (Shape{2, 3}));
}

TEST(ViewsTest, Gradcheck) {
  Tensor x = random_leaf({2, 3, 4});
  EXPECT_GRADCHECK([](const std::vector<Tensor>& in) { return in[0].view({6, 4}) * 1.5; }, {x});
  EXPECT_GRADCHECK(
      [](const std::vector<Tensor>& in) { return in[0].transpose(0, 2).reshape({24}); }, {x});
  EXPECT_GRADCHECK(
      [](const std::vector<Tensor>& in) {
        return in[0].permute({1, 2, 0}).exp();
      },
      {x});
  EXPECT_GRADCHECK([](const std::vector<Tensor>& in) { return in[0].slice(2, 1, 4, 2); }, {x});
  EXPECT_GRADCHECK(
      [](const std::vector<Tensor>& in) { return in[0].select(1, -1) * in[0].select(1, 0); }, {x});
  EXPECT_GRADCHECK([](const std::vector<Tensor>& in) { return in[0].narrow(0, 1, 1).squeeze(0); },
                   {x});
  EXPECT_GRADCHECK(
      [](const std::vector<Tensor>& in) {
        return in[0].unsqueeze(1).expand({2, 5, 3, 4});
      },
      {x});
  EXPECT_GRADCHECK([](const std::vector<Tensor>& in) { return in[0].transpose(0, 1).contiguous(); },
                   {x});
  EXPECT_GRADCHECK([](const std::vector<Tensor>& in) { return in[0].to(kFloat32).to(kFloat64); },
                   {x}, GradcheckOptions{.eps = 1e-3, .atol = 1e-3, .rtol = 1e-2});
}

TEST(ViewsTest, SliceGradientLandsInTheRightPlace) {
  Tensor x = zeros({3, 4}, TensorOptions(kFloat64).requires_grad(true));
  x.slice(1, 1, 4, 2).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(),
            (std::vector<double>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
}

// ---- backward against PyTorch (float64, from a random upstream gradient) ----------------------

TEST(ViewsBackward, MatchPyTorch) {
  using In = const testing::GoldenInputs&;
  testing::expect_backward_goldens(
      "views",
      {
          {"transpose_grad", [](In in) { return in.at("x").transpose(0, 2); }},
          {"permute_grad",
           [](In in) {
             return in.at("x").permute({2, 0, 1});
           }},
          {"slice_step_grad", [](In in) { return in.at("x").slice(1, 1, 3).slice(2, 0, 4, 2); }},
          {"slice_negative_grad",
           [](In in) { return in.at("x").slice(1, -2, 3).slice(2, -3, -1); }},
          {"narrow_grad", [](In in) { return in.at("x").narrow(2, 1, 2); }},
          {"select_grad", [](In in) { return in.at("x").select(1, 1); }},
          {"select_negative_grad", [](In in) { return in.at("x").select(-1, -1); }},
          {"expand_grad",
           [](In in) {
             return in.at("x").slice(1, 0, 1).expand({2, 3, 4});
           }},
          {"view_grad",
           [](In in) {
             return in.at("x").view({4, 6});
           }},
          {"reshape_transposed_grad",
           [](In in) {
             return in.at("x").transpose(1, 2).reshape({2, 12});
           }},
          {"unsqueeze_squeeze_grad",
           [](In in) { return in.at("x").unsqueeze(1).squeeze(1).unsqueeze(-1); }},
          {"flatten_grad", [](In in) { return in.at("x").flatten(1); }},
          {"chain_grad",
           [](In in) {
             return in.at("x")
                 .permute({1, 0, 2})
                 .slice(0, 1, 3)
                 .slice(2, 0, 4, 3)
                 .transpose(0, 1)
                 .reshape({-1});
           }},
      });
}

}  // namespace
}  // namespace sg
