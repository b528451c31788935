#include "compare/options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "core/error.hpp"

namespace mpbench::compare {

double parse_threshold(std::string_view text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string_view number = percent ? text.substr(0, text.size() - 1) : text;
  double value = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || error != std::errc() || end != number.data() + number.size() || !std::isfinite(value) ||
      value < 0)
    throw UsageError(fmt::format("--threshold '{}' is not a relative change: write e.g. 5% or 0.05", text));
  if (!percent && value >= 1)
    throw UsageError(fmt::format("--threshold '{}' is ambiguous: write {}% for a percentage or a fraction below 1",
                                 text, text));
  return percent ? value / 100 : value;
}

double parse_alpha(std::string_view text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || !(value >= kMinAlpha) ||
      value > kMaxAlpha)
    throw UsageError(fmt::format("--alpha '{}' is not a significance level: write a probability from {:g} to {:g}, "
                                 "e.g. 0.01 for 99% intervals",
                                 text, kMinAlpha, kMaxAlpha));
  return value;
}

}  // namespace mpbench::compare
