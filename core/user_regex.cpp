#include "core/user_regex.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/error.hpp"

namespace mpbench {

namespace {

// The largest count of the repetition `{m}`, `{m,}` or `{m,n}` that starts at `open`, or nothing
// where the brace starts none (ECMAScript then reads it as a literal). Counts are capped, so a
// long run of digits cannot overflow.
std::optional<long> repetition_count(const std::string& pattern, std::size_t open) {
  long largest = -1, current = -1;
  for (std::size_t i = open + 1; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      current = std::min<long>((current < 0 ? 0 : current) * 10 + (c - '0'), kMaxPatternRepetition + 1);
    } else if (c == ',' && largest < 0) {
      largest = std::max(current, 1L);
      current = -1;
    } else if (c == '}') {
      return std::max(largest, current);
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// Why the pattern is beyond the bounds, or nothing.
std::optional<std::string> beyond_bounds(const std::string& pattern) {
  if (pattern.size() > kMaxPatternLength)
    return fmt::format("{} characters, more than the {} a filter may have", pattern.size(), kMaxPatternLength);
  int depth = 0;
  long repetition = 1;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;  // an escaped character opens and closes nothing
    } else if (c == '(' || c == '[') {
      if (++depth > kMaxPatternNesting)
        return fmt::format("groups nested more than {} deep", kMaxPatternNesting);
    } else if (c == ')' || c == ']') {
      depth = std::max(depth - 1, 0);
    } else if (c == '{') {
      if (const auto count = repetition_count(pattern, i)) {
        repetition = std::min(repetition * std::max(*count, 1L), kMaxPatternRepetition + 1);
        if (repetition > kMaxPatternRepetition)
          return fmt::format("counted repetitions ({{m,n}}) that multiply to more than {}", kMaxPatternRepetition);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::regex user_regex(std::string_view option, const std::string& pattern, std::regex::flag_type flags) {
  const std::string shown = pattern.size() > 60 ? pattern.substr(0, 60) + "..." : pattern;
  if (const auto why = beyond_bounds(pattern)) throw UsageError(fmt::format("bad {} '{}': {}", option, shown, *why));
  try {
    return std::regex(pattern, flags);
  } catch (const std::regex_error& e) {
    throw UsageError(fmt::format("bad {} '{}': {}", option, shown, e.what()));
  }
}

}  // namespace mpbench
