#pragma once
// The operations a GPT-2 decoder needs, forward and backward, behind one backend-neutral interface:
// the model (model.hpp) is written once against it. Real is the element type (float for training,
// double for the finite-difference tests).
//
// Every pointer is memory from the ops' own OpsMemory: host memory for the reference and CPU ops,
// device memory for the CUDA ops. Layouts are llm.c's, row-major: N = B*T rows of activations; a
// [B,T,C] tensor holds row b*T+t. Every backward ADDS into its gradient outputs (so gradients of
// shared inputs accumulate); callers zero them first. A null bias pointer means "no bias".
// Activations and their gradients come as Tensor views (workloads/tensor.hpp), which ops with half
// storage take in fp16/bf16 as well; parameters, gradients of parameters, LayerNorm statistics,
// attention's saved state, probabilities and losses are always Real.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "amp/format_info.hpp"
#include "core/capability.hpp"
#include "core/error.hpp"
#include "core/gemm.hpp"
#include "workloads/elementwise.hpp"
#include "workloads/fp8_gemm.hpp"
#include "workloads/tensor.hpp"

namespace mpbench::workloads {

// Where the ops' buffers live. allocate() hands out zero-filled memory and keeps count of the
// bytes live, so a run can report the memory it really allocated.
class OpsMemory {
 public:
  virtual ~OpsMemory() = default;
  void* allocate(std::size_t bytes);
  void release(void* p, std::size_t bytes) noexcept;
  std::size_t live_bytes() const { return live_bytes_; }
  std::size_t peak_bytes() const { return peak_bytes_; }
  void reset_peak() { peak_bytes_ = live_bytes_; }

  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void fill_zero(void* p, std::size_t bytes) = 0;
  // Waits for queued work (device ops run asynchronously); a no-op on the host.
  virtual void synchronize() {}

 protected:
  virtual void* allocate_zeroed(std::size_t bytes) = 0;  // throws OutOfMemoryError when it cannot
  virtual void free_memory(void* p) noexcept = 0;

 private:
  std::size_t live_bytes_ = 0;
  std::size_t peak_bytes_ = 0;
};

// Host memory, for ops that run on the CPU.
class HostOpsMemory : public virtual OpsMemory {
 public:
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void fill_zero(void* p, std::size_t bytes) override;

 protected:
  void* allocate_zeroed(std::size_t bytes) override;
  void free_memory(void* p) noexcept override;
};

// An owning array of T in an OpsMemory.
template <typename T>
class OpsArray {
 public:
  OpsArray() = default;
  OpsArray(OpsMemory& memory, std::size_t count)
      : memory_(&memory), data_(static_cast<T*>(memory.allocate(count * sizeof(T)))), count_(count) {}
  OpsArray(OpsArray&& other) noexcept { swap(other); }
  OpsArray& operator=(OpsArray&& other) noexcept {
    OpsArray(std::move(other)).swap(*this);
    return *this;
  }
  ~OpsArray() {
    if (data_ != nullptr) memory_->release(data_, count_ * sizeof(T));
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (count_ > 0) memory_->copy_to_host(host.data(), data_, bytes());
    return host;
  }
  // Copies host[0..host.size()) to the start of the array.
  void upload(const std::vector<T>& host) {
    if (host.size() > count_) throw std::out_of_range("OpsArray::upload: more values than the array holds");
    if (!host.empty()) memory_->copy_to_device(data_, host.data(), host.size() * sizeof(T));
  }
  void zero() {
    if (count_ > 0) memory_->fill_zero(data_, bytes());
  }

 private:
  void swap(OpsArray& other) noexcept {
    std::swap(memory_, other.memory_);
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
  }
  OpsMemory* memory_ = nullptr;
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// How matmul_forward/backward compute: the GEMM reads its inputs as `gemm` gives (fp32, tf32,
// fp16, bf16; accumulation is fp32 in every case) and each GEMM result is rounded to `output`
// before it is stored or added (an fp16-output GEMM: overflow past 65504 gives inf, as in autocast).
struct MatmulPrecision {
  GemmPrecision gemm = GemmPrecision::fp32;
  num::Format output = num::Format::fp32;
};

// One algorithm the ops' GEMM library chose for one distinct GEMM problem, as the library
// describes it (cuBLASLt: its CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS and compute type): the record
// of where each GEMM ran, which kernel names in a profile only suggest.
struct GemmAlgorithm {
  std::string gemm;     // the GEMM that first needed it, e.g. "attention scores (q k^T)"
  std::string problem;  // precision, m, n, k, batch, transposes
  GemmPrecision precision = GemmPrecision::fp32;
  bool batched = false;
  bool tensor_cores = false;  // the numerical implementation flags have a Tensor Core op type
  std::uint64_t numerical_impl_flags = 0;
  std::string compute_type;  // e.g. "CUBLAS_COMPUTE_32F"
  std::int64_t m = 0, n = 0, k = 0;  // the problem's dimensions (problem says them too)
  // What else names the algorithm where the library says (cuBLASLt: algo_id, tile, stages,
  // split_k), so that two library versions' choices can be told apart beyond Tensor Cores or not.
  nlohmann::json configuration = nlohmann::json::object();
};

// Which GEMMs may run on Tensor Cores: a GPU counterfactual (`mpbench run --tensor-cores`). on: the
// library's choice; off: every GEMM on CUDA-core algorithms; batched_off: only attention's batched
// GEMMs on CUDA cores (as fp16 batched GEMMs ran before CUDA 9.1), the others as with on.
enum class TensorCorePolicy { on, off, batched_off };
std::string_view tensor_core_policy_name(TensorCorePolicy policy);  // "on", "off", "batched-off"
// The policy of that name; UsageError for any other.
TensorCorePolicy parse_tensor_core_policy(std::string_view name);

// How attention_forward/backward compute. unfused: batched GEMMs around a softmax kernel, the
// probabilities [B,NH,T,T] saved for the backward (every backend, every precision). fused: one
// kernel per direction (cuDNN's scaled-dot-product attention, flash attention: the scores never
// reach memory), fp16/bf16 operands only, softmax statistics saved instead of probabilities.
enum class AttentionKernels { unfused, fused };
std::string_view attention_kernels_name(AttentionKernels kernels);  // "unfused", "fused"
// The kernels of that name; UsageError for any other.
AttentionKernels parse_attention_kernels(std::string_view name);
// Whether the fused kernels take the operands of GEMMs in `precision`: fp16 and bf16 only.
inline bool fused_attention_takes(GemmPrecision precision) {
  return precision == GemmPrecision::fp16 || precision == GemmPrecision::bf16;
}
// What decides whether fused kernels can train an attention: its heads' channels and its
// sequences' tokens.
struct AttentionDims {
  int head_size;
  int seq_len;
};
// Elements of the `att` buffer attention_forward fills for the backward: the probabilities
// [B,NH,T,T] unfused; fused, the softmax log-sum-exp [B,NH,T], padded to a multiple of 64
// elements, then the output as 16-bit codes [B,NH,T,C/NH] (two per element).
std::size_t attention_saved_elements(AttentionKernels kernels, int B, int T, int C, int NH);
// The fused statistics' part of that: [B,NH,T] rounded up to a multiple of 64 elements.
std::size_t fused_attention_statistics_elements(int B, int T, int NH);

// Why the Transformer workload runs no GEMM in `precision` on any device, or nothing: its GEMMs
// accumulate in fp32 into fp32 results (fp16 accumulation is a GEMM-suite precision).
std::optional<std::string> workload_gemm_rule(GemmPrecision precision);
// How the Transformer's GEMMs run in `precision` on a device with capability table `table`:
// unsupported by the workload's own rule (above), else as the table says, except that fp8 GEMMs
// (the fp8 modes) run on the converted path only: a native fp8 row (a CUDA GPU, sm_89+) gives
// unsupported, "no fp8 GEMM path on CUDA yet". The ops, `list` and the
// run's start line all read it.
GemmCapability workload_gemm_capability(const CapabilityTable& table, GemmPrecision precision);

// The part of a training step an op belongs to (the profiler attributes kernels by it).
enum class Phase { forward, backward, optimizer, scaler };
std::string_view phase_name(Phase phase);
// "c_fc L3 forward" (an op of layer 3) or "adamw optimizer" (outside the blocks, layer -1): the
// name of an op's NVTX range and of its range in traces.
std::string op_range_name(std::string_view op, int layer, Phase phase);

// Host-clock totals per op and phase ("c_fc forward"), summed over layers and calls: a breakdown
// for ops that run synchronously on the host (on a GPU the host clock would time launches only).
class OpTimes {
 public:
  void add(std::string_view op, Phase phase, double seconds);
  const std::map<std::string, double>& seconds() const { return seconds_; }
  std::size_t ranges() const { return ranges_; }

 private:
  std::map<std::string, double> seconds_;
  std::size_t ranges_ = 0;
};

// Told of every op range in_op_range runs: op_begin before the op's work, op_end after it (also
// when the op throws), e.g. by a profiler that records each range with its timestamps.
class OpRangeListener {
 public:
  virtual ~OpRangeListener() = default;
  virtual void op_begin(std::string_view op, int layer, Phase phase) = 0;
  virtual void op_end(std::string_view op, int layer, Phase phase) = 0;
};

template <typename Real>
class TransformerOps : public virtual OpsMemory {
 public:
  // While set, in_op_range adds each op's host time to `times` (null: stop).
  void time_ops_on_host(OpTimes* times) { op_times_ = times; }
  OpTimes* op_times() const { return op_times_; }
  // While set, in_op_range tells `listener` of each op range (null: stop).
  void listen_to_ops(OpRangeListener* listener) { op_listener_ = listener; }
  OpRangeListener* op_listener() const { return op_listener_; }

  // A short description of how the ops run (shown in results), e.g. "oneDNN matmul, OpenMP loops".
  virtual std::string implementation() const = 0;

  // The capability table of the device the ops run on (the backend's, for the CPU and CUDA ops).
  virtual const CapabilityTable& capabilities() const = 0;
  // How the ops' GEMMs run in `precision`: unsupported by the workload's own rule (every GEMM
  // accumulates in fp32 into fp32 results; fp8 converted only), else as the device's table says.
  GemmCapability gemm_capability(GemmPrecision precision) const {
    return workload_gemm_capability(capabilities(), precision);
  }
  GemmPath gemm_path(GemmPrecision precision) const { return gemm_capability(precision).path; }
  // Why these ops cannot run GEMMs in `precision`, or nothing when they can.
  std::optional<std::string> unsupported(GemmPrecision precision) const {
    GemmCapability row = gemm_capability(precision);
    if (row.path == GemmPath::unsupported) return std::move(row.reason);
    return std::nullopt;
  }
  virtual void set_matmul_precision(const MatmulPrecision& precision) = 0;
  // The algorithms the ops' GEMMs chose so far, one per distinct problem, as the library describes
  // them; empty where the ops do not know (the reference's loops, oneDNN).
  virtual std::vector<GemmAlgorithm> gemm_algorithms() const { return {}; }
  // Frees the scratch that earlier steps grew (operand copies, GEMM results, attention buffers), so
  // that the next mode's peak memory counts its own only. Between modes, with no step running.
  virtual void release_scratch() {}

  // Why these ops cannot run attention with `kernels` when the GEMMs run in `precision` on
  // attentions of `dims`, or nothing when they can. Only the CUDA ops have fused attention.
  virtual std::optional<std::string> attention_unsupported(AttentionKernels kernels, GemmPrecision /*precision*/,
                                                           AttentionDims /*dims*/) const {
    if (kernels == AttentionKernels::unfused) return std::nullopt;
    return "fused attention is cuDNN's scaled-dot-product attention: only the CUDA backend has it";
  }
  // The attention kernels from now on (unfused until set), for attentions of `dims`; the `att`
  // buffers given to the attention ops must hold attention_saved_elements of them. UsageError when
  // the ops have no such kernels for those dims at all (asked for bf16, which every fused attention
  // takes).
  void set_attention(AttentionKernels kernels, AttentionDims dims) {
    if (const auto reason = attention_unsupported(kernels, GemmPrecision::bf16, dims)) throw UsageError(*reason);
    attention_ = kernels;
  }
  AttentionKernels attention() const { return attention_; }

  // The fp8 modes' per-tensor scaling of the GEMM operands (workloads/fp8_gemm.hpp); inactive
  // (Fp8Recipe::none) outside them. The ops quantize through it when the GEMM precision is fp8.
  Fp8GemmQuantizer& fp8() { return fp8_; }
  const Fp8GemmQuantizer& fp8() const { return fp8_; }

  // Whether activation tensors may be in fp16/bf16 storage. Without it every tensor is real, and a
  // model keeps values of a half type in Real buffers, rounded by round_to.
  virtual bool has_half_storage() const { return false; }

  // Rounds each of n values to the nearest value of `format` (round to nearest even, inf past its
  // range): values stored in fp32 buffers that are exactly what fp16/bf16 storage would hold.
  virtual void round_to(Real* x, std::size_t n, num::Format format) = 0;

  // Marks the ops between begin_op and end_op as one op of one layer (-1: outside the blocks), for
  // NVTX ranges on CUDA and host-timed ranges on the CPU. No-ops by default.
  virtual void begin_op(std::string_view /*op*/, int /*layer*/, Phase /*phase*/) {}
  virtual void end_op() {}

  // out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]. wte [V,C], wpe [T_max,C].
  virtual void encoder_forward(Tensor<Real> out, const std::int32_t* tokens, const Real* wte, const Real* wpe,
                               int B, int T, int C) = 0;
  virtual void encoder_backward(Real* dwte, Real* dwpe, ConstTensor<Real> dout, const std::int32_t* tokens,
                                int B, int T, int C) = 0;

  // Per row n of inp [N,C]: out = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + 1e-5)
  // (biased variance). mean and rstd [N] are saved for the backward.
  virtual void layernorm_forward(Tensor<Real> out, Real* mean, Real* rstd, ConstTensor<Real> inp, const Real* weight,
                                 const Real* bias, int N, int C) = 0;
  virtual void layernorm_backward(Tensor<Real> dinp, Real* dweight, Real* dbias, ConstTensor<Real> dout,
                                  ConstTensor<Real> inp, const Real* weight, const Real* mean, const Real* rstd, int N,
                                  int C) = 0;

  // out [N,OC] = inp [N,C] * weight^T + bias; weight [OC,C] (PyTorch Linear's layout), bias [OC].
  // In the precision set_matmul_precision gave (fp32 until then); the bias is added in fp32 before
  // the rounding to the output format.
  virtual void matmul_forward(Tensor<Real> out, ConstTensor<Real> inp, const Real* weight, const Real* bias, int N,
                              int C, int OC) = 0;
  virtual void matmul_backward(Tensor<Real> dinp, Real* dweight, Real* dbias, ConstTensor<Real> dout,
                               ConstTensor<Real> inp, const Real* weight, int N, int C, int OC) = 0;

  // Causal multi-head attention. qkv [B,T,3C] holds q, k, v side by side, head h in channels
  // [h*hs, (h+1)*hs) of each. Unfused, att [B,NH,T,T] saves softmax(q k^T / sqrt(hs)) over t2 <= t
  // (0 above the diagonal); fused, att holds what attention_saved_elements says. out [B,T,C] = att v,
  // heads side by side. The batched products (q k^T, att v and
  // the four of the backward, whose softmax gradient dscore includes the 1/sqrt(hs)) read their
  // operands in the matmul precision's input format and accumulate in fp32; the softmax is fp32.
  // Outputs are not rounded: the model stores them as the policy says.
  virtual void attention_forward(Tensor<Real> out, Real* att, ConstTensor<Real> qkv, int B, int T, int C, int NH) = 0;
  virtual void attention_backward(Tensor<Real> dqkv, ConstTensor<Real> dout, ConstTensor<Real> qkv, const Real* att,
                                  int B, int T, int C, int NH) = 0;

  // out = gelu(inp), tanh approximation, n elements.
  virtual void gelu_forward(Tensor<Real> out, ConstTensor<Real> inp, std::size_t n) = 0;
  virtual void gelu_backward(Tensor<Real> dinp, ConstTensor<Real> dout, ConstTensor<Real> inp, std::size_t n) = 0;

  // out = a + b, n elements.
  virtual void residual_forward(Tensor<Real> out, ConstTensor<Real> a, ConstTensor<Real> b, std::size_t n) = 0;
  virtual void residual_backward(Tensor<Real> da, Tensor<Real> db, ConstTensor<Real> dout, std::size_t n) = 0;

  // Per row n of logits [N,Vp]: probs = softmax over the first V columns (the padding columns
  // V..Vp-1 get probability 0), losses[n] = -log probs[n, targets[n]].
  virtual void softmax_crossentropy_forward(Real* losses, Real* probs, ConstTensor<Real> logits,
                                            const std::int32_t* targets, int N, int V, int Vp) = 0;
  // dlogits += dlosses[n] * (probs - onehot(target)); the padding columns get 0.
  virtual void softmax_crossentropy_backward(Tensor<Real> dlogits, const Real* dlosses, const Real* probs,
                                             const std::int32_t* targets, int N, int V, int Vp) = 0;

  // AdamW on n parameters and their moments m, v (see adamw_update_element).
  virtual void adamw_update(Real* params, const Real* grads, Real* m, Real* v, std::size_t n,
                            const AdamWStep& step) = 0;
  // sqrt(sum grads^2) over n elements: inf or NaN when any element is.
  virtual double global_norm(const Real* grads, std::size_t n) = 0;
  // dst = src, n elements (refreshing low-precision weights from fp32 master weights).
  virtual void copy(Real* dst, const Real* src, std::size_t n) = 0;

 private:
  OpTimes* op_times_ = nullptr;
  OpRangeListener* op_listener_ = nullptr;
  AttentionKernels attention_ = AttentionKernels::unfused;
  Fp8GemmQuantizer fp8_;
};

// Runs body() as one op of one layer: between begin_op and end_op, inside the listener's
// op_begin/op_end when one listens, and host-timed when asked.
template <typename Real, typename Body>
void in_op_range(TransformerOps<Real>& ops, std::string_view op, int layer, Phase phase, Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  OpRangeListener* listener = ops.op_listener();
  if (listener) listener->op_begin(op, layer, phase);
  if (ops.fp8().active()) ops.fp8().set_range(op, layer, phase == Phase::backward);
  ops.begin_op(op, layer, phase);
  try {
    body();
  } catch (...) {
    ops.end_op();
    if (listener) listener->op_end(op, layer, phase);
    throw;
  }
  ops.end_op();
  if (listener) listener->op_end(op, layer, phase);
  if (OpTimes* times = ops.op_times())
    times->add(op, phase, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace mpbench::workloads
