#include "backends/cpu/cpu_device.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <dlfcn.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl_version.h>

#include <cstdlib>
#include <set>

#include "backends/cpu/conversions.hpp"
#include "backends/cpu/isa.hpp"
#include "core/env.hpp"
#include "core/error.hpp"

namespace mpbench::cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;

memory::data_type onednn_type(DType type) {
  switch (type) {
    case DType::f32: return memory::data_type::f32;
    case DType::f16: return memory::data_type::f16;
    case DType::bf16: return memory::data_type::bf16;
    case DType::e4m3:
    case DType::e5m2: break;
  }
  return memory::data_type::undef;
}

// A [rows, cols] matrix of each batch, row-major, or stored as its transpose.
memory::desc matrix(std::int64_t batch, std::int64_t rows, std::int64_t cols, DType type, bool transposed) {
  if (batch == 1) return {{rows, cols}, onednn_type(type), transposed ? tag::ba : tag::ab};
  return {{batch, rows, cols}, onednn_type(type), transposed ? tag::acb : tag::abc};
}

// The primitive for `problem` with operands of `input` and a result of `output`: the problem's own
// types natively, fp32 throughout on the converted path.
dnnl::matmul::primitive_desc matmul_descriptor(const dnnl::engine& engine, const MatmulProblem& p, DType input,
                                               DType output) {
  const memory::desc a = matrix(p.batch, p.m, p.k, input, p.a_transposed);
  const memory::desc b = matrix(p.batch, p.k, p.n, input, p.b_transposed);
  const memory::desc dst = matrix(p.batch, p.m, p.n, output, false);
  dnnl::primitive_attr attributes;
  if (p.accumulate) {
    dnnl::post_ops post;
    post.append_sum(1.0f);
    attributes.set_post_ops(post);
  }
#if DNNL_VERSION_MAJOR >= 3
  // oneDNN 3: no operation descriptors; the primitive descriptor takes the engine first.
  if (!p.bias) return {engine, a, b, dst, attributes};
#else
  if (!p.bias) return {dnnl::matmul::desc(a, b, dst), attributes, engine};
#endif
  // One bias row, broadcast over the rows (and the batch).
  const memory::desc bias = p.batch == 1 ? memory::desc({1, p.n}, memory::data_type::f32, tag::ab)
                                         : memory::desc({1, 1, p.n}, memory::data_type::f32, tag::abc);
#if DNNL_VERSION_MAJOR >= 3
  return {engine, a, b, bias, dst, attributes};
#else
  return {dnnl::matmul::desc(a, b, bias, dst), attributes, engine};
#endif
}

std::string gemm_name(GemmPrecision precision) { return std::string(gemm_precision_info(precision).name); }

// Why oneDNN cannot run a matmul of `type` operands and result for `precision` on this CPU, whose
// flags have the instructions: the ISA it may use leaves them out (`isa`, an isa_names() name,
// names the least that has them), or it has no kernel. Nothing when it can; it accumulates in
// fp32 (oneDNN's default, strict, accumulation mode).
std::optional<std::string> onednn_matmul(GemmPrecision precision, DType type, const char* isa,
                                         const char* instructions, const dnnl::engine& engine) {
  if (!effective_isa_covers(isa))
    return fmt::format("oneDNN may use ISA {} only (--cpu-isa, DNNL_MAX_CPU_ISA or mpbench's AMX default), which "
                       "leaves out {}",
                       effective_isa_name(), instructions);
  try {
    matmul_descriptor(engine, {precision, 1, 64, 64, 64, false, true, type}, type, type);
    return std::nullopt;
  } catch (const dnnl::error&) {
    return fmt::format("oneDNN {} has no {} matmul for ISA {}", onednn_version(), dtype_name(type), effective_isa_name());
  }
}

// Why `precision` cannot run natively on this CPU, or nothing when it can: the instructions first
// (from the CPU's flags, then the ISA oneDNN may use), then whether oneDNN has a kernel.
std::optional<std::string> why_not_native(GemmPrecision precision, const CpuDescription& cpu,
                                          const dnnl::engine& engine) {
  const std::string version = onednn_version();
  switch (precision) {
    case GemmPrecision::bf16: {
      if (!cpu.has("avx512_bf16") && !cpu.has("amx_bf16"))
        return fmt::format("{} has no bf16 matmul instructions (AVX512-BF16 or AMX-BF16)", cpu.model);
      return onednn_matmul(precision, DType::bf16, "avx512_core_bf16", "AVX512-BF16", engine);
    }
    case GemmPrecision::fp16:
      if (!cpu.has("avx512_fp16") && !cpu.has("amx_fp16"))
        return fmt::format("{} has no fp16 matmul instructions (AVX512-FP16 or AMX-FP16)", cpu.model);
#if DNNL_VERSION_MAJOR >= 3
      return onednn_matmul(precision, DType::f16, "avx512_core_fp16", "AVX512-FP16", engine);
#else
      return fmt::format("oneDNN {} has no fp16 matmul on CPUs (oneDNN 3.2 and later run one on AVX512-FP16)",
                         version);
#endif
    case GemmPrecision::fp8_e4m3:
      return fmt::format("{} has no fp8 matmul instructions, and oneDNN {} has no fp8 matmul on CPUs", cpu.model,
                         version);
    case GemmPrecision::fp32:
    case GemmPrecision::tf32:
    case GemmPrecision::fp16_acc16: break;
  }
  return std::nullopt;
}

// How operands of `input` become fp32 on the converted path.
std::string widening(DType input) {
  if (dtype_size(input) == 1) return "a table of the 256 codes' values";
  return element_loops_name() + " loops";
}

GemmCapability low_precision_row(GemmPrecision precision, GemmPathChoice choice, const CpuDescription& cpu,
                                 const dnnl::engine& engine) {
  const auto& info = gemm_precision_info(precision);
  const std::string converted = fmt::format("operands widened to fp32 ({}), oneDNN's fp32 matmul, the result rounded "
                                            "to {}",
                                            widening(info.input), dtype_name(info.output));
  if (choice == GemmPathChoice::converted)
    return {precision, GemmPath::converted, fmt::format("--cpu-gemm converted: {}", converted)};
  const std::optional<std::string> lacking = why_not_native(precision, cpu, engine);
  if (!lacking)
    return {precision, GemmPath::native,
            fmt::format("oneDNN {} {} matmul on ISA {}", onednn_version(), info.name, effective_isa_name())};
  if (choice == GemmPathChoice::native)
    return {precision, GemmPath::unsupported, fmt::format("{} (--cpu-gemm native)", *lacking)};
  return {precision, GemmPath::converted, fmt::format("{}: {}", *lacking, converted)};
}

CapabilityTable cpu_capabilities(GemmPathChoice choice, const dnnl::engine& engine) {
  const CpuDescription cpu = describe_cpu();
  return CapabilityTable({
      {GemmPrecision::fp32, GemmPath::native,
       fmt::format("oneDNN {} fp32 matmul on ISA {}", onednn_version(), effective_isa_name())},
      {GemmPrecision::tf32, GemmPath::unsupported, "TF32 is a GPU Tensor Core format: CPUs have no TF32 matmul"},
      low_precision_row(GemmPrecision::fp16, choice, cpu, engine),
      {GemmPrecision::fp16_acc16, GemmPath::unsupported,
       "no CPU matmul accumulates in fp16 (oneDNN accumulates every low-precision matmul in fp32)"},
      low_precision_row(GemmPrecision::bf16, choice, cpu, engine),
      low_precision_row(GemmPrecision::fp8_e4m3, choice, cpu, engine),
  });
}

// The problem's rules beyond its precision being available.
void check_problem(const MatmulProblem& p) {
  if (p.batch < 1 || p.m < 1 || p.n < 1 || p.k < 1)
    throw UsageError(fmt::format("matmul dimensions must be positive: batch={} m={} n={} k={}", p.batch, p.m, p.n, p.k));
  const DType own_output = gemm_precision_info(p.precision).output;
  if (p.output != DType::f32 && p.output != own_output)
    throw UsageError(fmt::format("a {} matmul writes fp32 or {}, not {}", gemm_name(p.precision),
                                 dtype_name(own_output), dtype_name(p.output)));
  if ((p.bias || p.accumulate) && p.output != DType::f32)
    throw UsageError("a matmul adds a bias or into its output only with an fp32 output");
}

dnnl::memory unbound(const memory::desc& desc, const dnnl::engine& engine) {
  return memory(desc, engine, DNNL_MEMORY_NONE);
}

}  // namespace

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

std::string_view gemm_path_choice_name(GemmPathChoice choice) {
  switch (choice) {
    case GemmPathChoice::automatic: return "auto";
    case GemmPathChoice::native: return "native";
    case GemmPathChoice::converted: return "converted";
  }
  return "unknown";
}

GemmPathChoice parse_gemm_path_choice(std::string_view name) {
  for (GemmPathChoice choice : {GemmPathChoice::automatic, GemmPathChoice::native, GemmPathChoice::converted})
    if (gemm_path_choice_name(choice) == name) return choice;
  throw UsageError(fmt::format("unknown --cpu-gemm '{}': use auto, native or converted", name));
}

CpuMatmul::CpuMatmul(CpuDevice& device, const MatmulProblem& problem)
    : device_(device), problem_(problem), path_(device.capabilities().path(problem.precision)) {
  if (const auto reason = device.capabilities().unsupported(problem.precision)) throw UsageError(*reason);
  check_problem(problem);
  const DType input = gemm_precision_info(problem.precision).input;
  if (problem.operands_in_f32 && path_ != GemmPath::converted && input != DType::f32)
    throw UsageError(fmt::format("fp32 operands of a {} matmul need the converted path; it runs {} here",
                                 gemm_name(problem.precision), gemm_path_name(path_)));
  const bool converted = path_ == GemmPath::converted;
  try {
    descriptor_ = matmul_descriptor(device.engine(), problem, converted ? DType::f32 : input,
                                    converted ? DType::f32 : problem.output);
    primitive_ = dnnl::matmul(descriptor_);
  } catch (const dnnl::error& e) {
    throw BackendError(fmt::format("oneDNN {} matmul batch={} m={} n={} k={}: {}", converted ? "fp32" : gemm_name(problem.precision),
                                   problem.batch, problem.m, problem.n, problem.k, e.what()));
  }
  a_memory_ = unbound(descriptor_.src_desc(), device.engine());
  b_memory_ = unbound(descriptor_.weights_desc(), device.engine());
  dst_memory_ = unbound(descriptor_.dst_desc(), device.engine());
  arguments_ = {{DNNL_ARG_SRC, a_memory_}, {DNNL_ARG_WEIGHTS, b_memory_}, {DNNL_ARG_DST, dst_memory_}};
  if (problem.bias) {
    bias_memory_ = unbound(descriptor_.bias_desc(), device.engine());
    arguments_.emplace(DNNL_ARG_BIAS, bias_memory_);
  }
  if (!converted) return;
  const auto elements = [&](std::int64_t rows, std::int64_t cols) {
    return static_cast<std::size_t>(problem.batch * rows * cols);
  };
  if (!problem.operands_in_f32 && input != DType::f32) {
    a_f32_.resize(elements(problem.m, problem.k));
    b_f32_.resize(elements(problem.k, problem.n));
  }
  if (problem.output != DType::f32) dst_f32_.resize(elements(problem.m, problem.n));
}

void CpuMatmul::run(const void* a, const void* b, const float* bias, void* dst) {
  const DType input = gemm_precision_info(problem_.precision).input;
  if (!a_f32_.empty()) {
    widen_to_f32(input, a, a_f32_.data(), a_f32_.size());
    widen_to_f32(input, b, b_f32_.data(), b_f32_.size());
    a = a_f32_.data();
    b = b_f32_.data();
  }
  a_memory_.set_data_handle(const_cast<void*>(a));
  b_memory_.set_data_handle(const_cast<void*>(b));
  if (problem_.bias) bias_memory_.set_data_handle(const_cast<float*>(bias));
  dst_memory_.set_data_handle(dst_f32_.empty() ? dst : dst_f32_.data());
  device_.execute(primitive_, arguments_, "matmul");
  if (!dst_f32_.empty()) narrow_from_f32(problem_.output, dst_f32_.data(), dst, dst_f32_.size());
}

std::string CpuMatmul::kernel() const { return descriptor_.impl_info_str(); }

nlohmann::json CpuMatmul::details() const {
  const auto& info = gemm_precision_info(problem_.precision);
  const std::string matmul = fmt::format("oneDNN {} {} matmul ({})", onednn_version(),
                                         path_ == GemmPath::converted ? "fp32" : info.name, kernel());
  nlohmann::json steps = nlohmann::json::array();
  if (!a_f32_.empty()) steps.push_back(fmt::format("{} -> fp32: {}", dtype_name(info.input), widening(info.input)));
  if (problem_.operands_in_f32 && info.input != DType::f32)
    steps.push_back(fmt::format("{} operands as fp32 values, rounded by the caller", info.name));
  steps.push_back(matmul);
  if (!dst_f32_.empty())
    steps.push_back(fmt::format("fp32 -> {}: {} loops", dtype_name(problem_.output), element_loops_name()));
  return {{"library", "oneDNN matmul"}, {"implementation", kernel()}, {"steps", steps}};
}

CpuDevice::CpuDevice(CpuOptions options) try
    : options_(options),
      isa_note_(apply_default_isa_limit()),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_),
      capabilities_(cpu_capabilities(options.gemm_path, engine_)) {
} catch (const dnnl::error& e) {
  throw BackendError(fmt::format("oneDNN CPU engine and stream: {}", e.what()));
}

void CpuDevice::execute(const dnnl::primitive& primitive, const std::unordered_map<int, dnnl::memory>& arguments,
                        std::string_view what) {
  try {
    primitive.execute(stream_, arguments);
    stream_.wait();
  } catch (const dnnl::error& e) {
    throw BackendError(fmt::format("oneDNN {}: {}", what, e.what()));
  }
}

CpuMatmul& CpuDevice::matmul(const MatmulProblem& problem) {
  auto found = matmuls_.find(problem);
  if (found == matmuls_.end()) found = matmuls_.emplace(problem, std::make_unique<CpuMatmul>(*this, problem)).first;
  return *found->second;
}

std::vector<std::string> CpuDevice::matmul_kernels() const {
  std::set<std::string> kernels;
  for (const auto& [problem, matmul] : matmuls_) kernels.insert(matmul->kernel());
  return {kernels.begin(), kernels.end()};
}

namespace {

std::string runtime_name(unsigned runtime) {
  switch (runtime) {
    case DNNL_RUNTIME_OMP: return "OpenMP";
    case DNNL_RUNTIME_TBB: return "TBB";
    case DNNL_RUNTIME_SEQ: return "sequential";
    case DNNL_RUNTIME_THREADPOOL: return "threadpool";
    case DNNL_RUNTIME_SYCL: return "SYCL";
  }
  return fmt::format("runtime#{}", runtime);
}

// The file the oneDNN library in this process was loaded from.
std::string onednn_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&dnnl_version), &info) == 0 || !info.dli_fname) return "";
  return info.dli_fname;
}

// The AMX self-check's outcome and what it found, or null where none ran.
nlohmann::json amx_self_check_json() {
  const auto check = amx_self_check();
  if (!check) return nullptr;
  return {{"outcome", outcome_name(check->outcome)}, {"detail", check->detail}};
}

}  // namespace

nlohmann::json CpuDevice::environment() const {
  const dnnl_version_t* v = dnnl_version();
  const char* max_isa = std::getenv("DNNL_MAX_CPU_ISA");
#ifdef MPBENCH_ONEDNN_SOURCE
  const char* source = MPBENCH_ONEDNN_SOURCE;
#else
  const char* source = "unknown";
#endif
  return {{"onednn",
           {{"version", onednn_version()},
            {"hash", v->hash},
            {"cpu_runtime", runtime_name(v->cpu_runtime)},
            {"source", source},
            {"library", onednn_library_path()},
            {"effective_isa", effective_isa_name()},
            {"max_isa_env", max_isa ? max_isa : ""},
            {"default_isa_limit", isa_note_ ? nlohmann::json(*isa_note_) : nlohmann::json(nullptr)},
            {"amx_self_check", amx_self_check_json()}}},
          {"element_loops", element_loops_name()},
          {"threads", omp_get_max_threads()},
          {"gemm_path_choice", gemm_path_choice_name(options_.gemm_path)},
          {"capabilities", capabilities_.to_json()}};
}

}  // namespace mpbench::cpu
