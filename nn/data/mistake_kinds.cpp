#include "nn/data/mistake_kinds.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "autograd/error.h"
#include "nn/data/error_rates.h"

namespace sg::data {

namespace {

// The sounds that are left when every vowel is taken out: equal skeletons mean every difference
// is in the vowels.
std::vector<std::string> consonants_of(const std::vector<std::string>& phonemes) {
  std::vector<std::string> out;
  for (const std::string& phoneme : phonemes)
    if (!is_vowel(phoneme)) out.push_back(phoneme);
  return out;
}

MistakeKind kind_against(const std::vector<std::string>& predicted,
                         const std::vector<std::string>& reference) {
  if (predicted == reference) return MistakeKind::kNone;
  if (without_stress(predicted) == without_stress(reference)) return MistakeKind::kStress;
  if (consonants_of(predicted) == consonants_of(reference)) return MistakeKind::kVowels;
  return MistakeKind::kConsonants;
}

}  // namespace

const char* to_string(MistakeKind kind) {
  switch (kind) {
    case MistakeKind::kNone:
      return "right";
    case MistakeKind::kStress:
      return "stress";
    case MistakeKind::kVowels:
      return "vowels";
    case MistakeKind::kConsonants:
      return "consonants";
  }
  return "unknown";
}

bool is_vowel(const std::string& phoneme) {
  static constexpr std::array<std::string_view, 15> kVowels = {
      "AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER", "EY", "IH", "IY", "OW", "OY", "UH", "UW"};
  std::string_view base = phoneme;
  if (!base.empty() && base.back() >= '0' && base.back() <= '2') base.remove_suffix(1);
  return std::find(kVowels.begin(), kVowels.end(), base) != kVowels.end();
}

MistakeKind mistake_kind(const std::vector<std::string>& predicted,
                         const std::vector<std::vector<std::string>>& references) {
  SG_CHECK(!references.empty(), "mistake_kind: a word needs at least one reference");
  MistakeKind mildest = MistakeKind::kConsonants;
  for (const auto& reference : references)
    mildest = std::min(mildest, kind_against(predicted, reference));
  return mildest;
}

MistakeKind MistakeKinds::add(const std::vector<std::string>& predicted,
                              const std::vector<std::vector<std::string>>& references) {
  const MistakeKind kind = mistake_kind(predicted, references);
  ++words_;
  if (kind == MistakeKind::kStress) ++stress_;
  if (kind == MistakeKind::kVowels) ++vowels_;
  if (kind == MistakeKind::kConsonants) ++consonants_;
  return kind;
}

}  // namespace sg::data
