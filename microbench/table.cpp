#include "microbench/table.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <tuple>

#include "core/figure_text.hpp"

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
  if (c.rates.contains("busbw_gbps")) return fmt::format("{:.2f} GB/s busbw", c.rates["busbw_gbps"].get<double>());
  return "";
}

std::string format_share(const CaseResult& c) {
  for (const char* key : {"pct_of_copy", "pct_of_peak"})
    if (c.rates.contains(key) && c.rates[key].is_number())
      return fmt::format("{} {}", printed_share(c.rates[key].get<double>()),
                         key == std::string("pct_of_copy") ? "copy" : "peak");
  return "";
}

// What the library picked: cuBLASLt tile and Tensor Core use, or oneDNN's implementation (after
// "converted:" when the GEMM ran on the converted path).
std::string format_choice(const CaseResult& c) {
  if (!c.details.contains("algorithm")) return "";
  const auto& a = c.details["algorithm"];
  const bool converted = c.details.contains("gemm_path") && c.details["gemm_path"].value("path", "") == "converted";
  if (a.contains("implementation"))
    return (converted ? "converted: " : "") + a["implementation"].get<std::string>();
  std::string out;
  if (a.contains("tile")) out += fmt::format("tile {} ", a["tile"].dump());
  if (a.contains("tensor_cores")) out += a["tensor_cores"].get<bool>() ? "TC" : "no-TC";
  return out;
}

// The sampler stopped on its time budget or sample cap before the spread reached --max-noise.
bool stopped_short(const CaseResult& c) {
  const nlohmann::json::json_pointer p("/measurement/converged");
  return c.details.contains(p) && c.details.at(p).is_boolean() && !c.details.at(p).get<bool>();
}

std::string noise_footnote(const ResultDocument& document) {
  std::size_t measured = 0, short_of_target = 0;
  for (const auto& c : document.cases)
    if (c.status == CaseStatus::ok && c.suite != "transformer") {
      ++measured;
      short_of_target += stopped_short(c) ? 1 : 0;
    }
  if (short_of_target == 0) return "";
  return fmt::format("\n* {} of {} cases stopped before their noise target (--max-noise; the reason is in "
                     "details.measurement.stop_reason): their times are less certain. Rerun on a quieter machine or "
                     "with a longer --timeout, and compare several runs.\n",
                     short_of_target, measured);
}

std::string format_bytes(double bytes) {
  if (bytes >= 1073741824.0) return fmt::format("{:.2f} GiB", bytes / 1073741824.0);
  return fmt::format("{:.0f} MiB", bytes / 1048576.0);
}

std::string transformer_header() {
  return fmt::format("{:<24} {:<11} {:<9} {:>10} {:>5} {:>10} {:>8} {:>9} {:>6} {:>10} {:>10} {:>8}\n", "case", "mode",
                     "attention", "step", "cv", "tokens/s", "vs fp32", "TFLOP/s", "MFU", "peak mem", "final loss",
                     "skipped");
}

// A training case: attention kernels, step time, tokens/s, speedup, model TFLOP/s, MFU, memory,
// loss, skipped steps.
std::string transformer_row(const CaseResult& c, std::optional<double> speedup) {
  const auto& d = c.details;
  const std::string attention = c.params.value("attention", "-");
  const std::string mfu = c.rates.contains("mfu") ? fmt::format("{:.1f}%", 100 * c.rates["mfu"].get<double>()) : "-";
  const std::string loss = d.contains("final_loss") && d["final_loss"].is_number()
                               ? fmt::format("{:.4f}", d["final_loss"].get<double>())
                               : "-";
  // The mode column fits the longest mode name (fp8-delayed, fp8-current).
  return fmt::format("{:<24} {:<11} {:<9} {:>10} {:>4.1f}% {:>10.0f} {:>8} {:>9.3f} {:>6} {:>10} {:>10} {:>8}\n", c.name,
                     c.precision, attention, format_seconds(c.seconds->median), 100 * c.seconds->relative_spread(),
                     c.rates["tokens_per_s"].get<double>(), speedup ? printed_speedup(*speedup) : "",
                     c.rates["tflops"].get<double>(), mfu, format_bytes(c.rates["peak_memory_bytes"].get<double>()), loss,
                     d["skipped_steps"].size());
}

}  // namespace

std::string format_summary(const ResultDocument& document) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, double> speedup;
  for (const auto& s : document.speedups) speedup[{s.suite, s.name, s.backend, s.precision}] = s.value;

  std::string out;
  std::string current_suite;
  for (const auto& c : document.cases) {
    const bool training = c.suite == "transformer";
    if (c.suite != current_suite && training) {
      current_suite = c.suite;
      out += fmt::format("\n== {} ({}) ==\n{}", c.suite, c.backend, transformer_header());
    } else if (c.suite != current_suite) {
      current_suite = c.suite;
      out += fmt::format("\n== {} ({}) ==\n{:<34} {:<10} {:>10} {:<7} {:>16} {:>10} {:>8}  {}\n", c.suite, c.backend,
                         "case", "precision", "median", "    cv", "rate", "share", "vs fp32", "library choice / note");
    }
    if (c.status != CaseStatus::ok) {
      out += training ? fmt::format("{:<24} {:<11} {:<9} {:>10}  {}\n", c.name, c.precision,
                                    c.params.value("attention", "-"), case_status_name(c.status), c.message)
                      : fmt::format("{:<34} {:<10} {:>10}  {}\n", c.name, c.precision, case_status_name(c.status), c.message);
      continue;
    }
    const auto it = speedup.find({c.suite, c.name, c.backend, c.precision});
    if (training) {
      out += transformer_row(c, it == speedup.end() ? std::nullopt : std::optional<double>(it->second));
      continue;
    }
    out += fmt::format("{:<34} {:<10} {:>10} {:>5.1f}%{} {:>16} {:>10} {:>8}  {}\n", c.name, c.precision,
                       format_seconds(c.seconds->median), 100 * c.seconds->relative_spread(),
                       stopped_short(c) ? "*" : " ", format_rate(c),
                       format_share(c), it == speedup.end() ? "" : printed_speedup(it->second),
                       format_choice(c));
  }
  return out + noise_footnote(document);
}

}  // namespace mpbench::microbench
