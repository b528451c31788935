#include "core/progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace mpbench {

std::string duration_text(double seconds) {
  const long long s = std::llround(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, s % 3600 / 60);
}

std::string elapsed_and_left(double elapsed_s, std::size_t done, std::size_t total) {
  const std::string elapsed = duration_text(elapsed_s);
  if (done == 0 || done >= total || elapsed_s < 1) return elapsed;  // a pace of under a second says little
  const double left = elapsed_s / static_cast<double>(done) * static_cast<double>(total - done);
  return fmt::format("{}, about {} left", elapsed, duration_text(left));
}

}  // namespace mpbench
