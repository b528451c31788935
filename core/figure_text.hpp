#pragma once
// How a speedup and a share of the copy are printed: run's tables, compare and explain use these,
// and scripts/report.py mirrors them (printed_speedup, printed_share), so one number reads the same
// wherever it appears.
#include <fmt/format.h>

#include <string>

namespace mpbench {

inline std::string printed_speedup(double speedup) { return fmt::format("{:.2f}x", speedup); }

// `percent` in percent: 98.6 -> "98.6%".
inline std::string printed_share(double percent) { return fmt::format("{:.1f}%", percent); }

}  // namespace mpbench
