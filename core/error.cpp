#include "core/error.hpp"

#include <fmt/format.h>

namespace mpbench {

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) out += c;
    else out += fmt::format("\\x{:02x}", byte);
  }
  return out;
}

}  // namespace mpbench
