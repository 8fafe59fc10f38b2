#include "train/metrics_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "autograd/error.h"
#include "nn/atomic_file.h"

namespace sg::train {

void write_json_file(const std::string& path, const nlohmann::json& json) {
  if (path.empty()) return;
  std::string text;
  try {
    text = json.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {
    SG_FAIL("write_json_file: {}: {}", path, e.what());  // e.g. a string that is not UTF-8
  }
  nn::write_file_atomically(path, text, "write_json_file");
}

void append_json_line(const std::string& path, const nlohmann::json& line,
                      const std::string& what) {
  if (path.empty()) return;
  std::string text;
  try {
    text = line.dump() + "\n";
  } catch (const nlohmann::json::exception& e) {
    SG_FAIL("{}: {}: {}", what, path, e.what());
  }
  // O_NONBLOCK: opening a FIFO that no process reads fails at once instead of waiting for one.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
  SG_CHECK(fd >= 0, "{}: cannot open {}: {}", what, path, std::strerror(errno));
  struct stat info {};
  const bool regular = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      if (regular && ::ftruncate(fd, info.st_size) != 0) { /* the error below says enough */
      }
      ::close(fd);
      SG_FAIL("{}: cannot write {}: {}", what, path, std::strerror(error));
    }
    done += static_cast<size_t>(n);
  }
  SG_CHECK(::close(fd) == 0, "{}: cannot write {}: {}", what, path, std::strerror(errno));
}

void drop_json_lines_after(const std::string& path, int64_t step, const std::string& what) {
  if (path.empty() || !std::filesystem::is_regular_file(path)) return;
  std::ifstream in(path);
  SG_CHECK(in.good(), "{}: cannot read {}", what, path);
  std::string kept, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const bool later = j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
                       j["step"].get<int64_t>() > step;
    // A line that is not JSON is kept unless it is the last one (cut short by a kill).
    if (later || (j.is_discarded() && in.peek() == std::ifstream::traits_type::eof())) {
      dropped = true;
      continue;
    }
    kept += line + "\n";
  }
  if (dropped) nn::write_file_atomically(path, kept, what);
}

}  // namespace sg::train
