#pragma once
// Properties of the number formats (what torch.finfo reports) and conversions chosen by a runtime
// format value, for the numerics command and the tables in reports.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mpbench::num {

enum class Format { fp32, tf32, fp16, bf16, e4m3, e5m2 };

struct FormatInfo {
  Format format;
  std::string_view name;       // canonical name used on the command line and in JSON
  int storage_bits;            // bits one value occupies in memory (tf32 lives in 32-bit words)
  int significant_bits;        // sign + exponent + mantissa actually carried
  int exponent_bits;
  int mantissa_bits;           // explicit fraction bits, without the implicit leading 1
  int bias;
  double max_finite;
  double min_normal;
  double min_subnormal;
  double eps;                  // distance from 1 to the next larger value
  bool has_inf;
  std::string_view note;
};

std::span<const FormatInfo> all_formats();
const FormatInfo& format_info(Format f);

// Accepts the canonical names and the usual aliases (half, float16, bfloat16, e4m3fn,
// float8_e4m3fn, ...); case-insensitive.
std::optional<Format> parse_format(std::string_view text);
std::string format_names();  // "fp32, tf32, fp16, bf16, fp8-e4m3, fp8-e5m2"

// The encoding of x in `f`, right-aligned; tf32 gives the 19 significant bits of the rounded value.
uint32_t encode(Format f, float x, bool saturate = false);
// The value `f` stores for x: encode then decode.
float round_to(Format f, float x, bool saturate = false);

}  // namespace mpbench::num
