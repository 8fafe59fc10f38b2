#include "nn/data/split.h"

namespace sg::data {

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;  // the FNV-1a 64-bit offset basis
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ull;  // the FNV 64-bit prime
  }
  return hash;
}

Split split_of(std::string_view word) {
  const uint64_t bucket = fnv1a64(word) % 100;
  if (bucket < 90) return Split::kTrain;
  return bucket < 95 ? Split::kDev : Split::kTest;
}

const char* split_name(Split split) {
  switch (split) {
    case Split::kTrain:
      return "train";
    case Split::kDev:
      return "dev";
    case Split::kTest:
      return "test";
  }
  return "?";
}

}  // namespace sg::data
