// compare_captures (nn/capture_compare.h): entries in execution order, the first one beyond the
// tolerance named, missing entries and shape mismatches diverge.
#include "nn/capture_compare.h"

#include "autograd/autograd.h"
#include "tests/support/testing.h"

namespace {

using sg::Tensor;
using sg::nn::SafetensorsFile;

SafetensorsFile capture(std::vector<std::pair<std::string, Tensor>> tensors,
                        const std::string& order = "") {
  SafetensorsFile file;
  file.tensors = std::move(tensors);
  if (!order.empty()) file.metadata["order"] = order;
  return file;
}

TEST(CaptureCompare, IdenticalCapturesHaveNoDivergence) {
  sg::manual_seed(2);
  Tensor a = sg::randn({3, 4}), b = sg::randn({4});
  auto ref = capture({{"embed", a}, {"loss", b}});
  auto report = sg::nn::compare_captures(ref, ref, 1e-6, 1e-5);
  EXPECT_FALSE(report.first_divergent.has_value());
  ASSERT_EQ(report.entries.size(), 2u);
  EXPECT_EQ(report.entries[0].max_abs, 0.0);
  EXPECT_NE(report.str().find("no divergence beyond atol 1e-06 + rtol 1e-05"), std::string::npos)
      << report.str();
}

TEST(CaptureCompare, NamesTheFirstEntryInExecutionOrderBeyondTolerance) {
  // File order is alphabetical (as many writers sort); "order" says the encoder ran first.
  Tensor x = sg::full({2, 2}, 1.0);
  auto ref = capture({{"decoder", x}, {"encoder", x}, {"loss", x}}, "encoder,decoder,loss");
  auto cand = capture({{"decoder", x + 0.5}, {"encoder", x + 1e-7}, {"loss", x + 0.1}});
  auto report = sg::nn::compare_captures(ref, cand, 1e-5, 1e-4);
  ASSERT_TRUE(report.first_divergent.has_value());
  EXPECT_EQ(report.entries[*report.first_divergent].name, "decoder");
  EXPECT_EQ(report.entries[0].name, "encoder");
  EXPECT_FALSE(report.entries[0].diverges);  // 1e-7 is within tolerance
  EXPECT_NEAR(report.entries[1].max_abs, 0.5, 1e-6);
  EXPECT_NEAR(report.entries[1].max_rel, 0.5, 1e-6);
  EXPECT_NE(report.str().find("first divergence beyond atol 1e-05 + rtol 0.0001"),
            std::string::npos)
      << report.str();
  EXPECT_NE(report.str().find(": decoder (max abs 0.5"), std::string::npos) << report.str();
}

TEST(CaptureCompare, MissingEntriesShapesAndNansDiverge) {
  Tensor x = sg::zeros({3});
  auto ref = capture({{"a", x}, {"b", x}, {"c", x}});
  auto cand = capture({{"b", sg::zeros({4})}, {"c", sg::full({3}, std::nan(""))}, {"extra", x}});
  auto report = sg::nn::compare_captures(ref, cand, 1e-3, 1e-3);
  ASSERT_EQ(report.entries.size(), 4u);
  EXPECT_EQ(report.entries[0].problem, "missing from the candidate");
  EXPECT_EQ(report.entries[1].problem, "shapes differ: [3] and [4]");
  EXPECT_TRUE(report.entries[2].diverges);  // NaN against 0
  EXPECT_EQ(report.entries[3].problem, "missing from the reference");
  EXPECT_EQ(*report.first_divergent, 0u);
  EXPECT_SG_ERROR(sg::nn::compare_captures(ref, cand, -1, 0), "tolerances must be finite");
}

TEST(CaptureCompare, AnInfinityDivergesFromAnythingButItself) {
  // The tolerance test alone passed inf against 0 (inf <= atol + rtol * inf).
  auto ref = capture({{"a", sg::full({2}, INFINITY)},
                      {"b", sg::full({2}, INFINITY)},
                      {"c", sg::full({2}, std::nan(""))},
                      {"d", sg::zeros({2})}});
  auto cand = capture({{"a", sg::zeros({2})},
                       {"b", sg::full({2}, INFINITY)},
                       {"c", sg::full({2}, std::nan(""))},
                       {"d", sg::full({2}, -INFINITY)}});
  auto report = sg::nn::compare_captures(ref, cand, 1e-5, 1e-5);
  ASSERT_EQ(report.entries.size(), 4u);
  EXPECT_TRUE(report.entries[0].diverges);
  EXPECT_FALSE(report.entries[1].diverges);  // the same infinity
  EXPECT_FALSE(report.entries[2].diverges);  // NaN where the reference has NaN
  EXPECT_TRUE(report.entries[3].diverges);
  EXPECT_EQ(*report.first_divergent, 0u);
}

}  // namespace
