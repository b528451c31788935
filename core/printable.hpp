#pragma once
// printable() (core/error.hpp) for text shown in a report rather than quoted in an error line.
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace mpbench {

// With Unicode::escape, printable(text) itself: every byte that is not printable ASCII as \xNN.
// With Unicode::keep, valid UTF-8 stays as it is ("±", "Ryzen™") except what acts on a terminal or
// on the text around it rather than showing: C1 controls (U+0080 to U+009F), the bidirectional
// controls (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069, which can make a report read
// other than its bytes) and the line and paragraph separators (U+2028, U+2029); those and malformed
// UTF-8 are written as \xNN per byte too.
enum class Unicode { escape, keep };
std::string printable(std::string_view text, Unicode unicode);

}  // namespace mpbench
