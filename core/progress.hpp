#pragma once
// The clock in progress lines: how long the run has taken and, once part of it is done, how long
// the rest will take at the pace so far.
#include <cstddef>
#include <string>

namespace mpbench {

// "45 s", "2 min 05 s", "1 h 02 min" (whole seconds, rounded).
std::string duration_text(double seconds);

// "34 s" before anything is done (or in the first second); "34 s, about 1 min 10 s left" once
// `done` of `total` units are, at the pace so far.
std::string elapsed_and_left(double elapsed_s, std::size_t done, std::size_t total);

}  // namespace mpbench
