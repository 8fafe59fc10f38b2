// Tests for train/progress.cpp: what a log file and a terminal see: a line every N steps and
// at the last when not a terminal, a bar redrawn in place on one, messages that stay, and the
// speed and ETA from a clock the test controls.
#include "train/progress.h"

#include <cmath>
#include <cstdio>

#include "tests/support/testing.h"

namespace sg::train {
namespace {

// Progress output captured in memory, with a clock that moves when told.
struct Captured {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* file = ::open_memstream(&buffer, &size);
  double seconds = 0;
  ~Captured() {
    std::fclose(file);
    std::free(buffer);
  }
  std::string text() {
    std::fflush(file);
    return std::string(buffer, size);
  }
  ProgressOptions options(int64_t first, int64_t total, bool interactive, int64_t every) {
    return {first, total, interactive, every, file, [this] { return seconds; }};
  }
};

TEST(TrainProgress, LogsGetALineEveryNStepsAndAtTheEnd) {
  Captured out;
  Progress p(out.options(/*first=*/0, /*total=*/250, /*interactive=*/false, /*every=*/100));
  for (int64_t step = 1; step <= 250; ++step) {
    out.seconds = static_cast<double>(step) / 50;  // 50 steps a second
    p.update({step, 0.5, 0.9, 1e-3});
  }
  p.finish();
  EXPECT_EQ(out.text(),
            "step 100/250 loss 0.5000 acc  90.0% lr 1.00e-03 50.0 steps/s ETA 3s\n"
            "step 200/250 loss 0.5000 acc  90.0% lr 1.00e-03 50.0 steps/s ETA 1s\n"
            "step 250/250 loss 0.5000 acc  90.0% lr 1.00e-03 50.0 steps/s ETA 0s\n");
}

// A task without token counts (a regression) gives NaN for the accuracy: no "acc" field then.
TEST(TrainProgress, ANaNAccuracyIsLeftOut) {
  Captured out;
  Progress p(out.options(/*first=*/0, /*total=*/2, /*interactive=*/false, /*every=*/1));
  out.seconds = 1;
  p.update({2, 0.25, std::nan(""), 1e-3});
  EXPECT_EQ(out.text(), "step 2/2 loss 0.2500 lr 1.00e-03 2.0 steps/s ETA 0s\n");
}

TEST(TrainProgress, AResumedRunMeasuresOnlyItsOwnSteps) {
  Captured out;
  Progress p(out.options(/*first=*/900, /*total=*/1000, false, 10));
  out.seconds = 2;  // 20 steps of this process in 2 s: 10 steps/s, 80 to go
  EXPECT_EQ(p.line({920, 0.25, 0.5, 2e-4}),
            "920/1000 loss 0.2500 acc  50.0% lr 2.00e-04 10.0 steps/s ETA 8s");
}

TEST(TrainProgress, ATerminalGetsABarRedrawnInPlaceAndMessagesThatStay) {
  Captured out;
  Progress p(out.options(0, 8, /*interactive=*/true, 100));
  out.seconds = 1;
  p.update({2, 1.0, 0.5, 0.1});
  p.message("step 2  held-out exact match 10%");
  p.update({8, 0.5, 1.0, 0.1});
  p.finish();
  const std::string bar2 = "[======>                 ]", bar8 = "[========================]";
  EXPECT_EQ(out.text(),
            "\r\033[K" + bar2 + " 2/8 loss 1.0000 acc  50.0% lr 1.00e-01 2.0 steps/s ETA 3s" +
                "\r\033[Kstep 2  held-out exact match 10%\n" + "\r\033[K" + bar2 +
                " 2/8 loss 1.0000 acc  50.0% lr 1.00e-01 2.0 steps/s ETA 3s" + "\r\033[K" + bar8 +
                " 8/8 loss 0.5000 acc 100.0% lr 1.00e-01 8.0 steps/s ETA 0s\n");
}

}  // namespace
}  // namespace sg::train
