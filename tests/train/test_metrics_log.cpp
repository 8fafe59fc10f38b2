// Tests for train/metrics_log.cpp: the metrics file is whole JSON, written atomically; the log
// gets one complete line per call, and a full disk, a FIFO without a reader or text that is not
// UTF-8 is an error naming the file, never a hang or half a line.
#include "train/metrics_log.h"

#include <sys/stat.h>

#include <filesystem>

#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"

namespace sg::train {
namespace {

using sg::testing::read_bytes;
using sg::testing::TempDir;

TEST(TrainMetricsLog, MetricsFileIsOneJsonObject) {
  TempDir dir;
  const std::string path = dir / "sub/metrics.json";  // the folder is created
  write_json_file(path, {{"steps", 1000}, {"exact_match", 1.0}, {"first_perfect_step", nullptr}});
  EXPECT_EQ(read_bytes(path),
            "{\n  \"exact_match\": 1.0,\n  \"first_perfect_step\": null,\n  \"steps\": 1000\n}\n");
  write_json_file("", {{"ignored", 1}});  // no path: nothing written
  EXPECT_SG_ERROR(write_json_file(dir / "bad.json", {{"word", "caf\xe9"}}), "bad.json");
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.json"));
}

TEST(TrainMetricsLog, LogGetsOneWholeLinePerCall) {
  TempDir dir;
  const std::string path = dir / "log.jsonl";
  append_json_line(path, {{"step", 1}, {"loss", 2.5}}, "--log-jsonl");
  append_json_line(path, {{"step", 2}, {"loss", 1.5}}, "--log-jsonl");
  EXPECT_EQ(read_bytes(path), "{\"loss\":2.5,\"step\":1}\n{\"loss\":1.5,\"step\":2}\n");
  EXPECT_SG_ERROR(append_json_line("/dev/full", {{"step", 3}}, "--log-jsonl"),
                  "--log-jsonl: cannot write /dev/full: No space left on device");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_SG_ERROR(append_json_line(dir / "fifo", {{"step", 3}}, "--log-jsonl"),
                  "--log-jsonl: cannot open " + (dir / "fifo"));
  EXPECT_SG_ERROR(append_json_line(dir / "missing/log.jsonl", {{"a", 1}}, "--log-jsonl"),
                  "No such file or directory");
  EXPECT_SG_ERROR(append_json_line(path, {{"word", "caf\xe9"}}, "--log-jsonl"), "--log-jsonl");
  EXPECT_EQ(read_bytes(path), "{\"loss\":2.5,\"step\":1}\n{\"loss\":1.5,\"step\":2}\n");
}

}  // namespace
}  // namespace sg::train
