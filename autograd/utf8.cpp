#include "autograd/utf8.h"

#include "autograd/error.h"

namespace sg {

// RFC 3629's table: the second byte's range depends on the first, which excludes overlong forms
// and surrogates.
size_t utf8_character_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t length = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

std::optional<size_t> first_invalid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t length = utf8_character_length(text, i);
    if (length == 0) return i;
    i += length;
  }
  return std::nullopt;
}

std::vector<std::string> utf8_characters(std::string_view text) {
  std::vector<std::string> characters;
  characters.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t length = utf8_character_length(text, i);
    SG_CHECK(length > 0, "utf8_characters: '{}' is not valid UTF-8 (byte {} is 0x{:02x})",
             excerpt(text), i, static_cast<unsigned char>(text[i]));
    characters.emplace_back(text.substr(i, length));
    i += length;
  }
  return characters;
}

}  // namespace sg
