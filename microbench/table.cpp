#include "microbench/table.hpp"

#include <fmt/format.h>

#include <map>
#include <tuple>

namespace mpbench::microbench {

namespace {

std::string format_seconds(double s) {
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1.0) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

std::string format_rate(const CaseResult& c) {
  if (c.rates.contains("tflops")) return fmt::format("{:.2f} TFLOP/s", c.rates["tflops"].get<double>());
  if (c.rates.contains("gbps")) return fmt::format("{:.1f} GB/s", c.rates["gbps"].get<double>());
  return "";
}

std::string format_share(const CaseResult& c) {
  for (const char* key : {"pct_of_copy", "pct_of_peak"})
    if (c.rates.contains(key) && c.rates[key].is_number())
      return fmt::format("{:.0f}% {}", c.rates[key].get<double>(), key == std::string("pct_of_copy") ? "copy" : "peak");
  return "";
}

// What the library picked: cuBLASLt tile and Tensor Core use, or oneDNN's implementation.
std::string format_choice(const CaseResult& c) {
  if (!c.details.contains("algorithm")) return "";
  const auto& a = c.details["algorithm"];
  if (a.contains("implementation")) return a["implementation"].get<std::string>();
  std::string out;
  if (a.contains("tile")) out += fmt::format("tile {} ", a["tile"].dump());
  if (a.contains("tensor_cores")) out += a["tensor_cores"].get<bool>() ? "TC" : "no-TC";
  return out;
}

}  // namespace

std::string format_summary(const ResultDocument& document) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, double> speedup;
  for (const auto& s : document.speedups) speedup[{s.suite, s.name, s.backend, s.precision}] = s.value;

  std::string out;
  std::string current_suite;
  for (const auto& c : document.cases) {
    if (c.suite != current_suite) {
      current_suite = c.suite;
      out += fmt::format("\n== {} ({}) ==\n{:<34} {:<10} {:>10} {:>6} {:>16} {:>10} {:>8}  {}\n", c.suite, c.backend,
                         "case", "precision", "median", "cv", "rate", "share", "vs fp32", "library choice / note");
    }
    if (c.status != CaseStatus::ok) {
      out += fmt::format("{:<34} {:<10} {:>10}  {}\n", c.name, c.precision, case_status_name(c.status), c.message);
      continue;
    }
    const auto it = speedup.find({c.suite, c.name, c.backend, c.precision});
    out += fmt::format("{:<34} {:<10} {:>10} {:>5.1f}% {:>16} {:>10} {:>8}  {}\n", c.name, c.precision,
                       format_seconds(c.seconds->median), 100 * c.seconds->relative_spread(), format_rate(c),
                       format_share(c), it == speedup.end() ? "" : fmt::format("{:.2f}x", it->second),
                       format_choice(c));
  }
  return out;
}

}  // namespace mpbench::microbench
