// gemm: C = A B^T through the backend's library GEMM (cuBLASLt, oneDNN) in every precision, over a
// square sweep, the GEMMs of GPT-2 124M/350M training, and an alignment sweep around 4096; fp8-e4m3
// also end to end, from bf16 operands through their casts.
#include <fmt/format.h>

#include "core/error.hpp"
#include "core/peaks.hpp"
#include "microbench/suite.hpp"

namespace mpbench::microbench {

namespace {

struct GemmCase {
  std::string group, name;
  GemmShape shape;
};

bool on_gpu(const Backend& backend) { return backend.device().backend == "cuda"; }

std::vector<GemmCase> square_sweep(const Backend& backend, bool quick) {
  std::vector<std::int64_t> sizes;
  if (on_gpu(backend)) sizes = quick ? std::vector<std::int64_t>{1024, 4096, 8192}
                                     : std::vector<std::int64_t>{256, 512, 1024, 2048, 4096, 8192, 16384};
  // Quick on a CPU: the small end only (the alignment sweep has 1024, the GPT-2 LM head the large
  // GEMMs); 2048 took about a third of a quick CPU GEMM suite.
  else sizes = quick ? std::vector<std::int64_t>{256, 512} : std::vector<std::int64_t>{256, 512, 1024, 2048};
  std::vector<GemmCase> cases;
  for (auto n : sizes) cases.push_back({"square", fmt::format("square_{}", n), {n, n, n, 1}});
  return cases;
}

// The GEMMs of one GPT-2 training step for `tokens` = batch x sequence tokens of width `c`
// (forward shapes, one weight-gradient shape, the LM head padded and not, and attention's
// batched GEMMs with 64-wide heads).
std::vector<GemmCase> gpt2_gemms(const std::string& model, std::int64_t c, std::int64_t batch,
                                 std::int64_t seq) {
  const std::int64_t tokens = batch * seq, heads = c / 64;
  const auto name = [&](const char* op) { return fmt::format("{}/{}", model, op); };
  return {
      {"gpt2", name("qkv"), {tokens, 3 * c, c, 1}},
      {"gpt2", name("attn_proj"), {tokens, c, c, 1}},
      {"gpt2", name("fc"), {tokens, 4 * c, c, 1}},
      {"gpt2", name("fc_proj"), {tokens, c, 4 * c, 1}},
      {"gpt2", name("fc_wgrad"), {4 * c, c, tokens, 1}},
      {"gpt2", name("lm_head_50304"), {tokens, 50304, c, 1}},
      {"gpt2", name("lm_head_50257"), {tokens, 50257, c, 1}},
      {"gpt2", name("attn_qk"), {seq, seq, 64, batch * heads}},
      {"gpt2", name("attn_pv"), {seq, 64, seq, batch * heads}},
  };
}

std::vector<GemmCase> gpt2_sweep(const Backend& backend, bool quick) {
  if (!on_gpu(backend)) return gpt2_gemms("gpt2-124m", 768, 1, quick ? 128 : 1024);
  auto cases = gpt2_gemms("gpt2-124m", 768, 8, 1024);
  if (!quick) {
    auto bigger = gpt2_gemms("gpt2-350m", 1024, 8, 1024);
    cases.insert(cases.end(), bigger.begin(), bigger.end());
  }
  return cases;
}

// Sizes around 4096 that are multiples of 16, 8, 4 or nothing: where Tensor Core kernels stop.
std::vector<GemmCase> alignment_sweep(const Backend& backend, bool quick) {
  std::vector<std::int64_t> sizes;
  if (on_gpu(backend)) sizes = quick ? std::vector<std::int64_t>{4095, 4096, 4097}
                                     : std::vector<std::int64_t>{4088, 4092, 4094, 4095, 4096, 4097, 4100, 4104};
  else sizes = {1023, 1024, 1025};
  std::vector<GemmCase> cases;
  for (auto n : sizes) cases.push_back({"alignment", fmt::format("align_{}", n), {n, n, n, 1}});
  return cases;
}

nlohmann::json shape_params(const GemmCase& c) {
  return {{"group", c.group}, {"m", c.shape.m}, {"n", c.shape.n}, {"k", c.shape.k}, {"batch", c.shape.batch},
          {"layout", "A[m,k] row-major, B[n,k] row-major (TN)"}, {"flops", c.shape.flops()}};
}

// An fp8 GEMM operand as a training step holds it: a bf16 tensor, quantized before each GEMM, with
// the amax and the scale its cast writes.
struct Bf16Operand {
  DeviceBuffer values, amax, scale;
  CastArgs cast_into(DeviceBuffer& codes) { return {&values, &codes, nullptr, &amax, 0, &scale}; }
};

Bf16Operand bf16_operand(Backend& backend, std::size_t count, std::uint64_t seed) {
  Bf16Operand operand{backend.allocate(DType::bf16, count), backend.allocate(DType::f32, 1),
                      backend.allocate(DType::f32, 1)};
  backend.fill_uniform(operand.values, seed, -1.0f, 1.0f);
  return operand;
}

// details.quantize and rates.tflops_end_to_end of the fp8-e4m3 case `r`, whose GEMM on the codes
// `a` and `b` it has measured: the current-scaling casts of bf16 A and B into those codes alone,
// then the casts and the GEMM as one op (what a step pays), each with the case's sampler. The
// end-to-end time is measured, not summed, so that the GEMM finding its operands in cache counts.
void add_quantize_cost(const CaseSpec& spec, const GemmShape& shape, Backend& backend, DeviceBuffer& a,
                       DeviceBuffer& b, PreparedOp& gemm, const SamplerConfig& config, CaseResult& r) {
  Bf16Operand a16 = bf16_operand(backend, shape.a_elements(), 4), b16 = bf16_operand(backend, shape.b_elements(), 5);
  const CastArgs cast_a = a16.cast_into(a), cast_b = b16.cast_into(b);
  const auto quantize = [&] {
    backend.cast(CastKind::bf16_to_e4m3_scaled, cast_a);
    backend.cast(CastKind::bf16_to_e4m3_scaled, cast_b);
  };
  const double quantize_s = measure_case(spec, backend, quantize, config, nullptr).seconds->median;
  const auto end_to_end = [&] {
    quantize();
    gemm.run();
  };
  const double end_to_end_s = measure_case(spec, backend, end_to_end, config, nullptr).seconds->median;
  r.details["quantize"] = {{"seconds", quantize_s},
                           {"gemm_seconds", r.seconds->median},
                           {"end_to_end_seconds", end_to_end_s},
                           {"share", quantize_s / end_to_end_s},
                           {"from", "bf16"},
                           {"recipe", "current scaling, per tensor"}};
  r.rates["tflops_end_to_end"] = shape.flops() / end_to_end_s / 1e12;
}

CaseResult measure_gemm(const CaseSpec& spec, GemmPrecision precision, const GemmShape& shape,
                        Backend& backend, const SamplerConfig& config, CaseProfiler* profiler) {
  const auto& info = gemm_precision_info(precision);
  DeviceBuffer a = backend.allocate(info.input, shape.a_elements());
  DeviceBuffer b = backend.allocate(info.input, shape.b_elements());
  DeviceBuffer c = backend.allocate(info.output, shape.c_elements());
  // Random inputs: zeros draw less power and run faster on GPUs.
  backend.fill_uniform(a, 1, -1.0f, 1.0f);
  backend.fill_uniform(b, 2, -1.0f, 1.0f);
  backend.fill_uniform(c, 3, -1.0f, 1.0f);
  auto gemm = backend.make_gemm(precision, shape, a, b, c);
  CaseResult r = measure_case(spec, backend, [&] { gemm->run(); }, config, profiler);
  const double tflops = shape.flops() / r.seconds->median / 1e12;
  r.rates["tflops"] = tflops;
  r.details["algorithm"] = gemm->details();
  r.details["gemm_path"] = gemm_path_json(backend.capabilities().gemm(precision));
  if (precision == GemmPrecision::fp8_e4m3) add_quantize_cost(spec, shape, backend, a, b, *gemm, config, r);
  if (auto row = find_datasheet(backend.device().name); row && peak_tflops(*row, precision) > 0) {
    r.rates["pct_of_peak"] = 100.0 * tflops / peak_tflops(*row, precision);
    r.details["peak"] = {{"tflops", peak_tflops(*row, precision)}, {"gpu", row->gpu}, {"source", row->source}};
  } else {
    r.rates["pct_of_peak"] = nullptr;
    r.details["peak"] = {{"note", "no datasheet peak for this device and precision"}};
  }
  return r;
}

std::vector<CaseSpec> gemm_cases(Backend& backend, const SuiteOptions& options) {
  std::vector<GemmCase> shapes = square_sweep(backend, options.quick);
  for (auto group : {gpt2_sweep(backend, options.quick), alignment_sweep(backend, options.quick)})
    shapes.insert(shapes.end(), group.begin(), group.end());
  for (const auto& s : options.extra_gemm_shapes)
    shapes.push_back({"custom", fmt::format("custom_{}x{}x{}x{}", s.m, s.n, s.k, s.batch), s});

  std::vector<CaseSpec> cases;
  for (const auto& shape_case : shapes)
    for (const auto& info : gemm_precisions()) {
      if (!options.wants(std::string(info.name))) continue;
      CaseSpec spec{"gemm", shape_case.name, std::string(info.name), shape_params(shape_case), {}, {}};
      spec.params["bytes"] = gemm_operand_bytes(info.precision, shape_case.shape);
      spec.skip_reason = backend.gemm_unsupported(info.precision);
      if (!spec.skip_reason) spec.skip_reason = gemm_shape_rule(info.precision, shape_case.shape);
      spec.measure = [spec, precision = info.precision, shape = shape_case.shape](
                         Backend& be, const SamplerConfig& config, CaseProfiler* profiler) {
        return measure_gemm(spec, precision, shape, be, config, profiler);
      };
      cases.push_back(std::move(spec));
    }
  return cases;
}

}  // namespace

Suite gemm_suite() {
  std::vector<std::string> precisions;
  for (const auto& info : gemm_precisions()) precisions.emplace_back(info.name);
  return {"gemm", "library GEMM (cuBLASLt / oneDNN) in every precision: square sweep, GPT-2 GEMMs, alignment sweep",
          precisions, gemm_cases};
}

}  // namespace mpbench::microbench
