// Tests for train/metadata.cpp: every read names the file and the key, numbers and booleans
// parse strictly, JSON values are bounded in depth, and strings that are not UTF-8 are named.
#include "train/metadata.h"

#include "tests/support/testing.h"

namespace sg::train {
namespace {

TEST(TrainMetadata, StrictValuesNamingFileAndKey) {
  const nn::Metadata md = {{"format", "fmt-1"},
                           {"step", "12"},
                           {"bad", "3x"},
                           {"seed", "18446744073709551615"},
                           {"lr", "0.5"},
                           {"flag", "True"},
                           {"config.a", "1"},
                           {"config.b", "x"},
                           {"letters", "[\"a\",\"b\"]"}};
  MetadataReader r(md, "run/last.safetensors");
  r.expect_format("fmt-1", "a test checkpoint");
  EXPECT_SG_ERROR(r.expect_format("fmt-2", "a test checkpoint"),
                  "run/last.safetensors is not a test checkpoint");
  EXPECT_EQ(r.integer("step"), 12);
  EXPECT_EQ(r.unsigned_integer("seed"), 18446744073709551615u);
  EXPECT_EQ(r.real("lr"), 0.5);
  EXPECT_SG_ERROR(r.integer("bad"),
                  "run/last.safetensors: checkpoint metadata 'bad' = '3x' is not a valid integer");
  EXPECT_SG_ERROR(r.boolean("flag"), "checkpoint metadata 'flag' = 'True' is not true or false");
  EXPECT_SG_ERROR(r.text("missing"), "run/last.safetensors: checkpoint metadata has no 'missing'");
  EXPECT_EQ(r.with_prefix("config."), (std::map<std::string, std::string>{{"a", "1"}, {"b", "x"}}));
  EXPECT_EQ(r.strings("letters"), (std::vector<std::string>{"a", "b"}));
  EXPECT_SG_ERROR(r.strings("step"), "checkpoint metadata 'step' is not a list of strings");
}

TEST(TrainMetadata, JsonIsBoundedInDepth) {
  // 100,000 nested lists: refused while parsing, without recursing that deep.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const nn::Metadata md = {{"deep", deep}, {"flat", "[[1]]"}, {"broken", "[1,"}};
  MetadataReader r(md, "f");
  EXPECT_SG_ERROR(r.json("deep"), "f: checkpoint metadata 'deep' is not valid JSON here");
  EXPECT_SG_ERROR(r.json("flat", 1), "nested too deep");
  EXPECT_EQ(r.json("flat", 2).dump(), "[[1]]");
  EXPECT_SG_ERROR(r.json("broken"), "'broken' is not valid JSON here");
  EXPECT_SG_ERROR(r.strings("flat"), "is not valid JSON here");  // a list of lists
}

TEST(TrainMetadata, StringsThatAreNotUtf8AreNamed) {
  EXPECT_EQ(strings_to_json({"a", "é"}, "letters"), "[\"a\",\"é\"]");
  EXPECT_SG_ERROR(strings_to_json({"a", "caf\xe9"}, "letters"),
                  "metadata 'letters': the string 'caf\\xe9' is not valid UTF-8");
}

}  // namespace
}  // namespace sg::train
