#include "autograd/error.h"

#include "autograd/utf8.h"

namespace sg {

std::string excerpt(std::string_view text, size_t limit) {
  std::string out;
  const size_t shown = std::min(text.size(), limit);
  out.reserve(shown);
  for (size_t i = 0; i < shown;) {
    const auto byte = static_cast<unsigned char>(text[i]);
    // A character shown whole; a control byte, or one that is not part of a UTF-8 character (a
    // binary file's, which a terminal would garble), as \xNN.
    const size_t length = utf8_character_length(text, i);
    if (length == 0 || i + length > shown || byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  if (shown < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

}  // namespace sg
