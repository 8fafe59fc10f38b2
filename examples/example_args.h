// What the chapter examples share around their lessons: their command line and the files they
// write. Both are strict, as the library is: an unknown option (a typo of --quick ran the whole
// example) or --out without a folder stops the example with a message naming it (exit 2), and a
// file that cannot be written stops it (exit 1) instead of printing "wrote" over nothing.
#pragma once

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace example {

// Every example takes the same two flags (CTest runs each with --quick).
struct Args {
  bool quick = false;         // --quick: a shorter run, where the example has a long part
  std::string out_dir = ".";  // --out DIR: where the example's files go (made if missing)
};

inline Args parse_args(int argc, char** argv) {
  const std::string program = argc > 0 ? argv[0] : "example";
  const auto refuse = [&](const std::string& why) {
    fmt::print(stderr, "{}: {}\nusage: {} [--quick] [--out DIR]\n", program, why, program);
    std::exit(2);
  };
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--quick") {
      args.quick = true;
    } else if (arg == "--out") {
      if (i + 1 == argc || std::string_view(argv[i + 1]).empty()) refuse("--out needs a folder");
      args.out_dir = argv[++i];
    } else {
      refuse(fmt::format("unknown argument '{}'", arg));
    }
  }
  return args;
}

// Writes `text` to `path` (its folder made first), or stops the example with the reason.
inline void write_text(const std::string& path, const std::string& text) {
  const auto fail = [&](const std::string& why) {
    fmt::print(stderr, "error: cannot write {}: {}\n", path, why);
    std::exit(1);
  };
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!parent.empty()) std::filesystem::create_directories(parent, error);
  if (error) fail(error.message());
  std::ofstream out(path, std::ios::binary);
  if (!out) fail("cannot open it");
  out << text;
  out.close();
  if (!out) fail("the write failed");
}

}  // namespace example
