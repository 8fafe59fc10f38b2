// Text as UTF-8 characters: what a speller's letters are. A word is read from a file that may hold
// any bytes; splitting it byte by byte made "é" two "letters" that no checkpoint could store
// (its metadata must be valid UTF-8), so text is checked and split by code point here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

// The length in bytes of the well-formed UTF-8 character that starts at text[i] (1 to 4), or 0
// where none does (RFC 3629: overlong forms, surrogates and code points past U+10FFFF are not).
size_t utf8_character_length(std::string_view text, size_t i);

// The byte offset of the first byte that does not begin or continue a well-formed UTF-8 character
// (overlong forms, surrogates and code points past U+10FFFF count as malformed), or nothing.
std::optional<size_t> first_invalid_utf8(std::string_view text);

// The characters of `text`, each one code point's bytes: "café" -> {"c", "a", "f", "é"}. Throws,
// naming the byte, for text that is not valid UTF-8.
std::vector<std::string> utf8_characters(std::string_view text);

}  // namespace sg
