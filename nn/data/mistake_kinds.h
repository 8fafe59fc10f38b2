// What kind of mistake a wrong pronunciation is: reading a G2P model's errors by kind says what
// is left to learn. Three kinds, from the mildest:
//   stress      the right sounds, a stress digit wrong:   R IY0 D   for R IY1 D
//   vowels      the consonants right, a vowel wrong, added or dropped (quality, reduction):
//               AE0 K R EH1 D IH0 T   for AH0 K R EH2 D AH0 T
//   consonants  a consonant wrong, added or dropped:      EH1 G IH0 S   for IY1 JH AH0 S
// A word with several pronunciations counts as its mildest mistake against any of them.
//   sg::data::MistakeKinds kinds;
//   kinds.add({"R", "IY0", "D"}, {{"R", "IY1", "D"}});   // kinds.stress() == 1
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sg::data {

enum class MistakeKind { kNone, kStress, kVowels, kConsonants };

// "right", "stress", "vowels", "consonants".
const char* to_string(MistakeKind kind);

// An ARPAbet vowel (AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW), with or without its stress
// digit; every other symbol is a consonant.
bool is_vowel(const std::string& phoneme);

// The mildest kind of `predicted` against any of `references` (at least one); kNone when it equals
// one of them.
MistakeKind mistake_kind(const std::vector<std::string>& predicted,
                         const std::vector<std::vector<std::string>>& references);

class MistakeKinds {
 public:
  // One word, as ErrorRates::add takes it; right words are counted too (words()).
  MistakeKind add(const std::vector<std::string>& predicted,
                  const std::vector<std::vector<std::string>>& references);

  int64_t words() const { return words_; }
  int64_t wrong() const { return stress_ + vowels_ + consonants_; }
  int64_t stress() const { return stress_; }
  int64_t vowels() const { return vowels_; }
  int64_t consonants() const { return consonants_; }

 private:
  int64_t words_ = 0, stress_ = 0, vowels_ = 0, consonants_ = 0;
};

}  // namespace sg::data
