// The checkpoint loader under attack: thousands of mutants of real checkpoints (written here, by
// save()), each loaded with load_safetensors and, when that accepts it, into the model it came
// from. Every mutant must either load or fail with an sg::Error: no crash, no other exception, no
// hang, no huge allocation, and a failed load leaves the model unchanged. Deterministic (a seeded
// mutator), so a failure names a mutant that can be replayed; the sanitizer build in .ci/run runs
// it too. SG_FUZZ_MUTANTS=N and SG_FUZZ_SEED=S run more, or others.
//
// Mutations: truncations, header lengths (0, huge, off by a few), byte flips, insertions and
// deletions, and edits of the parsed header: huge and overflowing shapes, negative, fractional
// and non-numeric sizes, bad data_offsets, wrong and unknown dtypes, missing and extra fields,
// duplicate names, nesting 100,000 deep in a shape, in data_offsets and in __metadata__, and
// metadata extremes (long values, many keys, non-string values).
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include <nlohmann/json.hpp>

#include "nn/nn.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using Json = nlohmann::ordered_json;
using sg::testing::bit_identical;
using sg::testing::read_bytes;
using sg::testing::TempDir;
using sg::testing::write_bytes;

int64_t env_or(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoll(value) : fallback;
}

// The three parts of a safetensors file.
struct Parts {
  std::string header, data;
  bool ok = false;
};

Parts split(const std::string& file) {
  Parts p;
  if (file.size() < 8) return p;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(file[i])} << (8 * i);
  if (n > file.size() - 8) return p;
  p.header = file.substr(8, n);
  p.data = file.substr(8 + n);
  p.ok = true;
  return p;
}

std::string length_prefix(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

std::string join(const std::string& header, const std::string& data) {
  return length_prefix(header.size()) + header + data;
}

std::string deep(size_t depth, const std::string& open, const std::string& close) {
  std::string s;
  s.reserve(depth * (open.size() + close.size()) + 1);
  for (size_t i = 0; i < depth; ++i) s += open;
  s += "1";
  for (size_t i = 0; i < depth; ++i) s += close;
  return s;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  // One mutant of `file`, and what was done to it (for the failure message).
  std::pair<std::string, std::string> mutate(const std::string& file) {
    switch (pick(6)) {
      case 0: {
        size_t keep = pick(file.size());
        return {file.substr(0, keep), "truncated to " + std::to_string(keep) + " bytes"};
      }
      case 1:
        return header_length(file);
      case 2:
        return flip_bytes(file);
      case 3:
        return splice(file);
      default:
        return edit_header(file);
    }
  }

 private:
  size_t pick(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }
  template <typename T>
  const T& one_of(const std::vector<T>& items) {
    return items[pick(items.size())];
  }

  std::pair<std::string, std::string> header_length(std::string file) {
    Parts p = split(file);
    const uint64_t n = p.header.size();
    const uint64_t value = one_of<uint64_t>(
        {0, 1, 7, n - 1, n + 1, n + 8, n - 8, file.size(), file.size() - 7, uint64_t{1} << 31,
         uint64_t{1} << 40, uint64_t{1} << 63, ~uint64_t{0}, ~uint64_t{0} - 7, 100'000'001});
    std::string prefix = length_prefix(value);
    std::copy(prefix.begin(), prefix.end(), file.begin());
    return {file, "header length set to " + std::to_string(value)};
  }

  std::pair<std::string, std::string> flip_bytes(std::string file) {
    const size_t flips = 1 + pick(8);
    // Mostly in the header and its length, where the structure is.
    Parts p = split(file);
    const size_t span = p.ok && pick(4) != 0 ? 8 + p.header.size() : file.size();
    for (size_t i = 0; i < flips; ++i) {
      file[pick(span)] ^= static_cast<char>(1 + pick(255));
    }
    return {file, std::to_string(flips) + " byte(s) flipped in the first " + std::to_string(span)};
  }

  std::pair<std::string, std::string> splice(std::string file) {
    const size_t at = pick(file.size() + 1), count = 1 + pick(16);
    if (pick(2) == 0) {
      file.insert(at, std::string(count, static_cast<char>(pick(256))));
      return {file, std::to_string(count) + " bytes inserted at " + std::to_string(at)};
    }
    file.erase(at, count);
    return {file, std::to_string(count) + " bytes deleted at " + std::to_string(at)};
  }

  // A header edit; the length prefix is made to match the new header (or left, sometimes).
  std::pair<std::string, std::string> edit_header(const std::string& file) {
    Parts p = split(file);
    Json header = Json::parse(p.header);
    std::vector<std::string> names;
    for (const auto& [name, _] : header.items()) {
      if (name != "__metadata__") names.push_back(name);
    }
    const std::string name = one_of(names);
    Json& entry = header[name];
    std::string what;
    std::string splice_in;  // raw JSON text that replaces the placeholder string
    const std::string placeholder = "\"@RAW@\"";
    constexpr uint64_t kBig = uint64_t{1} << 62;
    switch (pick(12)) {
      case 0: {
        std::vector<Json> shapes = {
            Json::array({kBig + 1, 4}),
            Json::array({~uint64_t{0}}),
            Json::array({uint64_t{1} << 63, 2}),
            Json::array({uint64_t{1} << 32, uint64_t{1} << 32}),
            Json::array({uint64_t{1} << 31, uint64_t{1} << 31, 4}),
            Json::array({-1, 4}),
            Json::array({2.5}),
            Json::array({"4"}),
            Json::array({nullptr}),
            Json::array(),
            Json::array({0, kBig}),
            Json::array({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                         1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                         1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}),
            Json("3"),
            Json::object()};
        entry["shape"] = one_of(shapes);
        what = "shape of '" + name + "' set to " + entry["shape"].dump();
        break;
      }
      case 1: {
        Json& offsets = entry["data_offsets"];
        uint64_t begin = offsets.is_array() && offsets.size() == 2 ? offsets[0].get<uint64_t>() : 0;
        uint64_t end = offsets.is_array() && offsets.size() == 2 ? offsets[1].get<uint64_t>() : 0;
        std::vector<Json> values = {Json::array({end, begin}),
                                    Json::array({begin + 1, end}),
                                    Json::array({begin, end + 1}),
                                    Json::array({begin, end - 1}),
                                    Json::array({0, ~uint64_t{0}}),
                                    Json::array({~uint64_t{0} - 3, ~uint64_t{0}}),
                                    Json::array({begin}),
                                    Json::array({begin, end, end}),
                                    Json::array({-4, end}),
                                    Json::array({1.5, end}),
                                    Json::array({begin, kBig}),
                                    Json(nullptr),
                                    Json::array({begin + 4, end + 4})};
        offsets = one_of(values);
        what = "data_offsets of '" + name + "' set to " + offsets.dump();
        break;
      }
      case 2: {
        entry["dtype"] = one_of<Json>({"F16", "BF16", "I32", "U8", "I8", "F32", "F64", "I64",
                                       "BOOL", "", "f32", 5, nullptr, Json::array({"F32"})});
        what = "dtype of '" + name + "' set to " + entry["dtype"].dump();
        break;
      }
      case 3: {
        const std::string key = one_of<std::string>({"dtype", "shape", "data_offsets"});
        entry.erase(key);
        what = "field " + key + " of '" + name + "' removed";
        break;
      }
      case 4: {
        entry["extra"] = 1;
        what = "unknown field added to '" + name + "'";
        break;
      }
      case 5: {
        const std::string field = one_of<std::string>({"shape", "data_offsets"});
        const size_t depth = one_of<size_t>({17, 1000, 100'000});
        entry[field] = "@RAW@";
        splice_in = deep(depth, "[", "]");
        what = field + " of '" + name + "' nested " + std::to_string(depth) + " deep";
        break;
      }
      case 6: {
        const size_t depth = one_of<size_t>({17, 1000, 100'000});
        header["__metadata__"] = Json::object({{"k", "@RAW@"}});
        splice_in = pick(2) == 0 ? deep(depth, "[", "]") : deep(depth, "{\"a\":", "}");
        what = "__metadata__ nested " + std::to_string(depth) + " deep";
        break;
      }
      case 7: {
        Json metadata = Json::object();
        switch (pick(5)) {
          case 0:
            metadata["long"] = std::string(1 << 20, 'x');
            break;
          case 1:
            for (int i = 0; i < 1000; ++i) metadata["k" + std::to_string(i)] = "v";
            break;
          case 2:
            metadata["n"] = 42;
            break;
          case 3:
            metadata["bad\xff"] = "v\xfe";
            break;
          default:
            metadata = Json::array({"a"});
            break;
        }
        header["__metadata__"] = metadata;
        what = "__metadata__ set to an extreme value";
        break;
      }
      case 8: {
        header = Json::array({header});
        what = "header wrapped in an array";
        break;
      }
      case 9: {
        const Json copy = entry;  // inserting a key may move `entry`
        header[std::string(1 << 16, 'n')] = copy;
        what = "a 64 KiB tensor name added, duplicating '" + name + "'";
        break;
      }
      case 10: {
        // A duplicate name: the text keeps both (the parser would keep one).
        std::string text = header.dump();
        const std::string key = "\"" + name + "\":";
        const size_t at = text.find(key);
        const size_t end = text.find('}', at);
        splice_in = text.substr(at, end - at + 1) + ",";
        header = Json::parse(text);
        header["__dup__"] = "@RAW@";
        what = "tensor '" + name + "' described twice";
        std::string out = header.dump();
        const size_t dup = out.find("\"__dup__\":" + placeholder);
        out.replace(dup, std::string("\"__dup__\":").size() + placeholder.size(),
                    splice_in.substr(0, splice_in.size() - 1));
        return {join(out, p.data), what};
      }
      default: {
        header.erase(name);
        what = "tensor '" + name + "' removed from the header";
        break;
      }
    }
    std::string text = header.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (!splice_in.empty()) {
      const size_t at = text.find(placeholder);
      text.replace(at, placeholder.size(), splice_in);
    }
    if (pick(8) == 0) {  // the old length prefix: the header and the data now disagree
      return {length_prefix(p.header.size()) + text + p.data, what + " (old header length)"};
    }
    return {join(text, p.data), what};
  }

  std::mt19937_64 rng_;
};

// A small model and its optimizer after one step, so the checkpoints hold real values, every
// kind of tensor the library saves (parameters, buffers, Adam moments, step counts) and metadata.
struct Corpus {
  std::shared_ptr<Transformer> model;
  std::vector<std::string> files;  // the bytes of each real checkpoint
};

Corpus make_corpus(const TempDir& dir) {
  manual_seed(3);
  TransformerOptions o;
  o.src_vocab = 7, o.tgt_vocab = 7, o.d_model = 8, o.heads = 2, o.d_ff = 16;
  o.num_encoder_layers = 1, o.num_decoder_layers = 1, o.max_len = 6;
  Corpus c;
  c.model = std::make_shared<Transformer>(o);
  optim::Adam adam(c.model->parameters(), optim::AdamOptions{.lr = 1e-3});
  Tensor src = from_vector<int64_t>({1, 2, 3, 4, 1, 5, 6, 0}, {2, 4});
  c.model->forward(src, src).sum().backward();
  adam.step();
  save(*c.model, dir / "model.safetensors", {{"config", o.to_string()}, {"step", "1"}});
  save(adam, dir / "adam.safetensors");
  save_safetensors(dir / "mixed.safetensors",
                   {{"f64", from_vector<double>({0.5, -2}, {2})},
                    {"i64", from_vector<int64_t>({7}, {1, 1})},
                    {"mask", from_vector<bool>({true, false, true}, {3})},
                    {"empty", zeros({0, 3})},
                    {"scalar", scalar_tensor(1.5)}},
                   {{"note", "a"}});
  for (const char* name : {"model.safetensors", "adam.safetensors", "mixed.safetensors"}) {
    c.files.push_back(read_bytes(dir / name));
  }
  return c;
}

TEST(CheckpointFuzz, EveryMutantLoadsOrFailsWithAnError) {
  TempDir dir;
  Corpus corpus = make_corpus(dir);
  NamedTensors original = corpus.model->state_dict();
  NamedTensors snapshot;
  for (const auto& [name, t] : original) snapshot.emplace_back(name, t.detach().clone());

  const int64_t mutants = env_or("SG_FUZZ_MUTANTS", 3000);
  const uint64_t seed = static_cast<uint64_t>(env_or("SG_FUZZ_SEED", 20261124));
  Mutator mutator(seed);
  int64_t loaded = 0, refused = 0, into_model = 0;
  const std::string path = dir / "mutant.safetensors";
  for (int64_t i = 0; i < mutants; ++i) {
    const size_t which = static_cast<size_t>(i) % corpus.files.size();
    auto [bytes, what] = mutator.mutate(corpus.files[which]);
    write_bytes(path, bytes);
    const std::string label = "mutant " + std::to_string(i) + " (seed " + std::to_string(seed) +
                              ", file " + std::to_string(which) + "): " + what;
    try {
      load_safetensors(path);
      ++loaded;
    } catch (const Error& e) {
      ++refused;
      EXPECT_LT(std::string(e.what()).size(), 2000u) << label;  // messages quote a bounded part
      continue;
    } catch (const std::exception& e) {
      ADD_FAILURE() << label << ": not an sg::Error: " << e.what();
      continue;
    }
    if (which != 0) continue;
    // The loader accepted it: loading into the model either works or changes nothing.
    try {
      load(*corpus.model, path);
      ++into_model;
    } catch (const Error&) {
      EXPECT_TRUE(bit_identical(corpus.model->state_dict(), snapshot)) << label;
    } catch (const std::exception& e) {
      ADD_FAILURE() << label << ": load(model) threw a non-sg::Error: " << e.what();
    }
    // Restore the original values for the next mutant.
    NoGradGuard no_grad;
    for (size_t k = 0; k < original.size(); ++k) original[k].second.copy_(snapshot[k].second);
  }
  // The corpus exercises both outcomes (a mutator that broke nothing, or everything, tests less).
  EXPECT_GT(refused, mutants / 2);
  EXPECT_GT(loaded, 0);
  std::printf("%lld mutants: %lld refused with an sg::Error, %lld loaded (%lld into the model)\n",
              static_cast<long long>(mutants), static_cast<long long>(refused),
              static_cast<long long>(loaded), static_cast<long long>(into_model));
}

TEST(CheckpointFuzz, DeepNestingIsRefusedWithoutRecursion) {
  // The regression of the stack overflow: nesting 100,000 deep in each place a value can sit.
  TempDir dir;
  const std::string deep_array = deep(100'000, "[", "]");
  for (const std::string& header :
       {R"({"t":{"dtype":"F32","shape":)" + deep_array + R"(,"data_offsets":[0,4]}})",
        R"({"t":{"dtype":"F32","shape":[1],"data_offsets":)" + deep_array + "}}",
        R"({"__metadata__":{"k":)" + deep(100'000, "{\"a\":", "}") + "}}",
        R"({"__metadata__":)" + deep_array + "}"}) {
    write_bytes(dir / "deep.safetensors", join(header, std::string(4, '\0')));
    EXPECT_SG_ERROR(load_safetensors(dir / "deep.safetensors"), "nests JSON values more than");
  }
}

TEST(CheckpointFuzz, ErrorMessagesQuoteABoundedPart) {
  TempDir dir;
  const std::string long_name(1 << 20, 'n');
  write_bytes(dir / "long.safetensors",
              join(R"({")" + long_name + R"(":{"dtype":"X","shape":[1],"data_offsets":[0,4]}})",
                   std::string(4, '\0')));
  try {
    load_safetensors(dir / "long.safetensors");
    ADD_FAILURE() << "a bad dtype was accepted";
  } catch (const Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 600u);
    EXPECT_NE(std::string(e.what()).find("1048576 bytes"), std::string::npos) << e.what();
  }
}

TEST(CheckpointFuzz, AFifoIsRefusedInsteadOfWaitedOn) {
  TempDir dir;
  const std::string fifo = dir / "fifo.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Without a writer, opening it for reading would block forever.
  EXPECT_SG_ERROR(load_safetensors(fifo), "not a regular file");
}

}  // namespace
}  // namespace sg::nn
