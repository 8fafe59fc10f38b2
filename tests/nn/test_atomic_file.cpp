#include "nn/atomic_file.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <vector>

#include "nn/safetensors.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::read_bytes;
using sg::testing::TempDir;
using sg::testing::write_bytes;

// The files in `dir` other than `keep`: a temporary file left behind would show up here.
std::vector<std::string> other_files(const TempDir& dir, const std::string& keep) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().filename() != keep) out.push_back(entry.path().filename().string());
  }
  return out;
}

TEST(SerializeAtomicFile, CommitReplacesTheFileAndLeavesNoTemporary) {
  TempDir dir;
  write_bytes(dir / "f", "old");
  {
    AtomicFile file(dir / "f", "test");
    file.write("new contents", 12);
    EXPECT_TRUE(std::filesystem::exists(file.temp_path()));
    EXPECT_EQ(read_bytes(dir / "f"), "old");  // nothing visible before commit()
    file.commit();
  }
  EXPECT_EQ(read_bytes(dir / "f"), "new contents");
  EXPECT_TRUE(other_files(dir, "f").empty());
}

TEST(SerializeAtomicFile, WithoutCommitTheOldFileStaysAndTheTemporaryGoes) {
  TempDir dir;
  write_bytes(dir / "f", "old");
  {
    AtomicFile file(dir / "f", "test");
    file.write("half", 4);
  }  // e.g. an exception between write() and commit()
  EXPECT_EQ(read_bytes(dir / "f"), "old");
  EXPECT_TRUE(other_files(dir, "f").empty());
}

// A real failure halfway through the data: a file-size limit makes write() fail with EFBIG after
// the first bytes. The existing checkpoint must be untouched and no temporary file left.
TEST(SerializeAtomicFile, FailureMidWriteKeepsTheExistingCheckpoint) {
  TempDir dir;
  std::string path = dir / "ckpt.safetensors";
  save_safetensors(path, {{"w", ones({4})}});
  const std::string before = read_bytes(path);

  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit limited = saved;
  limited.rlim_cur = 4096;                           // the soft limit; raised back below
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // write() then fails instead of killing us
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::string message;
  try {
    save_safetensors(path, {{"w", ones({100000})}});
  } catch (const Error& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_NE(message.find("save_safetensors: cannot write " + path), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_TRUE(other_files(dir, "ckpt.safetensors").empty());
  EXPECT_EQ(load_safetensors(path).tensors[0].second.numel(), 4);
}

TEST(SerializeAtomicFile, FailedRenameNamesThePathAndCleansUp) {
  TempDir dir;
  {
    AtomicFile file(dir / "taken", "save");
    file.write("data", 4);
    // The name is taken, by a non-empty directory, after the file was opened: the rename fails.
    std::filesystem::create_directories(dir.path() / "taken" / "inside");
    EXPECT_SG_ERROR(file.commit(), "save: cannot write " + (dir / "taken") + ": renaming");
  }  // and the temporary file goes with the object
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "taken" / "inside"));
  EXPECT_TRUE(other_files(dir, "taken").empty());
}

TEST(SerializeAtomicFile, UnwritableLocationNamesThePath) {
  TempDir dir;
  EXPECT_SG_ERROR(AtomicFile(dir / "missing/f", "save"),
                  "save: cannot write " + (dir / "missing/f") + ": cannot create");
}

TEST(SerializeAtomicFile, WriteFileAtomicallySaysWhyAWriteFailedAndLeavesNoTemporaryFile) {
  // A file size limit stands in for a full disk: writes past it fail with EFBIG.
  TempDir dir;
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);  // or the kernel would kill the process
  struct rlimit small = old;
  small.rlim_cur = 1000;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string what;
  try {
    write_file_atomically(dir / "metrics.json", std::string(5000, 'x'));
  } catch (const sg::Error& e) {
    what = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_NE(what.find("File too large"), std::string::npos) << what;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "a temporary file was left behind";
  // A folder that does not exist yet is created.
  write_file_atomically(dir / "a/b/c.txt", "text");
  EXPECT_EQ(read_bytes(dir / "a/b/c.txt"), "text");
  // One that cannot be (a file is in the way) is an error naming the operation and the path.
  EXPECT_SG_ERROR(write_file_atomically(dir / "a/b/c.txt/d.txt", "text", "g2p split"),
                  "g2p split: cannot create the directory of " + (dir / "a/b/c.txt/d.txt"));
}

// The rename would replace a FIFO, a device or a directory given as the output with a regular
// file (as root, `--out /dev/full` replaced the machine's /dev/full): refused, and left as it was.
TEST(SerializeAtomicFile, ASpecialFileOrADirectoryIsRefusedAndLeftAsItWas) {
  TempDir dir;
  const std::string fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_SG_ERROR(write_file_atomically(fifo, "text", "save"),
                  "save: cannot write " + fifo + ": it is a FIFO; give the path of a regular file");
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  std::filesystem::create_directory(dir / "folder");
  EXPECT_SG_ERROR(AtomicFile(dir / "folder", "save"), "it is a directory");
  EXPECT_TRUE(std::filesystem::is_directory(dir / "folder"));
  // A link to a FIFO is followed: what it names is checked.
  std::filesystem::create_symlink(fifo, dir / "link");
  EXPECT_SG_ERROR(write_file_atomically(dir / "link", "text"), "it is a FIFO");
  EXPECT_EQ(other_files(dir, "pipe").size(), 2u);  // "folder" and "link": no temporary file
  // The same check alone, for a program to make before the work whose result goes there.
  EXPECT_SG_ERROR(check_can_replace("/dev/null", "--metrics-json"),
                  "--metrics-json: cannot write /dev/null: it is a character device");
  EXPECT_SG_ERROR(check_can_replace(dir / "folder", "--out"), "it is a directory");
  EXPECT_NO_THROW(check_can_replace(dir / "new.json", "--metrics-json"));  // not there yet
  write_file_atomically(dir / "new.json", "{}");
  EXPECT_NO_THROW(check_can_replace(dir / "new.json", "--metrics-json"));  // a regular file
}

}  // namespace
}  // namespace sg::nn
