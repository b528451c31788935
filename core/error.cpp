#include "core/error.hpp"

#include "core/printable.hpp"

#include <fmt/format.h>

namespace mpbench {

namespace {

void escape(std::string& out, std::string_view bytes) {
  for (const char c : bytes) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
}

// The length of the well-formed UTF-8 sequence at the start of `text` (no overlong form, no
// surrogate, nothing above U+10FFFF) and its code point; 0 when there is none.
std::size_t utf8_sequence(std::string_view text, char32_t& code_point) {
  const auto lead = static_cast<unsigned char>(text[0]);
  const std::size_t length = lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3
                             : lead >= 0xF0 && lead <= 0xF4                                   ? 4
                                                                                               : 0;
  if (length == 0 || text.size() < length) return 0;
  code_point = lead & (0xFF >> (length + 1));
  for (std::size_t i = 1; i < length; ++i) {
    const auto next = static_cast<unsigned char>(text[i]);
    if ((next & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (next & 0x3F);
  }
  constexpr char32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code_point < kShortest[length] || (code_point >= 0xD800 && code_point <= 0xDFFF) || code_point > 0x10FFFF)
    return 0;
  return length;
}

// Code points that steer the terminal or the text's direction or lines instead of showing.
bool acts_on_text(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string printable(std::string_view text) { return printable(text, Unicode::escape); }

std::string printable(std::string_view text, Unicode unicode) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += text[i++];
      continue;
    }
    char32_t code_point = 0;
    const std::size_t length = unicode == Unicode::keep && byte >= 0x80 ? utf8_sequence(text.substr(i), code_point) : 0;
    if (length == 0) {
      escape(out, text.substr(i++, 1));
      continue;
    }
    if (acts_on_text(code_point)) escape(out, text.substr(i, length));
    else out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

}  // namespace mpbench
