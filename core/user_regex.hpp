#pragma once
// Regular expressions users give (--filter, --benchmark_filter). std::regex recurses over the
// pattern as it compiles it and over its states as it matches, and expands a counted repetition
// into copies: a pattern of 100k characters or thousands of nested groups overflowed the stack
// (SIGSEGV) instead of failing. Patterns beyond these bounds, far beyond any case filter, are
// refused with a message naming the option.
#include <cstddef>
#include <regex>
#include <string>
#include <string_view>

namespace mpbench {

inline constexpr std::size_t kMaxPatternLength = 1000;
inline constexpr int kMaxPatternNesting = 16;      // groups and bracket expressions inside each other
inline constexpr long kMaxPatternRepetition = 4096;  // the product of the counts of {m,n} repetitions

// The compiled `pattern`, or UsageError "bad <option> '<pattern>': <why>" (the pattern cut short
// in the message when long) for a pattern beyond the bounds or one std::regex rejects.
std::regex user_regex(std::string_view option, const std::string& pattern,
                      std::regex::flag_type flags = std::regex::ECMAScript);

}  // namespace mpbench
