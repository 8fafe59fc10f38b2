// A deterministic train/dev/test split by word: the split of a word is fixed by a hash of its
// spelling (64-bit FNV-1a, defined byte by byte, so it is the same on every machine, compiler and
// standard library, unlike std::hash). All pronunciations of a word share its spelling, so they
// land in the same split: a test word is never seen in training under another pronunciation.
#pragma once

#include <cstdint>
#include <string_view>

namespace sg::data {

enum class Split { kTrain, kDev, kTest };

uint64_t fnv1a64(std::string_view bytes);

// hash % 100: [0, 90) train, [90, 95) dev, [95, 100) test.
Split split_of(std::string_view word);
const char* split_name(Split split);

}  // namespace sg::data
