// collective: all-reduce, reduce-scatter, all-gather and broadcast over a size sweep in each dtype
// the library moves, on the run's communicator (MPI on CPUs, NCCL on GPUs), with nccl-tests' time,
// algorithm bandwidth and bus bandwidth, and every result checked against a serial reference.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "amp/formats.hpp"
#include "core/error.hpp"
#include "core/random.hpp"
#include "microbench/suite.hpp"

namespace mpbench::microbench {

namespace {

constexpr DType kTypes[] = {DType::f32, DType::bf16, DType::f16, DType::e4m3, DType::e5m2};
constexpr float kLow = 0.5f, kHigh = 1.5f;  // positive inputs: sums without cancellation

std::uint64_t input_seed(std::size_t case_index, int rank) { return 0xC011EC7ull + 1000003ull * case_index + rank; }

// Element i of rank `rank`'s input, as the device holds it (fill_uniform rounds to the dtype).
float input_at(DType dtype, std::uint64_t seed, std::size_t i) {
  const float x = uniform_at(seed, i, kLow, kHigh);
  switch (dtype) {
    case DType::f32: return x;
    case DType::f16: return num::f16_bits_to_f32(num::f32_to_f16_bits(x));
    case DType::bf16: return num::bf16_bits_to_f32(num::f32_to_bf16_bits(x));
    case DType::e4m3: return num::e4m3_bits_to_f32(num::f32_to_e4m3_bits(x, true));
    case DType::e5m2: return num::e5m2_bits_to_f32(num::f32_to_e5m2_bits(x, true));
  }
  return NAN;
}

float value_at(DType dtype, const std::vector<unsigned char>& bytes, std::size_t i) {
  switch (dtype) {
    case DType::f32: return reinterpret_cast<const float*>(bytes.data())[i];
    case DType::f16: return num::f16_bits_to_f32(reinterpret_cast<const std::uint16_t*>(bytes.data())[i]);
    case DType::bf16: return num::bf16_bits_to_f32(reinterpret_cast<const std::uint16_t*>(bytes.data())[i]);
    case DType::e4m3: return num::e4m3_bits_to_f32(bytes[i]);
    case DType::e5m2: return num::e5m2_bits_to_f32(bytes[i]);
  }
  return NAN;
}

// Unit roundoff: half the distance from 1 to the next value of the format.
double unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::f32: return std::ldexp(1.0, -24);
    case DType::f16: return std::ldexp(1.0, -11);
    case DType::bf16: return std::ldexp(1.0, -8);
    case DType::e4m3: return std::ldexp(1.0, -4);
    case DType::e5m2: return std::ldexp(1.0, -3);
  }
  return 1;
}

struct Buffers {
  DeviceBuffer send, receive;
};

// nccl-tests' buffer sizes: `count` is the larger of the two buffers (all_reduce's, reduce_scatter's
// send, all_gather's receive), and each rank's part of it count / n.
Buffers make_buffers(Backend& backend, Collective c, DType dtype, std::size_t count, int n) {
  const std::size_t part = count / static_cast<std::size_t>(n);
  switch (c) {
    case Collective::all_reduce: return {backend.allocate(dtype, count), backend.allocate(dtype, count)};
    case Collective::reduce_scatter: return {backend.allocate(dtype, count), backend.allocate(dtype, part)};
    case Collective::all_gather: return {backend.allocate(dtype, part), backend.allocate(dtype, count)};
    case Collective::broadcast: return {backend.allocate(dtype, count), {}};
  }
  return {};
}

void run_collective(Communicator& comm, Collective c, Buffers& b, std::size_t count) {
  const std::size_t part = count / static_cast<std::size_t>(comm.size());
  switch (c) {
    case Collective::all_reduce: return comm.all_reduce_sum(b.send, b.receive, count);
    case Collective::reduce_scatter: return comm.reduce_scatter_sum(b.send, b.receive, part);
    case Collective::all_gather: return comm.all_gather(b.send, b.receive, part);
    case Collective::broadcast: return comm.broadcast(b.send, count, 0);
  }
}

struct CheckOutcome {
  double worst = 0;     // largest |error| / tolerance over this rank's elements
  std::string failure;  // the first element past its tolerance, or empty
};

// The serial reference of element `i` of this rank's result: the sum in double of every rank's
// input (reductions), or the one rank's input it is a copy of (gather, broadcast).
double reference_at(Collective c, DType dtype, std::size_t case_index, int rank, int n, std::size_t part,
                    std::size_t i) {
  switch (c) {
    case Collective::all_reduce:
    case Collective::reduce_scatter: {
      const std::size_t element = c == Collective::all_reduce ? i : static_cast<std::size_t>(rank) * part + i;
      double sum = 0;
      for (int r = 0; r < n; ++r) sum += input_at(dtype, input_seed(case_index, r), element);
      return sum;
    }
    case Collective::all_gather: return input_at(dtype, input_seed(case_index, static_cast<int>(i / part)), i % part);
    case Collective::broadcast: return input_at(dtype, input_seed(case_index, 0), i);
  }
  return NAN;
}

CheckOutcome check_result(Collective c, DType dtype, std::size_t case_index, int rank, int n, std::size_t count,
                          const DeviceBuffer& result, Backend& backend) {
  std::vector<unsigned char> bytes(result.bytes());
  backend.download(bytes.data(), result, bytes.size());
  const std::size_t part = count / static_cast<std::size_t>(n);
  // A sum of n inputs rounds at most n - 1 times on the way and once to the format: n unit
  // roundoffs of the (positive) sum. Copies must be exact.
  const bool reduces = c == Collective::all_reduce || c == Collective::reduce_scatter;
  const double relative = reduces ? n * unit_roundoff(dtype) : 0;
  CheckOutcome outcome;
  for (std::size_t i = 0; i < result.count(); ++i) {
    const double expected = reference_at(c, dtype, case_index, rank, n, part, i);
    const double got = value_at(dtype, bytes, i), error = std::abs(got - expected), tolerance = relative * expected;
    const double ratio = error == 0 ? 0 : (tolerance > 0 ? error / tolerance : INFINITY);
    if (!(ratio <= 1) && outcome.failure.empty())
      outcome.failure = fmt::format("rank {}: element {} is {:.9g}, the serial reference is {:.9g} (tolerance {:.3g})",
                                    rank, i, got, expected, tolerance);
    outcome.worst = std::max(outcome.worst, std::isnan(ratio) ? INFINITY : ratio);
  }
  return outcome;
}

struct Timing {
  Statistics seconds;
  int ops_per_sample = 1;
};

// Every rank runs the same number of collectives (a stop criterion of its own would leave the
// others waiting), each sample after a barrier; a sample is the slowest rank's time per op.
Timing time_collective(Backend& backend, Communicator& comm, ProcessGroup& group, const std::function<void()>& op,
                       const SamplerConfig& config) {
  auto timer = backend.make_timer();
  const auto timed = [&](int ops) {
    group.barrier();
    timer->start();
    for (int k = 0; k < ops; ++k) op();
    comm.synchronize();
    return group.max(timer->stop_seconds()) / ops;
  };
  timed(1);  // warm-up: connections, buffers registered
  const double once = std::max(timed(1), 1e-9);
  Timing t;
  t.ops_per_sample = static_cast<int>(std::clamp(std::ceil(config.min_sample_s / once), 1.0, 1000.0));
  std::vector<double> samples;
  for (int s = 0; s < std::max(config.min_samples, 3); ++s) samples.push_back(timed(t.ops_per_sample));
  t.seconds = Statistics::of(samples);
  return t;
}

CaseResult measure_collective(const CaseSpec& spec, Collective c, DType dtype, std::size_t count,
                              std::size_t case_index, Backend& backend, Communicator& comm, ProcessGroup& group,
                              const SamplerConfig& config) {
  const int n = comm.size(), rank = comm.rank();
  Buffers buffers = make_buffers(backend, c, dtype, count, n);
  const auto fill = [&] { backend.fill_uniform(buffers.send, input_seed(case_index, rank), kLow, kHigh); };
  fill();
  const Timing timing = time_collective(backend, comm, group, [&] { run_collective(comm, c, buffers, count); }, config);
  fill();  // broadcast wrote over its input
  run_collective(comm, c, buffers, count);
  comm.synchronize();
  const CheckOutcome check = check_result(c, dtype, case_index, rank, n, count,
                                          c == Collective::broadcast ? buffers.send : buffers.receive, backend);
  const double worst = group.max(check.worst);
  std::string failure;
  for (const std::string& f : group.all_gather(check.failure))
    if (failure.empty()) failure = f;

  CaseResult r = spec.result_on(backend.device().backend);
  r.seconds = timing.seconds;
  const double bytes = spec.params["bytes"].get<double>();
  const double algbw = bytes / timing.seconds.median / 1e9;
  r.rates["algbw_gbps"] = algbw;
  r.rates["busbw_gbps"] = algbw * bus_bandwidth_factor(c, n);
  r.details["measurement"] = {{"ops_per_sample", timing.ops_per_sample}, {"converged", false},
                              {"stop_reason", "fixed sample count: every rank runs the same collectives"},
                              {"sample", "the slowest rank's time per op, each sample after a barrier"}};
  r.details["communication"] = {{"library", comm.library()}, {"reduction", comm.reduction(dtype)}};
  r.details["check"] = {{"reference", "serial: every rank's inputs summed in double, or the copied rank's input"},
                        {"tolerance", c == Collective::all_reduce || c == Collective::reduce_scatter
                                          ? fmt::format("{} unit roundoffs of {} relative to each sum", n, dtype_name(dtype))
                                          : std::string("exact")},
                        {"max_error_over_tolerance", worst}};
  if (!failure.empty()) {
    r.status = CaseStatus::error;
    r.message = "result differs from the serial reference: " + failure;
  }
  return r;
}

// A failure on one rank (a library call, memory) leaves the others waiting in a collective this
// rank will not join: with several ranks it ends the job, naming the rank and the case (rank 0 has
// kept the finished cases). Alone, the case fails as any other.
CaseResult measure_on_every_rank(ProcessGroup* group, const CaseSpec& spec, const std::function<CaseResult()>& measure) {
  try {
    return measure();
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    if (group->size() == 1) throw;
    std::fputs(fmt::format("mpbench: error: rank {}: {}: {}\n", group->rank(), spec.id(), e.what()).c_str(), stderr);
    group->abort(1);
  }
}

// Sizes in bytes: powers of four from 1 KiB (latency) to 256 MiB on a GPU, 64 MiB on a CPU
// (bandwidth); --quick: 64 KiB and 4 MiB.
std::vector<double> sweep_bytes(const Backend& backend, bool quick) {
  if (quick) return {65536.0, 4194304.0};
  const double largest = backend.device().backend == "cpu" ? 64.0 * 1048576 : 256.0 * 1048576;
  std::vector<double> sizes;
  for (double b = 1024; b <= largest; b *= 4) sizes.push_back(b);
  return sizes;
}

std::vector<CaseSpec> collective_cases(Backend& backend, const SuiteOptions& options) {
  std::vector<CaseSpec> cases;
  const int n = options.communicator ? options.communicator->size() : 1;
  for (Collective c : collectives())
    for (DType dtype : kTypes) {
      const std::string precision(dtype_name(dtype));
      if (!options.wants(precision)) continue;
      for (double requested : sweep_bytes(backend, options.quick)) {
        // Whole elements, a multiple of the world size, so each rank's part is whole.
        const std::size_t unit = dtype_size(dtype) * static_cast<std::size_t>(n);
        const std::size_t count = std::max<std::size_t>(1, static_cast<std::size_t>(requested) / unit) * n;
        const double bytes = static_cast<double>(count * dtype_size(dtype));
        CaseSpec spec{"collective", fmt::format("{}/bytes={}", collective_name(c), count * dtype_size(dtype)), precision,
                      {{"collective", collective_name(c)}, {"dtype", precision}, {"elements", count},
                       {"bytes", bytes}, {"world_size", n},
                       {"bytes_counted", "the larger buffer, as nccl-tests counts (all ranks' parts)"}},
                      {}, {}};
        // No communicator and no reason: `list`, which only names the cases.
        if (!options.communicator && !options.no_communicator_reason.empty())
          spec.skip_reason = options.no_communicator_reason;
        else if (options.communicator)
          if (auto why = options.communicator->unsupported(c, dtype)) spec.skip_reason = *why;
        const std::size_t index = cases.size();
        Communicator* comm = options.communicator;
        ProcessGroup* group = options.group;
        spec.measure = [spec, c, dtype, count, index, comm, group](Backend& be, const SamplerConfig& config, CaseProfiler*) {
          return measure_on_every_rank(group, spec, [&] {
            return measure_collective(spec, c, dtype, count, index, be, *comm, *group, config);
          });
        };
        cases.push_back(std::move(spec));
      }
    }
  return cases;
}

}  // namespace

Suite collective_suite() {
  return {"collective",
          "all-reduce, reduce-scatter, all-gather, broadcast over a size sweep on MPI (CPU) or NCCL (GPU); algbw and "
          "busbw as nccl-tests; every result checked against a serial reference",
          {"fp32", "bf16", "fp16", "fp8-e4m3", "fp8-e5m2"},
          collective_cases,
          [](std::vector<CaseResult>&) {},
          /*part_of_all=*/false};
}

}  // namespace mpbench::microbench
