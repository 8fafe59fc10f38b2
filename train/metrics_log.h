// A run's numbers as JSON files: the final metrics as one object (--metrics-json), written
// atomically, and a log with one JSON object per line (--log-jsonl), appended line by line.
//
//   sg::train::write_json_file("metrics.json", {{"steps", 1000}, {"exact_match", 1.0}});
//   sg::train::append_json_line("log.jsonl", {{"step", 100}, {"loss", 0.41}}, "--log-jsonl");
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace sg::train {

// Writes `json` (indented by 2, then a newline) to `path` atomically: readers see the old file or
// the whole new one. Nothing when path is empty.
void write_json_file(const std::string& path, const nlohmann::json& json);

// Appends `line` and a newline to `path` (created if missing). Every write and the close are
// checked; a failed write is cut off again, so the file never ends in half a line. A FIFO without
// a reader is an error, not a hang. Nothing when path is empty. `what` starts error messages.
void append_json_line(const std::string& path, const nlohmann::json& line,
                      const std::string& what = "append_json_line");

// On --resume from `step`: removes the log's lines of later steps (written after the run's last
// checkpoint, before it was stopped) and a last line cut short by a kill, so that the resumed
// run's lines follow the checkpoint's without repeats. The file is replaced atomically; nothing
// when the path is empty or the file does not exist. `what` starts error messages.
void drop_json_lines_after(const std::string& path, int64_t step, const std::string& what);

}  // namespace sg::train
