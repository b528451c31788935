// The Transformer workload's own kernels, llm.c style: one kernel per job, fp32 arithmetic, the
// per-element math of workloads/elementwise.hpp. Byte counts are per element (or per row) of the
// main tensor: reads + writes, no write-allocate traffic, small cached vectors not counted. An
// activation element ("a") is 4 bytes in real storage and 2 in fp16/bf16.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "amp/formats.hpp"
#include "backends/cuda/check.hpp"
#include "workloads/cuda/transformer_kernels.hpp"

namespace mpbench::workloads::cuda_kernels {

namespace {

constexpr int kThreads = 256;             // threads of every 1-D block
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr int kTile = 32;                 // column reductions: 32 columns x 32 row slices per block

__device__ std::size_t global_thread() { return blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; }
__device__ std::size_t grid_threads() { return std::size_t(gridDim.x) * blockDim.x; }

struct Sum {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Reduces over the 32 lanes of a warp; every lane gets the result.
template <typename T, typename Op>
__device__ T warp_reduce(T value, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// Reduces over a block of kThreads threads; every thread gets the result. May be called several
// times in a row (the first barrier keeps a call from overwriting what the previous one shares).
template <typename T, typename Op>
__device__ T block_reduce(T value, Op op, T identity) {
  __shared__ T partial[kWarpsPerBlock];
  __shared__ T result;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  value = warp_reduce(value, op);
  __syncthreads();
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = warp_reduce(lane < kWarpsPerBlock ? partial[lane] : identity, op);
    if (lane == 0) result = value;
  }
  __syncthreads();
  return result;
}

// An activation tensor as a kernel takes it: floats, or fp16/bf16 codes.
struct Elements {
  void* data;
  Storage storage;
};
struct ConstElements {
  const void* data;
  Storage storage;
};
Elements elements(Tensor<float> x) { return {x.data(), x.storage()}; }
ConstElements elements(ConstTensor<float> x) { return {x.data(), x.storage()}; }

// x as an operand of `format`, stored at element i of out (float or 16-bit codes).
__device__ void store_operand(void* out, std::size_t i, float x, num::Format format) {
  switch (format) {
    case num::Format::fp16: static_cast<std::uint16_t*>(out)[i] = num::f32_to_f16_bits(x); return;
    case num::Format::bf16: static_cast<std::uint16_t*>(out)[i] = num::f32_to_bf16_bits(x); return;
    case num::Format::tf32: static_cast<float*>(out)[i] = num::round_to_tf32(x); return;
    default: static_cast<float*>(out)[i] = x; return;
  }
}

// Element i of in (float or 16-bit codes of `format`) as a float.
__device__ float load_operand(const void* in, std::size_t i, num::Format format) {
  switch (format) {
    case num::Format::fp16: return num::f16_bits_to_f32(static_cast<const std::uint16_t*>(in)[i]);
    case num::Format::bf16: return num::bf16_bits_to_f32(static_cast<const std::uint16_t*>(in)[i]);
    default: return static_cast<const float*>(in)[i];
  }
}

// Element i of x as a float: an activation is stored as an operand of its storage's format.
__device__ float load(ConstElements x, std::size_t i) { return load_operand(x.data, i, storage_format(x.storage)); }
__device__ float load(Elements x, std::size_t i) { return load(ConstElements{x.data, x.storage}, i); }

// Element i of x = value, rounded to x's storage.
__device__ void store(Elements x, std::size_t i, float value) {
  store_operand(x.data, i, value, storage_format(x.storage));
}

// out[i] = operand(in[i]): a + 2 (fp16, bf16) or a + 4 bytes per element.
__global__ void __launch_bounds__(kThreads) convert_operands_kernel(void* out, ConstElements in, std::size_t n,
                                                                    num::Format format) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) store_operand(out, i, load(in, i), format);
}

// x[i] = round(x[i]): 8 bytes per element.
__global__ void __launch_bounds__(kThreads) round_kernel(float* x, std::size_t n, num::Format format) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) x[i] = round_to_format(x[i], format);
}

// out[n,o] = round(result[n,o] + bias[o]): 4 + a bytes per element.
__global__ void __launch_bounds__(kThreads) bias_round_kernel(Elements out, const float* result, const float* bias,
                                                              std::size_t rows, int OC, num::Format format) {
  const std::size_t n = rows * OC;
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    const float value = bias != nullptr ? result[i] + bias[i % OC] : result[i];
    store(out, i, round_to_format(value, format));
  }
}

// acc[i] += round(x[i]): 4 + 2a bytes per element.
__global__ void __launch_bounds__(kThreads) add_rounded_kernel(Elements acc, const float* x, std::size_t n,
                                                               num::Format format) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads())
    store(acc, i, load(acc, i) + round_to_format(x[i], format));
}

// Block (32, 32) sums 32 columns of in [N,C]: thread (x, y) adds rows y, y+32, ... of column x, then
// row y = 0 of the block adds the 32 partial sums. dsum[c] += round(sum): a bytes per element.
__global__ void __launch_bounds__(kTile* kTile) column_sums_kernel(float* dsum, ConstElements in, int N, int C,
                                                                   num::Format format) {
  __shared__ float partial[kTile][kTile + 1];
  const int c = blockIdx.x * kTile + threadIdx.x;
  float sum = 0;
  if (c < C) {
    for (int n = threadIdx.y; n < N; n += kTile) sum += load(in, std::size_t(n) * C + c);
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float total = 0;
    for (int y = 0; y < kTile; ++y) total += partial[y][threadIdx.x];
    dsum[c] += round_to_format(total, format);
  }
}

// out[b,t,c] = wte[token,c] + wpe[t,c]: 8 + a bytes per element.
__global__ void __launch_bounds__(kThreads) encoder_forward_kernel(Elements out, const std::int32_t* tokens,
                                                                   const float* wte, const float* wpe, int T, int C,
                                                                   std::size_t n) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    const std::size_t row = i / C;  // b*T + t
    const int c = static_cast<int>(i % C);
    const int t = static_cast<int>(row % T);
    store(out, i, wte[std::size_t(tokens[row]) * C + c] + wpe[std::size_t(t) * C + c]);
  }
}

// dwte[token,c] += dout, dwpe[t,c] += dout, by fp32 atomics (rows of repeated tokens collide):
// a bytes read and two atomic read-modify-writes per element.
__global__ void __launch_bounds__(kThreads) encoder_backward_kernel(float* dwte, float* dwpe, ConstElements dout,
                                                                    const std::int32_t* tokens, int T, int C,
                                                                    std::size_t n) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    const std::size_t row = i / C;
    const int c = static_cast<int>(i % C);
    const int t = static_cast<int>(row % T);
    const float grad = load(dout, i);
    atomicAdd(&dwte[std::size_t(tokens[row]) * C + c], grad);
    atomicAdd(&dwpe[std::size_t(t) * C + c], grad);
  }
}

// One warp per row of inp [N,C]: mean, then the biased variance around it (two passes), then
// out = (x - mean) * rstd * weight + bias. Per row: 3 * aC read, aC written, mean and rstd.
__global__ void __launch_bounds__(kThreads) layernorm_forward_kernel(Elements out, float* mean, float* rstd,
                                                                     ConstElements inp, const float* weight,
                                                                     const float* bias, int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;  // the whole warp leaves together
  const std::size_t first = std::size_t(row) * C;
  float sum = 0;
  for (int c = lane; c < C; c += 32) sum += load(inp, first + c);
  const float m = warp_reduce(sum, Sum{}) / C;
  float squares = 0;
  for (int c = lane; c < C; c += 32) {
    const float d = load(inp, first + c) - m;
    squares += d * d;
  }
  const float s = 1.0f / sqrtf(warp_reduce(squares, Sum{}) / C + 1e-5f);
  for (int c = lane; c < C; c += 32) store(out, first + c, (load(inp, first + c) - m) * s * weight[c] + bias[c]);
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

// One warp per row: with xhat = (x - mean) * rstd and g = dout * weight,
// dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)). Per row: 2 * (aC + aC) read, aC read-modify-write.
__global__ void __launch_bounds__(kThreads) layernorm_backward_input_kernel(Elements dinp, ConstElements dout,
                                                                            ConstElements inp, const float* weight,
                                                                            const float* mean, const float* rstd,
                                                                            int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const std::size_t first = std::size_t(row) * C;
  const float m = mean[row], s = rstd[row];
  float g_sum = 0, g_xhat_sum = 0;
  for (int c = lane; c < C; c += 32) {
    const float g = load(dout, first + c) * weight[c];
    g_sum += g;
    g_xhat_sum += g * (load(inp, first + c) - m) * s;
  }
  const float g_mean = warp_reduce(g_sum, Sum{}) / C;
  const float g_xhat_mean = warp_reduce(g_xhat_sum, Sum{}) / C;
  for (int c = lane; c < C; c += 32) {
    const std::size_t i = first + c;
    const float xhat = (load(inp, i) - m) * s;
    store(dinp, i, load(dinp, i) + s * (load(dout, i) * weight[c] - g_mean - xhat * g_xhat_mean));
  }
}

// dweight[c] += sum_n dout * xhat, dbias[c] += sum_n dout, by the column scheme of
// column_sums_kernel: 2a bytes read per element.
__global__ void __launch_bounds__(kTile* kTile) layernorm_backward_params_kernel(float* dweight, float* dbias,
                                                                                 ConstElements dout, ConstElements inp,
                                                                                 const float* mean, const float* rstd,
                                                                                 int N, int C) {
  __shared__ float weight_partial[kTile][kTile + 1];
  __shared__ float bias_partial[kTile][kTile + 1];
  const int c = blockIdx.x * kTile + threadIdx.x;
  float dw = 0, db = 0;
  if (c < C) {
    for (int n = threadIdx.y; n < N; n += kTile) {
      const std::size_t i = std::size_t(n) * C + c;
      const float dy = load(dout, i);
      dw += dy * (load(inp, i) - mean[n]) * rstd[n];
      db += dy;
    }
  }
  weight_partial[threadIdx.y][threadIdx.x] = dw;
  bias_partial[threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float weight_total = 0, bias_total = 0;
    for (int y = 0; y < kTile; ++y) {
      weight_total += weight_partial[y][threadIdx.x];
      bias_total += bias_partial[y][threadIdx.x];
    }
    dweight[c] += weight_total;
    dbias[c] += bias_total;
  }
}

// out = gelu(inp): 2a bytes per element.
__global__ void __launch_bounds__(kThreads) gelu_forward_kernel(Elements out, ConstElements inp, std::size_t n) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) store(out, i, gelu(load(inp, i)));
}

// dinp += gelu'(inp) * dout: 4a bytes per element.
__global__ void __launch_bounds__(kThreads) gelu_backward_kernel(Elements dinp, ConstElements dout, ConstElements inp,
                                                                 std::size_t n) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads())
    store(dinp, i, load(dinp, i) + gelu_derivative(load(inp, i)) * load(dout, i));
}

// out = a + b: 3a bytes per element.
__global__ void __launch_bounds__(kThreads) residual_forward_kernel(Elements out, ConstElements a, ConstElements b,
                                                                    std::size_t n) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) store(out, i, load(a, i) + load(b, i));
}

// da += dout, db += dout: 5a bytes per element.
__global__ void __launch_bounds__(kThreads) residual_backward_kernel(Elements da, Elements db, ConstElements dout,
                                                                     std::size_t n) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    const float grad = load(dout, i);
    store(da, i, load(da, i) + grad);
    store(db, i, load(db, i) + grad);
  }
}

// One block per row n of logits [N,Vp]: max and sum of exp over the first V columns, probs (0 in the
// padding), loss = log(sum) - (logit[target] - max). Per row: 3 * aV read, 4Vp written.
__global__ void __launch_bounds__(kThreads) softmax_crossentropy_forward_kernel(float* losses, float* probs,
                                                                                ConstElements logits,
                                                                                const std::int32_t* targets, int V,
                                                                                int Vp) {
  const std::size_t row = blockIdx.x;
  const std::size_t first = row * Vp;
  float local_max = -INFINITY;
  for (int v = threadIdx.x; v < V; v += kThreads) local_max = fmaxf(local_max, load(logits, first + v));
  const float max_logit = block_reduce(local_max, Max{}, -INFINITY);
  float local_sum = 0;
  for (int v = threadIdx.x; v < V; v += kThreads) local_sum += expf(load(logits, first + v) - max_logit);
  const float total = block_reduce(local_sum, Sum{}, 0.0f);
  float* p = probs + first;
  for (int v = threadIdx.x; v < Vp; v += kThreads)
    p[v] = v < V ? expf(load(logits, first + v) - max_logit) / total : 0.0f;
  if (threadIdx.x == 0) losses[row] = logf(total) - (load(logits, first + targets[row]) - max_logit);
}

// dlogits[n,v] += dlosses[n] * (probs[n,v] - [v == target]) for v < V; the padding is left alone.
// 4 + 2a bytes per element.
__global__ void __launch_bounds__(kThreads) softmax_crossentropy_backward_kernel(Elements dlogits, const float* dlosses,
                                                                                 const float* probs,
                                                                                 const std::int32_t* targets, int V,
                                                                                 int Vp, std::size_t n) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    const std::size_t row = i / Vp;
    const int v = static_cast<int>(i % Vp);
    if (v >= V) continue;
    const float indicator = v == targets[row] ? 1.0f : 0.0f;
    store(dlogits, i, load(dlogits, i) + dlosses[row] * (probs[i] - indicator));
  }
}

// One AdamW step per parameter (adamw_update_element): 4 reads and 3 writes of 4 bytes.
__global__ void __launch_bounds__(kThreads) adamw_kernel(float* params, const float* grads, float* m, float* v,
                                                         std::size_t n, AdamWStep step) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    float p = params[i], mi = m[i], vi = v[i];
    adamw_update_element(p, mi, vi, grads[i], step);
    params[i] = p;
    m[i] = mi;
    v[i] = vi;
  }
}

// partials[block] = sum of x^2 (in double) over the elements the block visits: 4 bytes per element.
__global__ void __launch_bounds__(kThreads) sum_of_squares_kernel(double* partials, const float* x, std::size_t n) {
  double sum = 0;
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) sum += double(x[i]) * double(x[i]);
  const double block_sum = block_reduce(sum, Sum{}, 0.0);
  if (threadIdx.x == 0) partials[blockIdx.x] = block_sum;
}

// heads [B,NH,T,hs] = operand(rows[b*T+t, h*hs+d]): a + 2 or a + 4 bytes per element.
__global__ void __launch_bounds__(kThreads) rows_to_heads_kernel(void* heads, ConstElements rows, int row_stride,
                                                                 int T, int NH, int hs, std::size_t n,
                                                                 num::Format format) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    const int d = static_cast<int>(i % hs);
    const std::size_t t = i / hs % T;
    const int h = static_cast<int>(i / (std::size_t(hs) * T) % NH);
    const std::size_t b = i / (std::size_t(hs) * T * NH);
    store_operand(heads, i, load(rows, (b * T + t) * row_stride + h * hs + d), format);
  }
}

// rows[b*T+t, h*hs+d] = (or +=) heads [B,NH,T,hs] (floats or 16-bit codes of `format`): 2 or 4
// bytes read per element, a written (and a more read when accumulating).
__global__ void __launch_bounds__(kThreads) heads_to_rows_kernel(Elements rows, const void* heads, int row_stride,
                                                                 int T, int NH, int hs, std::size_t n,
                                                                 num::Format format, bool accumulate) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    const int d = static_cast<int>(i % hs);
    const std::size_t t = i / hs % T;
    const int h = static_cast<int>(i / (std::size_t(hs) * T) % NH);
    const std::size_t b = i / (std::size_t(hs) * T * NH);
    const std::size_t out = (b * T + t) * row_stride + h * hs + d;
    const float value = load_operand(heads, i, format);
    store(rows, out, accumulate ? load(rows, out) + value : value);
  }
}

// One warp per row (b, h, t) of att [BNH,T,T], in place: scores s of t2 <= t become
// exp(scale * s - max) / sum, the rest 0. Each lane reads and writes only its own columns.
// Per row: 2 * 4(t+1) read, 4T written.
__global__ void __launch_bounds__(kThreads) causal_softmax_kernel(float* att, std::size_t rows, int T, float scale) {
  const std::size_t row = blockIdx.x * std::size_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = static_cast<int>(row % T);
  float* s = att + row * T;
  float local_max = -INFINITY;
  for (int t2 = lane; t2 <= t; t2 += 32) local_max = fmaxf(local_max, scale * s[t2]);
  const float max_score = warp_reduce(local_max, Max{});
  float local_sum = 0;
  for (int t2 = lane; t2 <= t; t2 += 32) local_sum += expf(scale * s[t2] - max_score);
  const float total = warp_reduce(local_sum, Sum{});
  for (int t2 = lane; t2 < T; t2 += 32) s[t2] = t2 <= t ? expf(scale * s[t2] - max_score) / total : 0.0f;
}

// One warp per row (b, h, t): weighted = sum_{t2<=t} att * datt, then
// dscore = operand(att * (datt - weighted) * scale) for t2 <= t, 0 above. Per row: 2 * 8(t+1) read,
// 2T or 4T written.
__global__ void __launch_bounds__(kThreads) causal_softmax_backward_kernel(void* dscore, const float* att,
                                                                           const float* datt, std::size_t rows,
                                                                           int T, float scale, num::Format format) {
  const std::size_t row = blockIdx.x * std::size_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = static_cast<int>(row % T);
  const float* a = att + row * T;
  const float* da = datt + row * T;
  float local = 0;
  for (int t2 = lane; t2 <= t; t2 += 32) local += a[t2] * da[t2];
  const float weighted = warp_reduce(local, Sum{});
  for (int t2 = lane; t2 < T; t2 += 32) {
    const float value = t2 <= t ? a[t2] * (da[t2] - weighted) * scale : 0.0f;
    store_operand(dscore, row * T + t2, value, format);
  }
}

unsigned grid_for(const Launch& launch, std::size_t items) {
  return static_cast<unsigned>(std::clamp<std::size_t>((items + kThreads - 1) / kThreads, 1, launch.max_blocks));
}

// Blocks of kWarpsPerBlock warps, one warp per row.
unsigned warp_rows_grid(std::size_t rows) { return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock); }

unsigned column_tiles(int columns) { return static_cast<unsigned>((columns + kTile - 1) / kTile); }

void require_operand_format(num::Format format) {
  if (format != num::Format::fp32 && format != num::Format::tf32 && format != num::Format::fp16 &&
      format != num::Format::bf16)
    throw std::invalid_argument("GEMM operands are fp32, tf32, fp16 or bf16, not " +
                                std::string(num::format_info(format).name));
}

}  // namespace

std::size_t operand_bytes(num::Format format) {
  require_operand_format(format);
  return format == num::Format::fp16 || format == num::Format::bf16 ? 2 : 4;
}

std::optional<std::string> kernel_image_problem() {
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(round_kernel));
  if (status == cudaSuccess) return std::nullopt;
  cudaGetLastError();
  return std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
}

void convert_operands(const Launch& launch, void* out, ConstTensor<float> in, std::size_t n, num::Format format) {
  require_operand_format(format);
  if (n == 0) return;
  convert_operands_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(out, elements(in), n, format);
  cuda::check_launch("convert_operands_kernel");
}

void round_values(const Launch& launch, float* x, std::size_t n, num::Format format) {
  if (n == 0) return;
  round_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(x, n, format);
  cuda::check_launch("round_kernel");
}

void add_bias_and_round(const Launch& launch, Tensor<float> out, const float* result, const float* bias, int N, int OC,
                        num::Format format) {
  const std::size_t n = std::size_t(N) * OC;
  if (n == 0) return;
  bias_round_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(elements(out), result, bias, N, OC, format);
  cuda::check_launch("bias_round_kernel");
}

void add_rounded(const Launch& launch, Tensor<float> acc, const float* x, std::size_t n, num::Format format) {
  if (n == 0) return;
  add_rounded_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(elements(acc), x, n, format);
  cuda::check_launch("add_rounded_kernel");
}

void add_column_sums(const Launch& launch, float* dbias, ConstTensor<float> dout, int N, int OC, num::Format format) {
  if (N <= 0 || OC <= 0) return;
  column_sums_kernel<<<column_tiles(OC), dim3(kTile, kTile), 0, launch.stream>>>(dbias, elements(dout), N, OC,
                                                                                 format);
  cuda::check_launch("column_sums_kernel");
}

void encoder_forward(const Launch& launch, Tensor<float> out, const std::int32_t* tokens, const float* wte,
                     const float* wpe, int B, int T, int C) {
  const std::size_t n = std::size_t(B) * T * C;
  if (n == 0) return;
  encoder_forward_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(elements(out), tokens, wte, wpe, T, C,
                                                                              n);
  cuda::check_launch("encoder_forward_kernel");
}

void encoder_backward(const Launch& launch, float* dwte, float* dwpe, ConstTensor<float> dout,
                      const std::int32_t* tokens, int B, int T, int C) {
  const std::size_t n = std::size_t(B) * T * C;
  if (n == 0) return;
  encoder_backward_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(dwte, dwpe, elements(dout), tokens, T,
                                                                               C, n);
  cuda::check_launch("encoder_backward_kernel");
}

void layernorm_forward(const Launch& launch, Tensor<float> out, float* mean, float* rstd, ConstTensor<float> inp,
                       const float* weight, const float* bias, int N, int C) {
  if (N <= 0 || C <= 0) return;
  layernorm_forward_kernel<<<warp_rows_grid(N), kThreads, 0, launch.stream>>>(elements(out), mean, rstd, elements(inp),
                                                                              weight, bias, N, C);
  cuda::check_launch("layernorm_forward_kernel");
}

void layernorm_backward(const Launch& launch, Tensor<float> dinp, float* dweight, float* dbias, ConstTensor<float> dout,
                        ConstTensor<float> inp, const float* weight, const float* mean, const float* rstd, int N,
                        int C) {
  if (N <= 0 || C <= 0) return;
  layernorm_backward_input_kernel<<<warp_rows_grid(N), kThreads, 0, launch.stream>>>(
      elements(dinp), elements(dout), elements(inp), weight, mean, rstd, N, C);
  cuda::check_launch("layernorm_backward_input_kernel");
  layernorm_backward_params_kernel<<<column_tiles(C), dim3(kTile, kTile), 0, launch.stream>>>(
      dweight, dbias, elements(dout), elements(inp), mean, rstd, N, C);
  cuda::check_launch("layernorm_backward_params_kernel");
}

void gelu_forward(const Launch& launch, Tensor<float> out, ConstTensor<float> inp, std::size_t n) {
  if (n == 0) return;
  gelu_forward_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(elements(out), elements(inp), n);
  cuda::check_launch("gelu_forward_kernel");
}

void gelu_backward(const Launch& launch, Tensor<float> dinp, ConstTensor<float> dout, ConstTensor<float> inp,
                   std::size_t n) {
  if (n == 0) return;
  gelu_backward_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(elements(dinp), elements(dout),
                                                                            elements(inp), n);
  cuda::check_launch("gelu_backward_kernel");
}

void residual_forward(const Launch& launch, Tensor<float> out, ConstTensor<float> a, ConstTensor<float> b,
                      std::size_t n) {
  if (n == 0) return;
  residual_forward_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(elements(out), elements(a), elements(b),
                                                                               n);
  cuda::check_launch("residual_forward_kernel");
}

void residual_backward(const Launch& launch, Tensor<float> da, Tensor<float> db, ConstTensor<float> dout,
                       std::size_t n) {
  if (n == 0) return;
  residual_backward_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(elements(da), elements(db),
                                                                                elements(dout), n);
  cuda::check_launch("residual_backward_kernel");
}

void softmax_crossentropy_forward(const Launch& launch, float* losses, float* probs, ConstTensor<float> logits,
                                  const std::int32_t* targets, int N, int V, int Vp) {
  if (N <= 0) return;
  softmax_crossentropy_forward_kernel<<<N, kThreads, 0, launch.stream>>>(losses, probs, elements(logits), targets, V,
                                                                         Vp);
  cuda::check_launch("softmax_crossentropy_forward_kernel");
}

void softmax_crossentropy_backward(const Launch& launch, Tensor<float> dlogits, const float* dlosses,
                                   const float* probs, const std::int32_t* targets, int N, int V, int Vp) {
  const std::size_t n = std::size_t(N) * Vp;
  if (n == 0) return;
  softmax_crossentropy_backward_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(
      elements(dlogits), dlosses, probs, targets, V, Vp, n);
  cuda::check_launch("softmax_crossentropy_backward_kernel");
}

void adamw_update(const Launch& launch, float* params, const float* grads, float* m, float* v, std::size_t n,
                  const AdamWStep& step) {
  if (n == 0) return;
  adamw_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(params, grads, m, v, n, step);
  cuda::check_launch("adamw_kernel");
}

unsigned sum_of_squares(const Launch& launch, double* partials, const float* x, std::size_t n) {
  if (n == 0) return 0;
  const unsigned blocks = grid_for(launch, n);
  sum_of_squares_kernel<<<blocks, kThreads, 0, launch.stream>>>(partials, x, n);
  cuda::check_launch("sum_of_squares_kernel");
  return blocks;
}

void rows_to_heads(const Launch& launch, void* heads, ConstTensor<float> rows, int row_stride, int B, int T, int NH,
                   int hs, num::Format format) {
  require_operand_format(format);
  const std::size_t n = std::size_t(B) * NH * T * hs;
  if (n == 0) return;
  rows_to_heads_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(heads, elements(rows), row_stride, T, NH,
                                                                            hs, n, format);
  cuda::check_launch("rows_to_heads_kernel");
}

void heads_to_rows(const Launch& launch, Tensor<float> rows, const void* heads, num::Format format, int row_stride,
                   int B, int T, int NH, int hs, bool accumulate) {
  const std::size_t n = std::size_t(B) * NH * T * hs;
  if (n == 0) return;
  heads_to_rows_kernel<<<grid_for(launch, n), kThreads, 0, launch.stream>>>(elements(rows), heads, row_stride, T, NH,
                                                                            hs, n, format, accumulate);
  cuda::check_launch("heads_to_rows_kernel");
}

void causal_softmax(const Launch& launch, float* att, int BNH, int T, float scale) {
  const std::size_t rows = std::size_t(BNH) * T;
  if (rows == 0) return;
  causal_softmax_kernel<<<warp_rows_grid(rows), kThreads, 0, launch.stream>>>(att, rows, T, scale);
  cuda::check_launch("causal_softmax_kernel");
}

void causal_softmax_backward(const Launch& launch, void* dscore, const float* att, const float* datt, int BNH, int T,
                             float scale, num::Format format) {
  require_operand_format(format);
  const std::size_t rows = std::size_t(BNH) * T;
  if (rows == 0) return;
  causal_softmax_backward_kernel<<<warp_rows_grid(rows), kThreads, 0, launch.stream>>>(dscore, att, datt, rows, T,
                                                                                       scale, format);
  cuda::check_launch("causal_softmax_backward_kernel");
}

}  // namespace mpbench::workloads::cuda_kernels
