// AtomicFile: write a file so that readers see either the old file or the complete new one, never
// a half-written one. Checkpoints are written this way.
//
//   sg::nn::AtomicFile file("ckpt.safetensors", "save");
//   file.write(bytes.data(), bytes.size());   // goes to "ckpt.safetensors.tmp-<pid>"
//   file.commit();                            // fsync, then rename over "ckpt.safetensors"
//   sg::nn::write_file_atomically("metrics.json", text);   // the same for a whole text at once
//
// Note [Atomic writes]: rename() within one directory replaces the target in one step (POSIX), so
// a crash before it leaves the old file intact and one after it leaves the new one. The fsync
// before the rename makes sure the new name never points at data still in the page cache when the
// power goes; the fsync of the directory afterwards makes the rename itself durable. If anything
// fails, or the object is destroyed without commit(), the temporary file is removed.
#pragma once

#include <cstddef>
#include <string>

namespace sg::nn {

class AtomicFile {
 public:
  // Creates "<path>.tmp-<pid>" (the pid keeps two processes from sharing a temporary file). `op`
  // starts every error message, e.g. "save: cannot write ckpt.safetensors: No space left on
  // device".
  AtomicFile(std::string path, std::string op);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t nbytes);
  void commit();  // flush to disk and rename over `path`; the object is done afterwards

  const std::string& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail(const std::string& what, int error);

  std::string path_;
  std::string op_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// The check AtomicFile makes before it writes, for a program to make before hours of work whose
// result goes there: an error (starting with `op`) when `path` exists and is not a regular file
// (or a link to one), which the rename would replace: a device, a FIFO, a directory.
void check_can_replace(const std::string& path, const std::string& op);

// Writes `text` to `path` through an AtomicFile, creating the parent directories first; `op`
// starts error messages ("write: cannot write metrics.json: No space left on device").
void write_file_atomically(const std::string& path, const std::string& text,
                           const std::string& op = "write");

}  // namespace sg::nn
