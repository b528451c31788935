#include "amp/format_info.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <utility>

#include "amp/formats.hpp"

namespace mpbench::num {
namespace {

struct Fields {
  int exponent_bits;
  int mantissa_bits;
  bool ieee_specials;  // false: e4m3fn, whose top binade holds numbers and only S.1111.111 is NaN
};

// Derived from the fields so the table cannot disagree with the layout; the tests compare the
// results with the published constants (65504, 448, 57344, ...).
FormatInfo describe(Format format, std::string_view name, int storage_bits, Fields f,
                    std::string_view note) {
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int max_exponent = f.ieee_specials ? (1 << f.exponent_bits) - 2 - bias
                                           : (1 << f.exponent_bits) - 1 - bias;
  // e4m3fn gives up the all-ones mantissa of its top binade to NaN.
  const double top_mantissa_units = f.ieee_specials ? 1.0 : 2.0;
  const double max_significand = 2.0 - top_mantissa_units * std::ldexp(1.0, -f.mantissa_bits);
  return FormatInfo{
      .format = format,
      .name = name,
      .storage_bits = storage_bits,
      .significant_bits = 1 + f.exponent_bits + f.mantissa_bits,
      .exponent_bits = f.exponent_bits,
      .mantissa_bits = f.mantissa_bits,
      .bias = bias,
      .max_finite = std::ldexp(max_significand, max_exponent),
      .min_normal = std::ldexp(1.0, 1 - bias),
      .min_subnormal = std::ldexp(1.0, 1 - bias - f.mantissa_bits),
      .eps = std::ldexp(1.0, -f.mantissa_bits),
      .has_inf = f.ieee_specials,
      .note = note,
  };
}

const std::array<FormatInfo, 6>& table() {
  static const std::array<FormatInfo, 6> formats = {
      describe(Format::fp32, "fp32", 32, {8, 23, true}, "IEEE binary32"),
      describe(Format::tf32, "tf32", 32, {8, 10, true},
               "Tensor Core math mode: fp32 storage, inputs rounded to 10 mantissa bits"),
      describe(Format::fp16, "fp16", 16, {5, 10, true}, "IEEE binary16; needs loss scaling for gradients"),
      describe(Format::bf16, "bf16", 16, {8, 7, true}, "fp32's exponent range with 7 mantissa bits"),
      describe(Format::e4m3, "fp8-e4m3", 8, {4, 3, false},
               "OCP e4m3fn: no inf, NaN only S.1111.111; forward activations and weights"),
      describe(Format::e5m2, "fp8-e5m2", 8, {5, 2, true}, "OCP e5m2: IEEE-like; gradients"),
  };
  return formats;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

std::span<const FormatInfo> all_formats() { return table(); }

const FormatInfo& format_info(Format f) { return table()[static_cast<std::size_t>(f)]; }

std::optional<Format> parse_format(std::string_view text) {
  static const std::pair<std::string_view, Format> kNames[] = {
      {"fp32", Format::fp32},          {"float32", Format::fp32},       {"float", Format::fp32},
      {"tf32", Format::tf32},          {"tensorfloat32", Format::tf32}, {"fp16", Format::fp16},
      {"float16", Format::fp16},       {"half", Format::fp16},          {"bf16", Format::bf16},
      {"bfloat16", Format::bf16},      {"fp8-e4m3", Format::e4m3},      {"e4m3", Format::e4m3},
      {"e4m3fn", Format::e4m3},        {"float8_e4m3fn", Format::e4m3}, {"fp8-e5m2", Format::e5m2},
      {"e5m2", Format::e5m2},          {"float8_e5m2", Format::e5m2},
  };
  const std::string key = lowercase(text);
  for (const auto& [name, format] : kNames) {
    if (key == name) return format;
  }
  return std::nullopt;
}

std::string format_names() {
  std::string names;
  for (const FormatInfo& info : table()) {
    if (!names.empty()) names += ", ";
    names += info.name;
  }
  return names;
}

uint32_t encode(Format f, float x, bool saturate) {
  switch (f) {
    case Format::fp32: return float_to_bits(x);
    case Format::tf32: return float_to_bits(round_to_tf32(x)) >> 13;
    case Format::fp16: return f32_to_f16_bits(x);
    case Format::bf16: return f32_to_bf16_bits(x);
    case Format::e4m3: return f32_to_e4m3_bits(x, saturate);
    case Format::e5m2: return f32_to_e5m2_bits(x, saturate);
  }
  return 0;
}

float round_to(Format f, float x, bool saturate) {
  switch (f) {
    case Format::fp32: return x;
    case Format::tf32: return round_to_tf32(x);
    case Format::fp16: return f16_bits_to_f32(f32_to_f16_bits(x));
    case Format::bf16: return bf16_bits_to_f32(f32_to_bf16_bits(x));
    case Format::e4m3: return e4m3_bits_to_f32(f32_to_e4m3_bits(x, saturate));
    case Format::e5m2: return e5m2_bits_to_f32(f32_to_e5m2_bits(x, saturate));
  }
  return x;
}

}  // namespace mpbench::num
