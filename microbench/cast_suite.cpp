// cast: the conversions mixed precision pays for (fp32 <-> fp16/bf16, fp32 -> fp8 e4m3 with its
// amax pass, bf16 -> fp8 e4m3 with current scaling, the fused bf16 -> e4m3 cast-transpose-amax of
// fp8 training, fp32 -> bf16 with stochastic rounding), in GB/s against a copy of the same elements.
#include <fmt/format.h>

#include "backends/cast_transpose.hpp"
#include "microbench/suite.hpp"

namespace mpbench::microbench {

namespace {

constexpr CastKind kCasts[] = {CastKind::f32_to_f16,         CastKind::f32_to_bf16,         CastKind::f16_to_f32,
                               CastKind::bf16_to_f32,        CastKind::f32_to_e4m3_scaled,  CastKind::bf16_to_e4m3_scaled,
                               CastKind::f32_to_bf16_stochastic};

// The low-precision format a conversion involves, the narrower of its two: what --precision
// selects it by.
std::string cast_precision(CastKind kind) {
  const DType from = cast_source_type(kind), to = cast_destination_type(kind);
  return std::string(dtype_name(dtype_size(to) < dtype_size(from) ? to : from));
}

// Bytes read + written; the fp8 casts read their input twice (amax, then the scaled cast).
double cast_bytes(CastKind kind, std::int64_t n) {
  const double in = dtype_size(cast_source_type(kind)), out = dtype_size(cast_destination_type(kind));
  const double reads = cast_destination_type(kind) == DType::e4m3 ? 2 : 1;
  return static_cast<double>(n) * (reads * in + out);
}

std::int64_t cast_elements(const Backend& backend, bool quick) {
  const bool gpu = backend.device().backend == "cuda";
  if (gpu) return quick ? (32ll << 20) : (128ll << 20);
  return quick ? (4ll << 20) : (16ll << 20);
}

// The case's declared bytes over its median time.
void add_gbps(const CaseSpec& spec, CaseResult& r) {
  r.rates["gbps"] = spec.params["bytes"].get<double>() / r.seconds->median / 1e9;
}

// A cast's input: `count` values uniform in [-4, 4), with an fp8 scale of 448 / 4 (e4m3's largest
// value over the inputs' largest magnitude) and an amax for the casts that write one.
struct CastInput {
  DeviceBuffer source, scale, amax;
};

CastInput cast_input(Backend& backend, DType type, std::size_t count, std::uint64_t seed) {
  CastInput in{backend.allocate(type, count), backend.allocate(DType::f32, 1), backend.allocate(DType::f32, 1)};
  backend.fill_uniform(in.source, seed, -4.0f, 4.0f);
  const float scale_value = 448.0f / 4.0f;
  backend.upload(in.scale, &scale_value, sizeof scale_value);
  return in;
}

// No flush between samples: the arrays are larger than the cache, a flush would only add noise.
CaseResult measure_cast(const CaseSpec& spec, CastKind kind, std::int64_t n, Backend& backend,
                        const SamplerConfig& config, CaseProfiler* profiler) {
  const auto count = static_cast<std::size_t>(n);
  CastInput in = cast_input(backend, cast_source_type(kind), count, 21);
  DeviceBuffer destination = backend.allocate(cast_destination_type(kind), count);
  // Current scaling chooses its scale and writes it where the other fp8 cast reads one.
  const CastArgs args = kind == CastKind::bf16_to_e4m3_scaled
                            ? CastArgs{&in.source, &destination, nullptr, &in.amax, 0, &in.scale}
                            : CastArgs{&in.source, &destination, &in.scale, &in.amax, 22};
  CaseResult r = measure_case(spec, backend, [&] { backend.cast(kind, args); }, config.without_flush(), profiler);
  add_gbps(spec, r);
  return r;
}

CaseResult measure_copy(const CaseSpec& spec, std::int64_t n, Backend& backend, const SamplerConfig& config,
                        CaseProfiler* profiler) {
  const auto count = static_cast<std::size_t>(n);
  DeviceBuffer a = backend.allocate(DType::f32, count), c = backend.allocate(DType::f32, count);
  backend.fill_uniform(a, 23, -4.0f, 4.0f);
  CaseResult r = measure_case(spec, backend, [&] { backend.stream(StreamKernel::copy, a, a, c, 0); },
                              config.without_flush(), profiler);
  add_gbps(spec, r);
  return r;
}

// The fused cast-transpose-amax on a rows x cols matrix of the suite's element count (cols 2048,
// a multiple of every tile): the bf16 read once, both e4m3 code matrices written, at the scaled
// casts' scale.
constexpr std::int64_t kCastTransposeCols = 2048;

CaseResult measure_cast_transpose(const CaseSpec& spec, std::size_t rows, std::size_t cols, Backend& backend,
                                  const SamplerConfig& config, CaseProfiler* profiler) {
  const std::size_t count = rows * cols;
  CastInput in = cast_input(backend, DType::bf16, count, 24);
  DeviceBuffer codes = backend.allocate(DType::e4m3, count), transposed = backend.allocate(DType::e4m3, count);
  const CastTransposeArgs args{&in.source, rows, cols, &in.scale, &codes, &transposed, &in.amax};
  CaseResult r = measure_case(spec, backend, [&] { backend.cast_transpose_amax(args); }, config.without_flush(),
                              profiler);
  add_gbps(spec, r);
  return r;
}

std::vector<CaseSpec> cast_cases(Backend& backend, const SuiteOptions& options) {
  const std::int64_t n = cast_elements(backend, options.quick);
  std::vector<CaseSpec> cases;
  CaseSpec copy{"cast", fmt::format("copy/n={}", n), "fp32",
                {{"kernel", "copy"}, {"elements", n}, {"bytes", 8.0 * n}, {"bytes_counted", "read + written"}}, {}, {}};
  copy.measure = [copy, n](Backend& be, const SamplerConfig& config, CaseProfiler* profiler) {
    return measure_copy(copy, n, be, config, profiler);
  };
  cases.push_back(copy);  // the ceiling, always measured
  for (CastKind kind : kCasts) {
    if (!options.wants(cast_precision(kind))) continue;
    CaseSpec spec{"cast", fmt::format("{}/n={}", cast_kind_name(kind), n), cast_precision(kind),
                  {{"kernel", cast_kind_name(kind)}, {"elements", n}, {"from", dtype_name(cast_source_type(kind))},
                   {"to", dtype_name(cast_destination_type(kind))}, {"bytes", cast_bytes(kind, n)},
                   {"bytes_counted", "read + written"}}, {}, {}};
    spec.skip_reason = backend.cast_unsupported(kind);
    spec.measure = [spec, kind, n](Backend& be, const SamplerConfig& config, CaseProfiler* profiler) {
      return measure_cast(spec, kind, n, be, config, profiler);
    };
    cases.push_back(std::move(spec));
  }
  if (options.wants("fp8-e4m3")) {
    const std::int64_t cols = kCastTransposeCols, rows = n / cols;
    CaseSpec spec{"cast", fmt::format("{}/{}x{}", cast_transpose_name(), rows, cols), "fp8-e4m3",
                  {{"kernel", cast_transpose_name()}, {"elements", rows * cols}, {"rows", rows}, {"cols", cols},
                   {"from", "bf16"}, {"to", "e4m3 + e4m3 transposed"},
                   {"bytes", elem::kCastTransposeBytesPerElement * static_cast<double>(rows * cols)},
                   {"bytes_counted", "read + written"}}, {}, {}};
    spec.measure = [spec, rows, cols](Backend& be, const SamplerConfig& config, CaseProfiler* profiler) {
      return measure_cast_transpose(spec, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols), be, config,
                                    profiler);
    };
    cases.push_back(std::move(spec));
  }
  return cases;
}

}  // namespace

Suite cast_suite() {
  return {"cast",
          "fp32 <-> fp16/bf16, fp32/bf16 -> fp8 e4m3 (scaled, with amax), bf16 -> e4m3 cast-transpose-amax, fp32 -> bf16 "
          "stochastic; GB/s against copy",
          {"fp32", "fp16", "bf16", "fp8-e4m3"},
          cast_cases,
          [](std::vector<CaseResult>& cases) { add_percent_of_copy(cases, "cast", "copy"); }};
}

}  // namespace mpbench::microbench
