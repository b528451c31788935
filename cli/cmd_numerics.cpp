// mpbench numerics [--format F|all] [--saturate] [--json] [VALUE...]: the number formats' properties
// (like torch.finfo) and, for each VALUE, what every format stores for it. Shows, for instance,
// why a gradient of 1e-8 vanishes in fp16 but survives in bf16.
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "amp/format_info.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"

namespace mpbench::cli {
namespace {

using num::Format;
using num::FormatInfo;
using Json = nlohmann::ordered_json;

struct NumericsArgs {
  std::string formats = "all";
  bool saturate = false;
  bool json = false;
  std::vector<std::string> values;
};

std::vector<Format> parse_formats(const std::string& text) {
  std::vector<Format> formats;
  if (text == "all") {
    for (const FormatInfo& info : num::all_formats()) formats.push_back(info.format);
    return formats;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string name = text.substr(start, comma - start);
    const std::optional<Format> format = num::parse_format(name);
    if (!format) {
      throw UsageError(fmt::format("unknown format '{}' in --format; use one of {}, a comma-separated list, or all",
                                   name, num::format_names()));
    }
    formats.push_back(*format);
    start = comma + 1;
  }
  return formats;
}

double parse_value(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    throw UsageError(fmt::format(
        "cannot read '{}' as a number; give decimal or hex floats such as 1e-8, -65504, 0x1p-24, inf or nan "
        "(write -- before the values when one is -inf or -nan)",
        text));
  }
  return value;  // out-of-range decimals are kept as strtod's inf or 0: fp32 shows what happens
}

// What happened to a value stored in a format, in order of precedence.
std::string_view outcome(const FormatInfo& info, double input, double stored, bool saturated) {
  if (std::isnan(input)) return "nan";
  if (std::isinf(input)) return "inf";
  if (saturated) return "saturated";
  if (!std::isfinite(stored)) return "overflow";
  if (stored == 0.0 && input != 0.0) return "flushed-to-zero";
  if (stored != 0.0 && std::fabs(stored) < info.min_normal) return "underflow-to-subnormal";
  return stored == input ? "exact" : "rounded";
}

struct Stored {
  const FormatInfo* info;
  double value;
  uint32_t code;
  std::string sign, exponent, mantissa;
  std::optional<double> relative_error;
  std::string_view outcome;
};

std::string binary(uint32_t bits, int width) {
  std::string out;
  for (int i = width - 1; i >= 0; --i) out += ((bits >> i) & 1u) ? '1' : '0';
  return out;
}

// Conversions start from the fp32 value, as a cast kernel reading an fp32 tensor does.
Stored store(const FormatInfo& info, double input, bool saturate) {
  const float as_fp32 = static_cast<float>(input);
  Stored s;
  s.info = &info;
  s.value = num::round_to(info.format, as_fp32, saturate);
  s.code = num::encode(info.format, as_fp32, saturate);
  s.sign = binary(s.code >> (info.exponent_bits + info.mantissa_bits), 1);
  s.exponent = binary(s.code >> info.mantissa_bits, info.exponent_bits);
  s.mantissa = binary(s.code, info.mantissa_bits);
  if (std::isfinite(input) && std::isfinite(s.value)) {
    s.relative_error = input == 0.0 ? 0.0 : std::fabs(s.value - input) / std::fabs(input);
  }
  const bool saturated = saturate && std::isfinite(input) && std::isfinite(s.value) &&
                         !std::isfinite(num::round_to(info.format, as_fp32, false));
  s.outcome = outcome(info, input, s.value, saturated);
  return s;
}

std::string number_text(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format("{:.9g}", x);
}

std::string hex_code(const Stored& s) {
  const int digits = (s.info->significant_bits + 3) / 4;
  return fmt::format("0x{:0{}x}", s.code, digits);
}

Json format_json(const FormatInfo& info) {
  return Json{{"name", info.name},
              {"storage_bits", info.storage_bits},
              {"significant_bits", info.significant_bits},
              {"exponent_bits", info.exponent_bits},
              {"mantissa_bits", info.mantissa_bits},
              {"bias", info.bias},
              {"max_finite", info.max_finite},
              {"min_normal", info.min_normal},
              {"min_subnormal", info.min_subnormal},
              {"eps", info.eps},
              {"has_inf", info.has_inf},
              {"note", info.note}};
}

Json stored_json(const Stored& s) {
  return Json{{"format", s.info->name},
              {"stored", std::isfinite(s.value) ? Json(s.value) : Json(nullptr)},
              {"stored_text", number_text(s.value)},
              {"bits", hex_code(s)},
              {"sign", s.sign},
              {"exponent", s.exponent},
              {"mantissa", s.mantissa},
              {"relative_error", s.relative_error ? Json(*s.relative_error) : Json(nullptr)},
              {"flag", s.outcome}};
}

void print_formats(const std::vector<Format>& formats) {
  fmt::print("{:<9} {:>4} {:>4} {:>4} {:>4}  {:<15} {:<15} {:<15} {:<15} {}\n", "format", "bits", "exp", "mant",
             "bias", "max finite", "min normal", "min subnormal", "eps", "inf");
  for (Format f : formats) {
    const FormatInfo& i = num::format_info(f);
    fmt::print("{:<9} {:>4} {:>4} {:>4} {:>4}  {:<15.9g} {:<15.9g} {:<15.9g} {:<15.9g} {}\n", i.name,
               i.significant_bits, i.exponent_bits, i.mantissa_bits, i.bias, i.max_finite, i.min_normal,
               i.min_subnormal, i.eps, i.has_inf ? "yes" : "no");
  }
}

void print_value(const std::string& text, double input, const std::vector<Stored>& rows) {
  fmt::print("\nvalue {} (as fp32: {})\n", text, number_text(static_cast<float>(input)));
  fmt::print("{:<9} {:<16} {:<12} {:<36} {:<11} {}\n", "format", "stored", "bits", "sign|exponent|mantissa",
             "rel. error", "flag");
  for (const Stored& s : rows) {
    const std::string fields = s.sign + "|" + s.exponent + "|" + s.mantissa;
    const std::string error = s.relative_error ? fmt::format("{:.3g}", *s.relative_error) : "n/a";
    fmt::print("{:<9} {:<16} {:<12} {:<36} {:<11} {}\n", s.info->name, number_text(s.value), hex_code(s), fields,
               error, s.outcome);
  }
}

int run_numerics(const NumericsArgs& args) {
  const std::vector<Format> formats = parse_formats(args.formats);
  std::vector<double> inputs;
  for (const std::string& text : args.values) inputs.push_back(parse_value(text));

  Json doc{{"formats", Json::array()}, {"saturate_fp8", args.saturate}, {"values", Json::array()}};
  for (Format f : formats) doc["formats"].push_back(format_json(num::format_info(f)));
  if (!args.json) print_formats(formats);
  for (std::size_t v = 0; v < inputs.size(); ++v) {
    std::vector<Stored> rows;
    for (Format f : formats) rows.push_back(store(num::format_info(f), inputs[v], args.saturate));
    if (args.json) {
      Json value{{"input", args.values[v]},
                 {"value", std::isfinite(inputs[v]) ? Json(inputs[v]) : Json(nullptr)},
                 {"results", Json::array()}};
      for (const Stored& s : rows) value["results"].push_back(stored_json(s));
      doc["values"].push_back(std::move(value));
    } else {
      print_value(args.values[v], inputs[v], rows);
    }
  }
  if (args.json) std::cout << doc.dump(2) << "\n";
  return 0;
}

}  // namespace

void add_numerics_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<NumericsArgs>();
  auto* cmd = app.add_subcommand(
      "numerics", "Show the number formats (like torch.finfo) and what each stores for the VALUEs given");
  cmd->add_option("--format", args->formats,
                  "fp32, tf32, fp16, bf16, fp8-e4m3, fp8-e5m2, a comma-separated list, or all (default all)");
  cmd->add_flag("--saturate", args->saturate,
                "fp8 conversions clamp to the largest finite value instead of giving NaN (e4m3) or inf (e5m2)");
  cmd->add_flag("--json", args->json, "print JSON instead of tables");
  cmd->add_option("values", args->values, "numbers to convert, e.g. 1e-8 -65520 0x1p-24 inf (write -- before them to pass -inf or -nan)");
  cmd->callback([args, &exit_code] { exit_code = run_numerics(*args); });
}

}  // namespace mpbench::cli
