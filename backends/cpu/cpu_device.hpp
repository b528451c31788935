#pragma once
// The CPU device layer: one oneDNN engine and stream, the CPU's capability table, and the one
// matmul that the gemm suite (through the CPU backend) and the Transformer's CPU ops both run.
//
// A GEMM precision runs natively where the CPU has instructions for its format and oneDNN a kernel
// for them (bf16 on AVX512-BF16 or AMX); elsewhere it runs converted: the operands are widened to
// fp32 with the vector loops, oneDNN's fp32 matmul runs, and the result is rounded to the output
// format. --cpu-gemm forces one path (converted on every CPU, or native only where it exists).
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backends/cpu/cpu_options.hpp"
#include "core/capability.hpp"
#include "core/dtype.hpp"
#include "core/gemm.hpp"

namespace mpbench::cpu {

// dst (= or +=) op(A) op(B) (+ bias) for each of `batch` matrices stored one after the other, all
// row-major: op(A) is [m,k] (A stored [k,m] when a_transposed), op(B) is [k,n] (B stored [n,k]
// when b_transposed), dst is [m,n].
struct MatmulProblem {
  GemmPrecision precision = GemmPrecision::fp32;  // the operands' format
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  bool a_transposed = false, b_transposed = false;
  DType output = DType::f32;  // fp32, or the precision's output type
  bool bias = false;          // an fp32 bias [n] added to each row (fp32 output only)
  bool accumulate = false;    // dst += the product (fp32 output only)
  // Converted path only: A and B come as fp32 values the format holds (the caller rounded them),
  // not as codes of the format, so they need no widening.
  bool operands_in_f32 = false;
  auto operator<=>(const MatmulProblem&) const = default;
};

class CpuDevice;

// One matmul problem prepared on a device's path for its precision: the oneDNN primitive, and on
// the converted path the fp32 buffers its operands are widened into and its result is rounded from.
class CpuMatmul {
 public:
  CpuMatmul(CpuDevice& device, const MatmulProblem& problem);
  // a, b and dst as the problem describes them; bias only when the problem has one.
  void run(const void* a, const void* b, const float* bias, void* dst);
  GemmPath path() const { return path_; }
  const MatmulProblem& problem() const { return problem_; }
  // oneDNN's name of the kernel it chose, e.g. "brg:avx512_core_bf16".
  std::string kernel() const;
  // {"library", "implementation", "steps": [...]}: every step of the path, e.g. the widening loops,
  // the fp32 kernel and the rounding loops.
  nlohmann::json details() const;

 private:
  CpuDevice& device_;
  MatmulProblem problem_;
  GemmPath path_;
  dnnl::matmul::primitive_desc descriptor_;
  dnnl::matmul primitive_;
  dnnl::memory a_memory_, b_memory_, bias_memory_, dst_memory_;
  std::unordered_map<int, dnnl::memory> arguments_;
  std::vector<float> a_f32_, b_f32_, dst_f32_;  // converted path: widened operands, fp32 result
};

class CpuDevice {
 public:
  // Applies mpbench's default ISA limit first (unless one was chosen), then starts oneDNN.
  explicit CpuDevice(CpuOptions options = {});
  CpuDevice(const CpuDevice&) = delete;
  CpuDevice& operator=(const CpuDevice&) = delete;

  const CapabilityTable& capabilities() const { return capabilities_; }
  const CpuOptions& options() const { return options_; }
  dnnl::engine& engine() { return engine_; }
  // Runs a primitive on the device's stream and waits; BackendError naming `what` on failure.
  void execute(const dnnl::primitive& primitive, const std::unordered_map<int, dnnl::memory>& arguments,
               std::string_view what);

  // The matmul for `problem`, prepared when first asked for and kept. UsageError when the
  // precision is unsupported here, or the problem is not one the matmul takes.
  CpuMatmul& matmul(const MatmulProblem& problem);
  // The kernels of the matmuls prepared so far, e.g. {"brg:avx512_core"}.
  std::vector<std::string> matmul_kernels() const;

  // Why mpbench limited the ISA oneDNN may use, when it did.
  const std::optional<std::string>& isa_note() const { return isa_note_; }
  // {"onednn": {...}, "element_loops", "threads", "gemm_path_choice", "capabilities"} for results.
  nlohmann::json environment() const;

 private:
  CpuOptions options_;
  std::optional<std::string> isa_note_;  // before the engine: the ISA limit precedes oneDNN's start
  dnnl::engine engine_;
  dnnl::stream stream_;
  CapabilityTable capabilities_;
  std::map<MatmulProblem, std::unique_ptr<CpuMatmul>> matmuls_;
};

// The oneDNN version, "2.6.3".
std::string onednn_version();

}  // namespace mpbench::cpu
