// bandwidth: BabelStream-style kernels (copy, scale, add, triad, dot) in fp32, fp16 and bf16 over a
// size sweep from inside the last-level cache to several times its size, with the library's own
// device copy as the ceiling and pinned host transfers. Bytes are counted as read + written.
#include <fmt/format.h>

#include <cmath>

#include "core/peaks.hpp"
#include "microbench/suite.hpp"

namespace mpbench::microbench {

namespace {

constexpr StreamKernel kKernels[] = {StreamKernel::copy, StreamKernel::scale, StreamKernel::add,
                                     StreamKernel::triad, StreamKernel::dot};
constexpr DType kTypes[] = {DType::f32, DType::f16, DType::bf16};

std::int64_t power_of_two_at_most(double n) { return std::int64_t{1} << static_cast<int>(std::floor(std::log2(n))); }

double gbps(double bytes, const CaseResult& r) { return bytes / r.seconds->median / 1e9; }

void add_peak(CaseResult& r, const Backend& backend) {
  if (auto row = find_datasheet(backend.device().name)) {
    r.rates["pct_of_peak"] = 100.0 * r.rates["gbps"].get<double>() / row->memory_gb_per_s;
    r.details["peak"] = {{"gb_per_s", row->memory_gb_per_s}, {"gpu", row->gpu}, {"source", row->source}};
  } else {
    r.rates["pct_of_peak"] = nullptr;
  }
}

// The sweep measures whatever level of the hierarchy the arrays fit in, so no flush between samples.
CaseResult measure_stream(const CaseSpec& spec, StreamKernel kernel, DType type, std::int64_t n,
                          Backend& backend, const SamplerConfig& config, CaseProfiler* profiler) {
  const auto count = static_cast<std::size_t>(n);
  DeviceBuffer a = backend.allocate(type, count), b = backend.allocate(type, count);
  DeviceBuffer c = kernel == StreamKernel::dot ? backend.allocate(DType::f32, 1) : backend.allocate(type, count);
  backend.fill_uniform(a, 11, 0.5f, 1.5f);
  backend.fill_uniform(b, 12, 0.5f, 1.5f);
  CaseResult r =
      measure_case(spec, backend, [&] { backend.stream(kernel, a, b, c, 0.4f); }, config.without_flush(), profiler);
  r.rates["gbps"] = gbps(spec.params["bytes"].get<double>(), r);
  add_peak(r, backend);
  return r;
}

CaseResult measure_memcpy(const CaseSpec& spec, std::int64_t n, Backend& backend, const SamplerConfig& config,
                          CaseProfiler* profiler) {
  DeviceBuffer source = backend.allocate(DType::f32, static_cast<std::size_t>(n));
  DeviceBuffer destination = backend.allocate(DType::f32, static_cast<std::size_t>(n));
  backend.fill_uniform(source, 13, 0.5f, 1.5f);
  CaseResult r =
      measure_case(spec, backend, [&] { backend.copy(destination, source); }, config.without_flush(), profiler);
  r.rates["gbps"] = gbps(spec.params["bytes"].get<double>(), r);
  add_peak(r, backend);
  return r;
}

CaseResult measure_transfer(const CaseSpec& spec, TransferDirection direction, std::size_t bytes,
                            Backend& backend, const SamplerConfig& config, CaseProfiler* profiler) {
  std::string why_not;
  auto transfer = backend.make_host_transfer(direction, bytes, &why_not);
  CaseResult r = measure_case(spec, backend, [&] { transfer->run(); }, config.without_flush(), profiler);
  r.rates["gbps"] = gbps(static_cast<double>(bytes), r);
  r.details["transfer"] = transfer->details();
  return r;
}

CaseSpec stream_case(StreamKernel kernel, DType type, std::int64_t n, Backend& backend) {
  const double bytes = static_cast<double>(stream_kernel_arrays(kernel)) * n * dtype_size(type);
  CaseSpec spec{"bandwidth", fmt::format("{}/n={}", stream_kernel_name(kernel), n), std::string(dtype_name(type)),
                {{"kernel", stream_kernel_name(kernel)}, {"elements", n}, {"dtype", dtype_name(type)},
                 {"bytes", bytes}, {"bytes_counted", "read + written"},
                 {"cache_bytes", backend.device().usable_cache_bytes}}, {}, {}};
  spec.measure = [spec, kernel, type, n](Backend& be, const SamplerConfig& config, CaseProfiler* profiler) {
    return measure_stream(spec, kernel, type, n, be, config, profiler);
  };
  return spec;
}

CaseSpec memcpy_case(std::int64_t n, Backend& backend) {
  CaseSpec spec{"bandwidth", fmt::format("memcpy/n={}", n), "fp32",
                {{"kernel", "memcpy"}, {"elements", n}, {"dtype", "fp32"}, {"bytes", 2.0 * 4.0 * n},
                 {"bytes_counted", "read + written"}, {"cache_bytes", backend.device().usable_cache_bytes}}, {}, {}};
  spec.measure = [spec, n](Backend& be, const SamplerConfig& config, CaseProfiler* profiler) {
    return measure_memcpy(spec, n, be, config, profiler);
  };
  return spec;
}

CaseSpec transfer_case(TransferDirection direction, Backend& backend) {
  const std::size_t bytes = 256ull << 20;
  const char* name = direction == TransferDirection::host_to_device ? "h2d_pinned" : "d2h_pinned";
  CaseSpec spec{"bandwidth", fmt::format("{}/bytes={}", name, bytes), "fp32",
                {{"kernel", name}, {"bytes", static_cast<double>(bytes)}, {"bytes_counted", "once (one crossing)"}}, {}, {}};
  std::string why_not;
  if (!backend.make_host_transfer(direction, 1, &why_not)) spec.skip_reason = why_not;
  spec.measure = [spec, direction, bytes](Backend& be, const SamplerConfig& config, CaseProfiler* profiler) {
    return measure_transfer(spec, direction, bytes, be, config, profiler);
  };
  return spec;
}

std::vector<CaseSpec> bandwidth_cases(Backend& backend, const SuiteOptions& options) {
  std::vector<CaseSpec> cases;
  for (std::int64_t n : bandwidth_sweep_elements(backend.device(), options.quick)) {
    if (options.wants("fp32")) cases.push_back(memcpy_case(n, backend));
    for (StreamKernel kernel : kKernels)
      for (DType type : kTypes)
        if (options.wants(std::string(dtype_name(type)))) cases.push_back(stream_case(kernel, type, n, backend));
  }
  if (options.wants("fp32"))
    for (auto direction : {TransferDirection::host_to_device, TransferDirection::device_to_host})
      cases.push_back(transfer_case(direction, backend));
  return cases;
}

}  // namespace

std::vector<std::int64_t> bandwidth_sweep_elements(const DeviceInfo& device, bool quick) {
  const double cache_elements = std::max(static_cast<double>(device.usable_cache_bytes) / 4.0, 65536.0);
  const auto base = static_cast<std::int64_t>(std::exp2(std::round(std::log2(cache_elements))));
  constexpr double kLargestCaseBytesPerElement = 3 * 4;  // add and triad: three fp32 arrays
  const double fitting = static_cast<double>(device.memory_bytes) / 2.0 / kLargestCaseBytesPerElement;
  const std::int64_t fits = device.memory_bytes == 0 ? base << 3 : power_of_two_at_most(std::max(fitting, 1.0));
  // Quick on a CPU: one size well inside the cache and one twice its size, memory-bound yet small
  // enough to allocate and sweep in a smoke run (eight times a CPU's cache took seconds a case to
  // touch alone).
  const bool cpu = device.backend == "cpu";
  const std::vector<int> shifts = !quick ? std::vector<int>{-3, -2, -1, 0, 1, 2, 3}
                                  : cpu  ? std::vector<int>{-3, 1}
                                         : std::vector<int>{-3, 0, 3};
  std::vector<std::int64_t> sizes;
  for (int s : shifts) {
    const std::int64_t n = std::min(s < 0 ? base >> -s : base << s, fits);
    if (sizes.empty() || n > sizes.back()) sizes.push_back(n);
  }
  return sizes;
}

Suite bandwidth_suite() {
  return {"bandwidth",
          "copy/scale/add/triad/dot in fp32, fp16, bf16 across the cache-to-memory sweep; memcpy ceiling; pinned transfers",
          {"fp32", "fp16", "bf16"},
          bandwidth_cases,
          [](std::vector<CaseResult>& cases) { add_percent_of_copy(cases, "bandwidth", "memcpy"); }};
}

}  // namespace mpbench::microbench
