// bandwidth: BabelStream-style kernels (copy, scale, add, triad, dot) in fp32, fp16 and bf16 over a
// size sweep from inside the last-level cache to several times its size, with the library's own
// device copy as the ceiling and pinned host transfers. Bytes are counted as read + written.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>

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

// The arrays of one size, per dtype, shared by the cases of that size: allocating and filling
// them cost more than measuring a kernel over them (seconds per case at a few hundred MiB on a
// CPU). The kernels only read a and b; c and the dot's sum are outputs. Sets of another size are
// dropped, and so are other dtypes' sets when a new one would take the held arrays past half the
// device's memory (the sweep keeps one dtype's within it).
class StreamArrays {
 public:
  struct Set {
    DeviceBuffer a, b, c, sum;
  };
  Set& get(Backend& backend, DType type, std::int64_t n) {
    if (n != n_) release();
    if (const auto it = sets_.find(type); it != sets_.end()) return it->second;
    const std::uint64_t bytes = 3 * static_cast<std::uint64_t>(n) * dtype_size(type);
    if (held_bytes_ + bytes > backend.device().memory_bytes / 2) release();
    n_ = n;
    Set set;
    const auto count = static_cast<std::size_t>(n);
    set.a = backend.allocate(type, count);
    set.b = backend.allocate(type, count);
    set.c = backend.allocate(type, count);
    set.sum = backend.allocate(DType::f32, 1);
    backend.fill_uniform(set.a, 11, 0.5f, 1.5f);
    backend.fill_uniform(set.b, 12, 0.5f, 1.5f);
    held_bytes_ += bytes;
    return sets_.emplace(type, std::move(set)).first->second;
  }
  void release() {
    sets_.clear();
    held_bytes_ = 0;
    n_ = 0;
  }

 private:
  std::int64_t n_ = 0;
  std::map<DType, Set> sets_;
  std::uint64_t held_bytes_ = 0;
};

// What a stream or memcpy case measures over: its size's shared arrays, released after the
// suite's last case of that size.
struct SharedArrays {
  std::shared_ptr<StreamArrays> arrays;
  bool last_of_size = false;
};

// The sweep measures whatever level of the hierarchy the arrays fit in, so no flush between samples.
CaseResult measure_stream(const CaseSpec& spec, StreamKernel kernel, DType type, std::int64_t n,
                          const SharedArrays& shared, Backend& backend, const SamplerConfig& config,
                          CaseProfiler* profiler) {
  StreamArrays::Set& set = shared.arrays->get(backend, type, n);
  DeviceBuffer& out = kernel == StreamKernel::dot ? set.sum : set.c;
  CaseResult r = measure_case(spec, backend, [&] { backend.stream(kernel, set.a, set.b, out, 0.4f); },
                              config.without_flush(), profiler);
  if (shared.last_of_size) shared.arrays->release();
  r.rates["gbps"] = gbps(spec.params["bytes"].get<double>(), r);
  add_peak(r, backend);
  return r;
}

CaseResult measure_memcpy(const CaseSpec& spec, std::int64_t n, const SharedArrays& shared, Backend& backend,
                          const SamplerConfig& config, CaseProfiler* profiler) {
  StreamArrays::Set& set = shared.arrays->get(backend, DType::f32, n);
  CaseResult r = measure_case(spec, backend, [&] { backend.copy(set.c, set.a); }, config.without_flush(), profiler);
  if (shared.last_of_size) shared.arrays->release();
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

// The spec of a case over shared arrays; `measure_with` is called with the spec and the arrays.
template <typename Measure>
CaseSpec shared_arrays_case(CaseSpec spec, SharedArrays shared, Measure measure_with) {
  spec.measure = [spec, shared, measure_with](Backend& be, const SamplerConfig& config, CaseProfiler* profiler) {
    return measure_with(spec, shared, be, config, profiler);
  };
  return spec;
}

nlohmann::json sweep_params(const char* kernel, std::int64_t n, DType type, double bytes, const Backend& backend) {
  return {{"kernel", kernel}, {"elements", n}, {"dtype", dtype_name(type)}, {"bytes", bytes},
          {"bytes_counted", "read + written"}, {"cache_bytes", backend.device().usable_cache_bytes}};
}

CaseSpec stream_case(StreamKernel kernel, DType type, std::int64_t n, SharedArrays shared, Backend& backend) {
  const double bytes = static_cast<double>(stream_kernel_arrays(kernel)) * n * dtype_size(type);
  const std::string name(stream_kernel_name(kernel));
  CaseSpec spec{"bandwidth", fmt::format("{}/n={}", name, n), std::string(dtype_name(type)),
                sweep_params(name.c_str(), n, type, bytes, backend), {}, {}};
  return shared_arrays_case(std::move(spec), shared,
                            [kernel, type, n](const CaseSpec& s, const SharedArrays& arrays, Backend& be,
                                              const SamplerConfig& config, CaseProfiler* profiler) {
                              return measure_stream(s, kernel, type, n, arrays, be, config, profiler);
                            });
}

CaseSpec memcpy_case(std::int64_t n, SharedArrays shared, Backend& backend) {
  CaseSpec spec{"bandwidth", fmt::format("memcpy/n={}", n), "fp32",
                sweep_params("memcpy", n, DType::f32, 2.0 * 4.0 * n, backend), {}, {}};
  return shared_arrays_case(std::move(spec), shared,
                            [n](const CaseSpec& s, const SharedArrays& arrays, Backend& be, const SamplerConfig& config,
                                CaseProfiler* profiler) { return measure_memcpy(s, n, arrays, be, config, profiler); });
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
  const auto arrays = std::make_shared<StreamArrays>();
  std::vector<DType> types;
  for (DType type : kTypes)
    if (options.wants(std::string(dtype_name(type)))) types.push_back(type);
  for (std::int64_t n : bandwidth_sweep_elements(backend.device(), options.quick)) {
    if (options.wants("fp32")) cases.push_back(memcpy_case(n, {arrays, false}, backend));
    for (StreamKernel kernel : kKernels)
      for (DType type : types) {
        const bool last = kernel == std::end(kKernels)[-1] && type == types.back();
        cases.push_back(stream_case(kernel, type, n, {arrays, last}, backend));
      }
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
