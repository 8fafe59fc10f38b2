#include "nn/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "autograd/error.h"

namespace sg::nn {

namespace {

// What a path names, in words, when it is there and is not a regular file.
const char* kind_of_special_file(const struct stat& info) {
  if (S_ISCHR(info.st_mode)) return "a character device";
  if (S_ISBLK(info.st_mode)) return "a block device";
  if (S_ISFIFO(info.st_mode)) return "a FIFO";
  if (S_ISSOCK(info.st_mode)) return "a socket";
  if (S_ISDIR(info.st_mode)) return "a directory";
  return "not a regular file";
}

}  // namespace

void check_can_replace(const std::string& path, const std::string& op) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    SG_FAIL(
        "{}: cannot write {}: it is {}; give the path of a regular file (it is written to a "
        "temporary file, then renamed over the path)",
        op, path, kind_of_special_file(info));
  }
}

AtomicFile::AtomicFile(std::string path, std::string op)
    : path_(std::move(path)),
      op_(std::move(op)),
      temp_path_(path_ + ".tmp-" + std::to_string(::getpid())) {
  // The rename at commit() replaces whatever has the name: a device or a FIFO given as an output
  // (/dev/null, /dev/stdout, a pipe) would be replaced by a regular file -- as root, the
  // machine's own /dev/null. Only a regular file (or a link to one, or nothing) is replaced.
  check_can_replace(path_, op_);
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create " + temp_path_, errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFile::fail(const std::string& what, int error) {
  SG_FAIL("{}: cannot write {}: {}: {}", op_, path_, what, std::strerror(error));
}

void AtomicFile::write(const void* data, size_t nbytes) {
  SG_CHECK(fd_ >= 0 && !committed_, "{}: write to {} after commit()", op_, path_);
  const char* p = static_cast<const char*>(data);
  while (nbytes > 0) {
    // write() may write less than asked (signals, pipes): loop until everything is out.
    ssize_t written = ::write(fd_, p, nbytes);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail("writing " + temp_path_, errno);
    }
    p += written;
    nbytes -= static_cast<size_t>(written);
  }
}

void AtomicFile::commit() {
  SG_CHECK(fd_ >= 0 && !committed_, "{}: commit() of {} called twice", op_, path_);
  if (::fsync(fd_) != 0) fail("flushing " + temp_path_, errno);
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail("closing " + temp_path_, errno);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    fail("renaming " + temp_path_ + " to it", errno);
  }
  committed_ = true;
  // Make the rename durable. Best effort: the file is complete and in place either way, and some
  // file systems refuse fsync on a directory.
  std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  if (dir.empty()) dir = ".";
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void write_file_atomically(const std::string& path, const std::string& text,
                           const std::string& op) {
  std::filesystem::path target(path);
  if (target.has_parent_path()) {
    std::error_code error;
    std::filesystem::create_directories(target.parent_path(), error);
    SG_CHECK(!error, "{}: cannot create the directory of {}: {}", op, path, error.message());
  }
  // Every write, the flush and the close are checked; on a failure the temporary file is removed
  // and the error says what failed (e.g. "No space left on device").
  AtomicFile file(path, op);
  file.write(text.data(), text.size());
  file.commit();
}

}  // namespace sg::nn
