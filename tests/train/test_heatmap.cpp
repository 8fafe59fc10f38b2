// Tests for train/heatmap.cpp: the cells of every map read back from the SVG (count, order,
// value, colour, position), the labels and titles, maps made from an attention tensor, and the
// errors for maps that cannot be drawn.
#include "train/heatmap.h"

#include <cmath>

#include "tests/support/testing.h"
#include "tests/train/svg_testing.h"

namespace sg::train {
namespace {

using sg::testing::parse_svg;
using sg::testing::svg_elements;
using sg::testing::SvgElement;

std::vector<std::string> texts(const std::vector<SvgElement>& all, const std::string& cls) {
  std::vector<std::string> out;
  for (const SvgElement& e : svg_elements(all, "text", cls)) out.push_back(e.text);
  return out;
}

TEST(TrainHeatmap, EveryCellCarriesItsValueAndColour) {
  const std::vector<Heatmap> maps = {
      {"head 0", {{0.0, 0.25, 0.75}, {1.0, 0.5, 0.125}}, {"a", "b"}, {"x", "y", "z"}},
      {"head 1", {{0.5, 0.5, 0.0}, {0.0, 0.0, 1.0}}, {"a", "b"}, {"x", "y", "z"}}};
  const auto all = parse_svg(heatmap_grid("Attention", maps, /*columns=*/2, "keys", "queries"));
  EXPECT_EQ(texts(all, "map-title"), (std::vector<std::string>{"head 0", "head 1"}));
  EXPECT_EQ(texts(all, "row-label"), (std::vector<std::string>{"a", "b", "a", "b"}));
  EXPECT_EQ(texts(all, "col-label"), (std::vector<std::string>{"x", "y", "z", "x", "y", "z"}));
  const auto cells = svg_elements(all, "rect", "cell");
  ASSERT_EQ(cells.size(), 12u);  // 2 maps of 2 x 3
  for (size_t m = 0; m < 2; ++m) {
    for (size_t r = 0; r < 2; ++r) {
      for (size_t c = 0; c < 3; ++c) {
        const SvgElement& cell = cells[m * 6 + r * 3 + c];  // row by row, map by map
        EXPECT_DOUBLE_EQ(std::stod(cell.attribute("data-value")), maps[m].values[r][c]);
        EXPECT_EQ(cell.parent, "g");
        // Next column to the right, next row below, the second map right of the first.
        if (c > 0) {
          EXPECT_GT(cell.number("x"), cells[m * 6 + r * 3 + c - 1].number("x"));
        }
        if (r > 0) {
          EXPECT_GT(cell.number("y"), cells[m * 6 + c].number("y"));
        }
        if (m > 0) {
          EXPECT_GT(cell.number("x"), cells[r * 3 + 2].number("x"));
        }
      }
    }
  }
  // White for 0, dark blue for 1, and darker with the value in between.
  EXPECT_EQ(cells[0].attribute("fill"), "rgb(255,255,255)");
  EXPECT_EQ(cells[3].attribute("fill"), "rgb(8,48,107)");
  auto red = [](const SvgElement& cell) {
    return std::stoi(cell.attribute("fill").substr(4));  // "rgb(R,..."
  };
  EXPECT_GT(red(cells[1]), red(cells[4]));  // 0.25 lighter than 0.5
  EXPECT_GT(red(cells[4]), red(cells[2]));  // 0.5 lighter than 0.75
  // The hover text is the value.
  EXPECT_EQ(svg_elements(all, "title").at(1).text, "0.25");
}

TEST(TrainHeatmap, GridRowsAndMapsFromAnAttentionTensor) {
  // weights [3, 2, 2]: three maps, two per grid row, so the third starts a second row.
  Tensor w = sg::from_vector<float>({0.1f, 0.9f, 0.6f, 0.4f, 1, 0, 0, 1, 0.5f, 0.5f, 0.3f, 0.7f},
                                    {3, 2, 2});
  const auto maps = heatmaps_of(w, {"h0", "h1", "h2"}, {"q0", "q1"}, {"k0", "k1"});
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_NEAR(maps[2].values[1][1], 0.7, 1e-6);
  EXPECT_EQ(maps[1].col_labels, (std::vector<std::string>{"k0", "k1"}));
  const auto all = parse_svg(heatmap_grid("t", maps, 2, "keys", "queries"));
  const auto cells = svg_elements(all, "rect", "cell");
  ASSERT_EQ(cells.size(), 12u);
  EXPECT_NEAR(std::stod(cells[1].attribute("data-value")), 0.9, 1e-6);
  EXPECT_EQ(cells[8].number("x"), cells[0].number("x"));  // map 2 under map 0
  EXPECT_GT(cells[8].number("y"), cells[2].number("y"));
  EXPECT_SG_ERROR(heatmaps_of(w, {"one"}, {}, {}), "heatmaps_of: 1 titles for 3 maps");
  EXPECT_SG_ERROR(heatmaps_of(w.select(0, 0), {"x"}, {}, {}),
                  "heatmaps_of: weights must be [N, T, S], got [2, 2]");
}

TEST(TrainHeatmap, MapsThatCannotBeDrawnAreErrors) {
  Heatmap ok{"ok", {{0.5, 0.5}}, {}, {}};
  EXPECT_SG_ERROR(heatmap_grid("t", {}, 1, "x", "y"), "heatmap_grid: no maps to draw");
  EXPECT_SG_ERROR(heatmap_grid("t", {ok}, 0, "x", "y"), "columns must be positive, got 0");
  EXPECT_SG_ERROR(heatmap_grid("t", {ok, {"ragged", {{0.5}}, {}, {}}}, 1, "x", "y"),
                  "map 'ragged' row 0 has 1 values, the first map's rows 2");
  EXPECT_SG_ERROR(heatmap_grid("t", {ok, {"tall", {{0, 0}, {0, 0}}, {}, {}}}, 1, "x", "y"),
                  "map 'tall' has 2 rows, the first map 1");
  EXPECT_SG_ERROR(heatmap_grid("t", {{"nan", {{0.5, std::nan("")}}, {}, {}}}, 1, "x", "y"),
                  "map 'nan' cell [0, 1] is nan");
  EXPECT_SG_ERROR(heatmap_grid("t", {{"empty", {}, {}, {}}}, 1, "x", "y"), "map 'empty' is empty");
  EXPECT_SG_ERROR(heatmap_grid("t", {{"labels", {{0.5, 0.5}}, {"a", "b"}, {}}}, 1, "x", "y"),
                  "has 2 row and 0 column labels for 1 x 2 cells");
}

}  // namespace
}  // namespace sg::train
