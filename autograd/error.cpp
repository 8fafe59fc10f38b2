#include "autograd/error.h"

namespace sg {

std::string excerpt(std::string_view text, size_t limit) {
  std::string out;
  const size_t shown = std::min(text.size(), limit);
  out.reserve(shown);
  for (size_t i = 0; i < shown; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += static_cast<char>(byte);
    }
  }
  if (shown < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

}  // namespace sg
