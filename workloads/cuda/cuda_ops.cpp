#include "workloads/cuda/cuda_ops.hpp"

#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cuda/check.hpp"
#include "core/error.hpp"

namespace mpbench::workloads {

using cuda::check;

namespace {

bool is_half(num::Format format) { return format == num::Format::fp16 || format == num::Format::bf16; }

std::shared_ptr<cuda::CudaDevice> non_null(std::shared_ptr<cuda::CudaDevice> device) {
  if (!device) throw UsageError("the CUDA Transformer ops need a GPU's device context, got none");
  return device;
}

// Up to 8 resident blocks of 256 threads per multiprocessor: one full wave of grid-stride blocks.
unsigned wave_blocks(const DeviceInfo& gpu) { return static_cast<unsigned>(std::max(gpu.multiprocessors, 1) * 8); }

}  // namespace

CudaTransformerOps::CudaTransformerOps(std::shared_ptr<cuda::CudaDevice> device)
    : device_(non_null(std::move(device))),
      launch_{device_->stream(), wave_blocks(device_->info())},
      plans_(device_) {
  device_->activate();
  if (const std::optional<std::string> problem = cuda_kernels::kernel_image_problem()) {
    const DeviceInfo& gpu = device_->info();
    throw UsageError(fmt::format("{} (compute capability {}.{}) cannot run this build's Transformer kernels: {}; "
                                 "rebuild with -DCMAKE_CUDA_ARCHITECTURES={}{}",
                                 gpu.name, gpu.compute_capability_major, gpu.compute_capability_minor, *problem,
                                 gpu.compute_capability_major, gpu.compute_capability_minor));
  }
  scratch(kNormPartials, launch_.max_blocks * sizeof(double));
}

CudaTransformerOps::~CudaTransformerOps() {
  if (cudaSetDevice(device_->index()) != cudaSuccess || cudaStreamSynchronize(device_->stream()) != cudaSuccess)
    cudaGetLastError();
}

void* CudaTransformerOps::allocate_zeroed(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  cuda::DeviceMemory memory =
      device_->allocate(bytes, "a Transformer buffer", "use a smaller batch, sequence or model");
  check(cudaMemsetAsync(memory.get(), 0, bytes, device_->stream()), "cudaMemsetAsync (zeroing a new buffer)");
  return memory.release();
}

void CudaTransformerOps::free_memory(void* p) noexcept {
  if (p == nullptr) return;
  // Work queued on the stream may still use the buffer.
  if (cudaSetDevice(device_->index()) != cudaSuccess || cudaStreamSynchronize(device_->stream()) != cudaSuccess ||
      cudaFree(p) != cudaSuccess)
    cudaGetLastError();
}

void CudaTransformerOps::copy_to_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  device_->activate();
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, device_->stream()),
        "cudaMemcpyAsync (host to device)");
  // The caller may free or reuse the host memory as soon as this returns.
  check(cudaStreamSynchronize(device_->stream()), "cudaStreamSynchronize (after a copy to the device)");
}

void CudaTransformerOps::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  device_->activate();
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, device_->stream()),
        "cudaMemcpyAsync (device to host)");
  check(cudaStreamSynchronize(device_->stream()), "cudaStreamSynchronize (after a copy to the host)");
}

void CudaTransformerOps::fill_zero(void* p, std::size_t bytes) {
  if (bytes == 0) return;
  device_->activate();
  check(cudaMemsetAsync(p, 0, bytes, device_->stream()), "cudaMemsetAsync");
}

void CudaTransformerOps::synchronize() {
  device_->activate();
  check(cudaStreamSynchronize(device_->stream()), "cudaStreamSynchronize");
}

void* CudaTransformerOps::scratch(Slot slot, std::size_t bytes) {
  OpsArray<std::byte>& buffer = scratch_[slot];
  if (buffer.size() < bytes) {
    buffer = OpsArray<std::byte>();  // free the old one first (after the stream is done with it)
    buffer = OpsArray<std::byte>(*this, bytes);
  }
  return buffer.data();
}

void CudaTransformerOps::release_scratch() {
  device_->activate();
  // The norm's partials are sized once, when the ops are made.
  for (std::size_t slot = 0; slot < kSlotCount; ++slot)
    if (slot != kNormPartials) scratch_[slot] = OpsArray<std::byte>();
}

std::string CudaTransformerOps::implementation() const {
  const std::size_t version = cublasLtGetVersion();
  const std::string tensor_cores =
      tensor_core_policy_ == TensorCorePolicy::off           ? ", every GEMM kept off Tensor Cores"
      : tensor_core_policy_ == TensorCorePolicy::batched_off ? ", batched GEMMs kept off Tensor Cores"
                                                               : "";
  const std::string attention = fused_ ? ", " + fused_->description() : "";
  return fmt::format("cuBLASLt {}.{}.{} GEMMs, mpbench kernels{}{}", version / 10000, version / 100 % 100,
                     version % 100, attention, tensor_cores);
}

const CapabilityTable& CudaTransformerOps::capabilities() const { return device_->capabilities(); }

std::optional<std::string> CudaTransformerOps::attention_unsupported(AttentionKernels kernels, GemmPrecision precision,
                                                                     AttentionDims dims) const {
  if (kernels == AttentionKernels::unfused) return std::nullopt;
  // What the precision rules out first: it needs no cuDNN to say.
  if (!fused_attention_takes(precision))
    return fmt::format("cuDNN's fused attention takes fp16 or bf16 operands; {} attention runs unfused",
                       gemm_precision_info(precision).name);
  const DeviceInfo& gpu = device_->info();
  const int major = gpu.compute_capability_major, minor = gpu.compute_capability_minor;
  if (major < 8)
    return fmt::format("cuDNN's fused attention needs compute capability 8.0 or newer; {} is {}.{}", gpu.name, major,
                       minor);
  // cuDNN's SDPA backward (its support matrix, and the checks the cuDNN frontend's SDPA backward
  // node makes before it builds a graph): heads up to 256 channels on Hopper, 128 elsewhere
  // (Blackwell included), and not one query against one key.
  const int largest_head = major == 9 ? 256 : 128;
  if (dims.head_size % 8 != 0 || dims.head_size > largest_head)
    return fmt::format("cuDNN's fused attention trains heads of a multiple of 8 channels up to {} on {} (compute "
                       "capability {}.{}); this model's heads have {}",
                       largest_head, gpu.name, major, minor, dims.head_size);
  if (dims.seq_len < 2)
    return fmt::format("cuDNN's fused attention does not train sequences of {} token", dims.seq_len);
  return fused_attention_unavailable();
}

void CudaTransformerOps::set_matmul_precision(const MatmulPrecision& precision) {
  if (const auto reason = unsupported(precision.gemm)) throw UsageError(*reason);
  precision_ = precision;
}

void CudaTransformerOps::round_to(float* x, std::size_t n, num::Format format) {
  if (format == num::Format::fp32) return;
  device_->activate();
  cuda_kernels::round_values(launch_, x, n, format);
}

void CudaTransformerOps::begin_op(std::string_view op, int layer, Phase phase) {
  op_ranges_.push_back(op_range_name(op, layer, phase));
  nvtxRangePushA(op_ranges_.back().c_str());
}

void CudaTransformerOps::end_op() {
  nvtxRangePop();
  if (!op_ranges_.empty()) op_ranges_.pop_back();
}

std::vector<GemmAlgorithm> CudaTransformerOps::gemm_algorithms() const {
  std::vector<GemmAlgorithm> algorithms;
  for (const auto& [problem, plan] : plans_.plans()) {
    const cuda::MatmulRecord& record = plan.record();
    nlohmann::json configuration = nlohmann::json::object();
    for (const char* key : {"algo_id", "tile", "stages", "split_k"})
      if (record.description.contains(key)) configuration[key] = record.description[key];
    algorithms.push_back({record.gemm, record.problem, problem.precision, problem.batch > 1, record.tensor_cores,
                          record.numerical_impl_flags, record.compute_type, problem.m, problem.n, problem.k,
                          std::move(configuration)});
  }
  return algorithms;
}

num::Format CudaTransformerOps::input_format() const { return gemm_input_format(precision_.gemm); }

const void* CudaTransformerOps::gemm_operand(ConstTensor<float> values, std::size_t n, Slot slot) {
  const num::Format format = input_format();
  if (values.is_real() ? !is_half(format) : storage_format(values.storage()) == format) return values.data();
  void* converted = scratch(slot, n * cuda_kernels::operand_bytes(format));
  cuda_kernels::convert_operands(launch_, converted, values, n, format);
  return converted;
}

void CudaTransformerOps::gemm(const GemmCall& call) {
  cuda::MatmulProblem problem;
  problem.precision = precision_.gemm;
  problem.output = DType::f32;
  problem.transpose_a = call.transpose_a, problem.transpose_b = call.transpose_b;
  problem.m = call.m, problem.n = call.n, problem.k = call.k;
  problem.lda = call.lda, problem.ldb = call.ldb, problem.ldd = call.ldd;
  problem.batch = call.batch;
  problem.stride_a = call.stride_a, problem.stride_b = call.stride_b, problem.stride_d = call.stride_d;
  problem.cuda_cores_only = tensor_core_policy_ == TensorCorePolicy::off ||
                            (tensor_core_policy_ == TensorCorePolicy::batched_off && call.batch > 1);
  const cuda::MatmulPlan& plan =
      plans_.plan(cuda::with_alignments(problem, call.a, call.b, call.d), [&] { return gemm_label(call.name); });
  plan.run(call.a, call.b, call.d, call.accumulate);
}

cuda::MatmulLabel CudaTransformerOps::gemm_label(const char* name) const {
  const std::string op = op_ranges_.empty() ? std::string("no op range") : "op " + op_ranges_.back();
  return {name, fmt::format("the {} GEMM of {}", name, op),
          fmt::format("--tensor-cores {}", tensor_core_policy_name(tensor_core_policy_))};
}

void CudaTransformerOps::gemm_add(Tensor<float> dst, std::size_t count, GemmCall call) {
  if (precision_.output == num::Format::fp32 && dst.is_real()) {
    call.d = dst.real("gemm_add");
    call.accumulate = true;
    gemm(call);
    return;
  }
  // The result is rounded before it is added (and the sum to dst's storage), so it needs a buffer
  // of its own.
  call.d = static_cast<float*>(scratch(kGemmResult, count * sizeof(float)));
  call.accumulate = false;
  gemm(call);
  cuda_kernels::add_rounded(launch_, dst, call.d, count, precision_.output);
}

void CudaTransformerOps::encoder_forward(Tensor<float> out, const std::int32_t* tokens, const float* wte,
                                         const float* wpe, int B, int T, int C) {
  device_->activate();
  cuda_kernels::encoder_forward(launch_, out, tokens, wte, wpe, B, T, C);
}

void CudaTransformerOps::encoder_backward(float* dwte, float* dwpe, ConstTensor<float> dout,
                                          const std::int32_t* tokens, int B, int T, int C) {
  device_->activate();
  cuda_kernels::encoder_backward(launch_, dwte, dwpe, dout, tokens, B, T, C);
}

void CudaTransformerOps::layernorm_forward(Tensor<float> out, float* mean, float* rstd, ConstTensor<float> inp,
                                           const float* weight, const float* bias, int N, int C) {
  device_->activate();
  cuda_kernels::layernorm_forward(launch_, out, mean, rstd, inp, weight, bias, N, C);
}

void CudaTransformerOps::layernorm_backward(Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout,
                                            ConstTensor<float> inp, const float* weight, const float* mean,
                                            const float* rstd, int N, int C) {
  device_->activate();
  cuda_kernels::layernorm_backward(launch_, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

// Row-major out [N,OC] = inp [N,C] weight [OC,C]^T is column-major out^T (OC x N) = weight^T^T inp^T:
// A = weight, stored as the column-major C x OC matrix weight^T and read transposed; B = inp, stored
// as the column-major C x N matrix inp^T.
// A half out gets the GEMM's fp32 result through a buffer, rounded into it with the bias, a block of
// rows at a time: the buffer stays within limit_half_output_buffer's bytes (the logits of gpt2-124m
// at B=8 would need 1.5 GiB of floats in one piece).
void CudaTransformerOps::matmul_forward(Tensor<float> out, ConstTensor<float> inp, const float* weight,
                                        const float* bias, int N, int C, int OC) {
  if (N <= 0 || OC <= 0) return;
  device_->activate();
  const void* x = gemm_operand(inp, std::size_t(N) * C, kOperandA);
  const void* w = gemm_operand(weight, std::size_t(OC) * C, kOperandB);
  const std::size_t x_row_bytes = std::size_t(C) * cuda_kernels::operand_bytes(input_format());
  // Blocks of a multiple of 128 rows keep every block's operand 256-byte aligned.
  const int rows = out.is_real() ? N
                                 : std::max<int>(128, static_cast<int>(half_output_buffer_bytes_ /
                                                                       (std::size_t(OC) * sizeof(float)) / 128 * 128));
  for (int first = 0; first < N; first += rows) {
    const int n = std::min(rows, N - first);
    GemmCall call;
    call.name = "matmul forward (inp weight^T)";
    call.transpose_a = true;
    call.m = OC, call.n = n, call.k = C;
    call.a = w, call.lda = C;
    call.b = static_cast<const std::byte*>(x) + first * x_row_bytes, call.ldb = C;
    call.d = out.is_real() ? out.real("matmul_forward")
                           : static_cast<float*>(scratch(kGemmResult, std::size_t(n) * OC * sizeof(float)));
    call.ldd = OC;
    gemm(call);
    if (bias != nullptr || precision_.output != num::Format::fp32 || !out.is_real())
      cuda_kernels::add_bias_and_round(launch_, out.at(std::size_t(first) * OC), call.d, bias, n, OC,
                                       precision_.output);
  }
}

// dinp [N,C] += dout [N,OC] weight [OC,C]: column-major dinp^T (C x N) = weight^T (C x OC, as stored)
// dout^T (OC x N, as stored). dweight [OC,C] += dout^T inp: column-major dweight^T (C x OC) =
// inp^T (C x N, as stored) dout (N x OC: the stored OC x N dout^T read transposed).
void CudaTransformerOps::matmul_backward(Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout,
                                         ConstTensor<float> inp, const float* weight, int N, int C, int OC) {
  if (N <= 0 || C <= 0 || OC <= 0) return;
  device_->activate();
  const void* dy = gemm_operand(dout, std::size_t(N) * OC, kOperandA);
  const void* w = gemm_operand(weight, std::size_t(OC) * C, kOperandB);
  const void* x = gemm_operand(inp, std::size_t(N) * C, kOperandC);
  GemmCall input_grad;
  input_grad.name = "matmul input gradient (dout weight)";
  input_grad.m = C, input_grad.n = N, input_grad.k = OC;
  input_grad.a = w, input_grad.lda = C;
  input_grad.b = dy, input_grad.ldb = OC;
  input_grad.ldd = C;
  gemm_add(dinp, std::size_t(N) * C, input_grad);
  GemmCall weight_grad;
  weight_grad.name = "matmul weight gradient (dout^T inp)";
  weight_grad.transpose_b = true;
  weight_grad.m = C, weight_grad.n = OC, weight_grad.k = N;
  weight_grad.a = x, weight_grad.lda = C;
  weight_grad.b = dy, weight_grad.ldb = OC;
  weight_grad.ldd = C;
  gemm_add(dweight, std::size_t(OC) * C, weight_grad);
  if (dbias != nullptr) cuda_kernels::add_column_sums(launch_, dbias, dout, N, OC, precision_.output);
}

// Per (b, h), with q, k, v, y as [T,hs] row-major (column-major hs x T: q^T, ...) and att [T,T]
// row-major (column-major: att^T):
//   scores: column-major att^T (T x T) = k (k^T read transposed) q^T, in place in att;
//   y:      column-major y^T (hs x T) = v^T att^T.
void CudaTransformerOps::attention_forward(Tensor<float> out, float* att, ConstTensor<float> qkv, int B, int T, int C,
                                           int NH) {
  if (B <= 0 || T <= 0 || C <= 0) return;
  device_->activate();
  if (attention() == AttentionKernels::fused) {
    fused_attention_forward(out, att, qkv, B, T, C, NH);
    return;
  }
  const int hs = C / NH;
  const num::Format format = input_format();
  const std::size_t head_elements = std::size_t(B) * NH * T * hs;
  const std::size_t att_elements = std::size_t(B) * NH * T * T;
  const std::size_t operand = cuda_kernels::operand_bytes(format);
  const auto [q, k, v] = qkv_to_heads(qkv, B, T, C, NH);

  GemmCall scores;
  scores.name = "attention scores (q k^T)";
  scores.transpose_a = true;
  scores.m = T, scores.n = T, scores.k = hs;
  scores.a = k, scores.lda = hs, scores.stride_a = std::int64_t(T) * hs;
  scores.b = q, scores.ldb = hs, scores.stride_b = std::int64_t(T) * hs;
  scores.d = att, scores.ldd = T, scores.stride_d = std::int64_t(T) * T;
  scores.batch = B * NH;
  gemm(scores);
  cuda_kernels::causal_softmax(launch_, att, B * NH, T, static_cast<float>(1.0 / std::sqrt(double(hs))));

  const void* probs = att;
  if (format != num::Format::fp32) {
    void* converted = scratch(kProbsOperand, att_elements * operand);
    cuda_kernels::convert_operands(launch_, converted, att, att_elements, format);
    probs = converted;
  }
  float* y = static_cast<float*>(scratch(kHeadsOutA, head_elements * sizeof(float)));
  GemmCall values;
  values.name = "attention output (att v)";
  values.m = hs, values.n = T, values.k = T;
  values.a = v, values.lda = hs, values.stride_a = std::int64_t(T) * hs;
  values.b = probs, values.ldb = T, values.stride_b = std::int64_t(T) * T;
  values.d = y, values.ldd = hs, values.stride_d = std::int64_t(T) * hs;
  values.batch = B * NH;
  gemm(values);
  cuda_kernels::heads_to_rows(launch_, out, y, num::Format::fp32, C, B, T, NH, hs, false);
}

// Per (b, h), in the forward's column-major terms:
//   datt^T (T x T) = v (v^T read transposed) dy^T;  dv^T (hs x T) = dy^T att (att^T read transposed);
//   dscore from the softmax backward kernel;
//   dq^T (hs x T) = k^T dscore^T;                    dk^T (hs x T) = q^T dscore (dscore^T read transposed).
void CudaTransformerOps::attention_backward(Tensor<float> dqkv, ConstTensor<float> dout, ConstTensor<float> qkv,
                                            const float* att, int B, int T, int C, int NH) {
  if (B <= 0 || T <= 0 || C <= 0) return;
  device_->activate();
  if (attention() == AttentionKernels::fused) {
    fused_attention_backward(dqkv, dout, qkv, att, B, T, C, NH);
    return;
  }
  const int hs = C / NH;
  const int BNH = B * NH;
  const num::Format format = input_format();
  const std::size_t head_elements = std::size_t(BNH) * T * hs;
  const std::size_t att_elements = std::size_t(BNH) * T * T;
  const std::size_t operand = cuda_kernels::operand_bytes(format);
  const std::int64_t head_stride = std::int64_t(T) * hs;
  const std::int64_t att_stride = std::int64_t(T) * T;
  const auto [q, k, v] = qkv_to_heads(qkv, B, T, C, NH);
  void* dy = scratch(kHeadsDy, head_elements * operand);
  cuda_kernels::rows_to_heads(launch_, dy, dout, C, B, T, NH, hs, format);
  const void* probs = att;
  if (format != num::Format::fp32) {
    void* converted = scratch(kProbsOperand, att_elements * operand);
    cuda_kernels::convert_operands(launch_, converted, att, att_elements, format);
    probs = converted;
  }

  float* datt = static_cast<float*>(scratch(kScoresGrad, att_elements * sizeof(float)));
  GemmCall att_grad;
  att_grad.name = "attention probability gradient (dy v^T)";
  att_grad.transpose_a = true;
  att_grad.m = T, att_grad.n = T, att_grad.k = hs;
  att_grad.a = v, att_grad.lda = hs, att_grad.stride_a = head_stride;
  att_grad.b = dy, att_grad.ldb = hs, att_grad.stride_b = head_stride;
  att_grad.d = datt, att_grad.ldd = T, att_grad.stride_d = att_stride;
  att_grad.batch = BNH;
  gemm(att_grad);

  float* dv = static_cast<float*>(scratch(kHeadsOutC, head_elements * sizeof(float)));
  GemmCall value_grad;
  value_grad.name = "attention value gradient (att^T dy)";
  value_grad.transpose_b = true;
  value_grad.m = hs, value_grad.n = T, value_grad.k = T;
  value_grad.a = dy, value_grad.lda = hs, value_grad.stride_a = head_stride;
  value_grad.b = probs, value_grad.ldb = T, value_grad.stride_b = att_stride;
  value_grad.d = dv, value_grad.ldd = hs, value_grad.stride_d = head_stride;
  value_grad.batch = BNH;
  gemm(value_grad);

  void* dscore = scratch(kDscoreOperand, att_elements * operand);
  cuda_kernels::causal_softmax_backward(launch_, dscore, att, datt, BNH, T,
                                        static_cast<float>(1.0 / std::sqrt(double(hs))), format);

  float* dq = static_cast<float*>(scratch(kHeadsOutA, head_elements * sizeof(float)));
  GemmCall query_grad;
  query_grad.name = "attention query gradient (dscore k)";
  query_grad.m = hs, query_grad.n = T, query_grad.k = T;
  query_grad.a = k, query_grad.lda = hs, query_grad.stride_a = head_stride;
  query_grad.b = dscore, query_grad.ldb = T, query_grad.stride_b = att_stride;
  query_grad.d = dq, query_grad.ldd = hs, query_grad.stride_d = head_stride;
  query_grad.batch = BNH;
  gemm(query_grad);

  float* dk = static_cast<float*>(scratch(kHeadsOutB, head_elements * sizeof(float)));
  GemmCall key_grad;
  key_grad.name = "attention key gradient (dscore^T q)";
  key_grad.transpose_b = true;
  key_grad.m = hs, key_grad.n = T, key_grad.k = T;
  key_grad.a = q, key_grad.lda = hs, key_grad.stride_a = head_stride;
  key_grad.b = dscore, key_grad.ldb = T, key_grad.stride_b = att_stride;
  key_grad.d = dk, key_grad.ldd = hs, key_grad.stride_d = head_stride;
  key_grad.batch = BNH;
  gemm(key_grad);

  add_heads_to_qkv(dqkv, {dq, dk, dv}, num::Format::fp32, B, T, C, NH);
}

std::array<void*, 3> CudaTransformerOps::qkv_to_heads(ConstTensor<float> qkv, int B, int T, int C, int NH) {
  const std::size_t bytes = std::size_t(B) * T * C * cuda_kernels::operand_bytes(input_format());
  std::array<void*, 3> heads{scratch(kHeadsQ, bytes), scratch(kHeadsK, bytes), scratch(kHeadsV, bytes)};
  for (int part = 0; part < 3; ++part)
    cuda_kernels::rows_to_heads(launch_, heads[part], qkv.at(part * C), 3 * C, B, T, NH, C / NH, input_format());
  return heads;
}

void CudaTransformerOps::add_heads_to_qkv(Tensor<float> dqkv, const std::array<const void*, 3>& heads,
                                          num::Format format, int B, int T, int C, int NH) {
  for (int part = 0; part < 3; ++part)
    cuda_kernels::heads_to_rows(launch_, dqkv.at(part * C), heads[part], format, 3 * C, B, T, NH, C / NH, true);
}

FusedAttention& CudaTransformerOps::fused_attention() {
  if (!fused_) {
    fused_ = make_fused_attention(device_->stream(),
                                  [this](std::size_t bytes) { return scratch(kAttentionWorkspace, bytes); });
  }
  return *fused_;
}

// The fused kernels read q, k, v as [B,NH,T,hs] 16-bit operands (the same layout and rounding as the
// unfused path's) and write out in that layout; att keeps the softmax statistics [B,NH,T] and,
// after them, the forward's 16-bit output, which the backward needs.
void CudaTransformerOps::require_half_operands() const {
  if (!is_half(input_format()))
    throw BackendError(fmt::format("fused attention takes fp16 or bf16 operands, not {} (use --attention unfused "
                                   "or auto for this mode)",
                                   gemm_precision_info(precision_.gemm).name));
}

void CudaTransformerOps::fused_attention_forward(Tensor<float> out, float* att, ConstTensor<float> qkv, int B, int T,
                                                 int C, int NH) {
  require_half_operands();
  const AttentionShape shape{B, NH, T, C / NH};
  const auto [q, k, v] = qkv_to_heads(qkv, B, T, C, NH);
  float* stats = att;
  void* y = att + fused_attention_statistics_elements(B, T, NH);
  fused_attention().forward(y, stats, q, k, v, shape, input_format());
  cuda_kernels::heads_to_rows(launch_, out, y, input_format(), C, B, T, NH, shape.hs, false);
}

void CudaTransformerOps::fused_attention_backward(Tensor<float> dqkv, ConstTensor<float> dout, ConstTensor<float> qkv,
                                                  const float* att, int B, int T, int C, int NH) {
  require_half_operands();
  const AttentionShape shape{B, NH, T, C / NH};
  const auto [q, k, v] = qkv_to_heads(qkv, B, T, C, NH);
  const num::Format format = input_format();
  const std::size_t bytes = std::size_t(B) * T * C * cuda_kernels::operand_bytes(format);
  void* dy = scratch(kHeadsDy, bytes);
  cuda_kernels::rows_to_heads(launch_, dy, dout, C, B, T, NH, shape.hs, format);
  void* dq = scratch(kHeadsOutA, bytes);
  void* dk = scratch(kHeadsOutB, bytes);
  void* dv = scratch(kHeadsOutC, bytes);
  const float* stats = att;
  const void* y = att + fused_attention_statistics_elements(B, T, NH);
  fused_attention().backward(dq, dk, dv, dy, q, k, v, y, stats, shape, format);
  add_heads_to_qkv(dqkv, {dq, dk, dv}, format, B, T, C, NH);
}

void CudaTransformerOps::gelu_forward(Tensor<float> out, ConstTensor<float> inp, std::size_t n) {
  device_->activate();
  cuda_kernels::gelu_forward(launch_, out, inp, n);
}

void CudaTransformerOps::gelu_backward(Tensor<float> dinp, ConstTensor<float> dout, ConstTensor<float> inp,
                                       std::size_t n) {
  device_->activate();
  cuda_kernels::gelu_backward(launch_, dinp, dout, inp, n);
}

void CudaTransformerOps::residual_forward(Tensor<float> out, ConstTensor<float> a, ConstTensor<float> b,
                                          std::size_t n) {
  device_->activate();
  cuda_kernels::residual_forward(launch_, out, a, b, n);
}

void CudaTransformerOps::residual_backward(Tensor<float> da, Tensor<float> db, ConstTensor<float> dout,
                                           std::size_t n) {
  device_->activate();
  cuda_kernels::residual_backward(launch_, da, db, dout, n);
}

void CudaTransformerOps::softmax_crossentropy_forward(float* losses, float* probs, ConstTensor<float> logits,
                                                      const std::int32_t* targets, int N, int V, int Vp) {
  device_->activate();
  cuda_kernels::softmax_crossentropy_forward(launch_, losses, probs, logits, targets, N, V, Vp);
}

void CudaTransformerOps::softmax_crossentropy_backward(Tensor<float> dlogits, const float* dlosses, const float* probs,
                                                       const std::int32_t* targets, int N, int V, int Vp) {
  device_->activate();
  cuda_kernels::softmax_crossentropy_backward(launch_, dlogits, dlosses, probs, targets, N, V, Vp);
}

void CudaTransformerOps::adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                                      const AdamWStep& step) {
  device_->activate();
  cuda_kernels::adamw_update(launch_, params, grads, m, v, n, step);
}

double CudaTransformerOps::global_norm(const float* grads, std::size_t n) {
  device_->activate();
  double* partials = reinterpret_cast<double*>(scratch_[kNormPartials].data());
  const unsigned blocks = cuda_kernels::sum_of_squares(launch_, partials, grads, n);
  std::vector<double> host(blocks);
  copy_to_host(host.data(), partials, blocks * sizeof(double));
  double sum = 0;
  for (double partial : host) sum += partial;
  return std::sqrt(sum);
}

void CudaTransformerOps::copy(float* dst, const float* src, std::size_t n) {
  if (n == 0) return;
  device_->activate();
  check(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, device_->stream()),
        "cudaMemcpyAsync (device to device)");
}

}  // namespace mpbench::workloads
