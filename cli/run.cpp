#include "cli/run.hpp"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <regex>
#include <set>

#include "backends/cpu/isa.hpp"
#include "backends/registry.hpp"
#include "cli/command_line.hpp"
#include "cli/gradient_reducer.hpp"
#include "cli/suite_selection.hpp"
#include "cli/transformer_ops.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/interrupt.hpp"
#include "core/progress.hpp"
#include "core/user_regex.hpp"
#include "microbench/case_profile.hpp"
#include "microbench/runner.hpp"
#include "microbench/table.hpp"
#include "profiler/cupti_collector.hpp"
#if MPBENCH_HAVE_MPI
#include "backends/cpu/mpi_transport.hpp"
#endif
#if MPBENCH_HAVE_NCCL
#include "backends/cuda/nccl_communicator.hpp"
#endif

namespace mpbench::cli {

namespace {

using microbench::CaseSpec;
using microbench::Suite;

void check_precisions(const std::vector<std::string>& precisions, const std::vector<const Suite*>& suites,
                      bool transformer) {
  std::set<std::string> known;
  for (const Suite* s : suites) known.insert(s->precisions.begin(), s->precisions.end());
  if (transformer) {
    for (const auto& p : amp::all_policies()) known.insert(std::string(p.name));
    known.insert("fp8");  // fp8-delayed's name before fp8-current existed (amp::parse_mode takes it)
  }
  for (const auto& p : precisions)
    if (!known.count(p))
      throw UsageError(fmt::format("unknown precision '{}' for the chosen suites: use one of {}", p, fmt::join(known, ", ")));
}

GemmShape parse_shape(const std::string& text) {
  static const std::regex pattern(R"((\d+)x(\d+)x(\d+)(?:x(\d+))?)");
  std::smatch match;
  if (!std::regex_match(text, match, pattern))
    throw UsageError(fmt::format("bad --shape '{}': write MxNxK or MxNxKxBATCH, e.g. 4096x4096x4096", text));
  // Each dimension below 2^31 and each operand below 2^48 elements: the sizes stay exact in 64
  // bits, and the memory check compares real sizes.
  constexpr std::int64_t kMaxDimension = std::int64_t{1} << 31, kMaxElements = std::int64_t{1} << 48;
  const auto dimension = [&](const std::ssub_match& digits) {
    if (digits.length() > 10 || std::stoll(digits) >= kMaxDimension)
      throw UsageError(fmt::format("bad --shape '{}': every dimension must be below 2^31", text));
    return std::stoll(digits);
  };
  GemmShape s{dimension(match[1]), dimension(match[2]), dimension(match[3]), match[4].matched ? dimension(match[4]) : 1};
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0)
    throw UsageError(fmt::format("bad --shape '{}': every dimension must be at least 1", text));
  for (const auto& [rows, cols] : {std::pair{s.m, s.k}, std::pair{s.n, s.k}, std::pair{s.m, s.n}})
    if (static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(s.batch) >= double(kMaxElements))
      throw UsageError(fmt::format("--shape {} needs operands of more than 2^48 elements: use a smaller shape", text));
  return s;
}

void check_shapes_fit(const std::vector<GemmShape>& shapes, const Backend& backend) {
  const std::uint64_t available = backend.device().memory_bytes;
  for (const auto& s : shapes) {
    const std::uint64_t need = gemm_operand_bytes(GemmPrecision::fp32, s);
    if (need > available)
      throw UsageError(fmt::format("--shape {}x{}x{}x{} needs {:.1f} GiB for A, B and C in fp32 but {} has {:.1f} GiB: use a smaller shape",
                                   s.m, s.n, s.k, s.batch, need / 1073741824.0, backend.device().name, available / 1073741824.0));
  }
}

// A precision named explicitly must be one the device can run.
void check_device_can(const std::vector<std::string>& precisions, const std::vector<const Suite*>& suites,
                      const Backend& backend) {
  const bool gemm = std::any_of(suites.begin(), suites.end(), [](const Suite* s) { return s->name == "gemm"; });
  if (!gemm) return;
  for (const auto& p : precisions) {
    const auto it = std::find_if(gemm_precisions().begin(), gemm_precisions().end(),
                                 [&](const GemmPrecisionInfo& info) { return info.name == p; });
    if (it == gemm_precisions().end()) continue;
    if (auto why = backend.gemm_unsupported(it->precision))
      throw UsageError(fmt::format("precision {} is not available on {} ({}): drop it from --precision or choose another --device",
                                   p, backend.device().name, *why));
  }
}

// The GEMM precisions the run's cases and modes use (what its capability notes are about).
std::vector<GemmPrecision> gemm_precisions_run(const std::vector<std::string>& precisions,
                                               const std::vector<const Suite*>& suites,
                                               const std::optional<workloads::TransformerPlan>& plan) {
  std::set<GemmPrecision> used;
  const bool gemm = std::any_of(suites.begin(), suites.end(), [](const Suite* s) { return s->name == "gemm"; });
  for (const GemmPrecisionInfo& info : gemm_precisions())
    if (gemm && (precisions.empty() || std::count(precisions.begin(), precisions.end(), info.name)))
      used.insert(info.precision);
  if (plan)
    for (amp::Mode mode : plan->modes)
      if (!workloads::workload_gemm_rule(workloads::gemm_precision(mode))) used.insert(workloads::gemm_precision(mode));
  return {used.begin(), used.end()};
}

// Before the first measurement: which of the run's GEMM precisions run converted or not at all.
void print_capability_notes(const Backend& backend, const std::vector<GemmPrecision>& used) {
  for (GemmPrecision precision : used) {
    const GemmCapability& row = backend.capabilities().gemm(precision);
    if (row.path == GemmPath::native) continue;
    fmt::print(stderr, "mpbench: {} GEMMs {} on {}: {}\n", gemm_precision_info(precision).name,
               row.path == GemmPath::converted ? "run converted" : "are skipped", backend.device().name, row.reason);
  }
}

// --cpu-gemm native on a CPU that cannot run a low precision named in --precision natively, or,
// none named, none of the run's: a mistake to say before any work, naming what the CPU lacks.
void check_native_choice(const RunOptions& options, const Backend& backend, const std::vector<GemmPrecision>& used) {
  if (options.cpu_gemm != "native" || backend.device().backend != "cpu") return;
  std::vector<std::string> lacking;
  bool any_native = false;
  for (GemmPrecision precision : {GemmPrecision::fp16, GemmPrecision::bf16, GemmPrecision::fp8_e4m3}) {
    if (!std::count(used.begin(), used.end(), precision)) continue;
    const GemmCapability& row = backend.capabilities().gemm(precision);
    if (row.path == GemmPath::native) any_native = true;
    else lacking.push_back(fmt::format("{}: {}", gemm_precision_info(precision).name, row.reason));
  }
  const bool refuse = options.precisions.empty() ? !lacking.empty() && !any_native : !lacking.empty();
  if (refuse)
    throw UsageError(fmt::format("--cpu-gemm native on {}: {}; use --cpu-gemm auto to run them converted",
                                 backend.device().name, fmt::join(lacking, "; ")));
}

SamplerConfig sampler_config(const RunOptions& o) {
  SamplerConfig c = o.quick ? SamplerConfig::quick() : SamplerConfig::standard();
  if (o.max_noise) c.max_noise = *o.max_noise;
  if (o.min_time) c.min_time_s = *o.min_time;
  if (o.timeout) c.timeout_s = *o.timeout;
  return c;
}

// "[12/70 34 s, about 1 min 10 s left] gemm/square_512/bf16  0.45 ms  0.6 TFLOP/s": the case
// against the measurements that will run, the time since they started and the time left at the
// pace so far.
microbench::ProgressFn progress_printer() {
  const auto start = std::chrono::steady_clock::now();
  return [start](std::size_t done, std::size_t total, const CaseResult& r) {
    std::string what = r.status == CaseStatus::ok
                           ? fmt::format("{:.3g} ms", 1e3 * r.seconds->median)
                           : fmt::format("{}: {}", case_status_name(r.status), r.message);
    for (const auto& [key, unit] : {std::pair{"tflops", "TFLOP/s"}, std::pair{"gbps", "GB/s"},
                                    std::pair{"busbw_gbps", "GB/s busbw"}})
      if (r.rates.contains(key)) what += fmt::format("  {:.4g} {}", r.rates[key].get<double>(), unit);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // fputs, not fmt::print: a closed stderr must cost the line, not the run.
    std::fputs(fmt::format("[{}/{} {}] {}  {}\n", done, total, elapsed_and_left(elapsed, done, total), r.id(), what).c_str(),
               stderr);
  };
}

// A CPU run shares its cores with whatever else runs: say so when the load shows it did.
void warn_if_cpu_was_shared(const Backend& backend) {
  double load = 0;
  const int cores = backend.device().multiprocessors;
  if (backend.device().backend != "cpu" || getloadavg(&load, 1) != 1 || load <= 1.5 * cores) return;
  std::fprintf(stderr,
               "mpbench: note: the 1-minute load average was %.1f on %d cores: other processes shared the CPU, so "
               "expect noise (each case records the load in details.measurement.clocks_before/after)\n",
               load, cores);
}

// The modes among the precisions asked for (all of them: none asked for).
std::vector<amp::Mode> transformer_modes(const std::vector<std::string>& precisions) {
  std::vector<amp::Mode> modes;
  for (const auto& p : precisions)
    if (auto mode = amp::parse_mode(p)) modes.push_back(*mode);
  return modes;
}

void print_line(const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }

// Writes the document to `out`. Should that fail (a full disk, a folder gone), the document goes to
// a file of its own in the temporary folder, and both are said: a finished run is never lost.
// Returns where it went instead, or nothing when `out` took it.
std::optional<std::string> write_result(const std::string& out, const ResultDocument& document) {
  const std::string text = document.to_json().dump(2) + "\n";
  try {
    write_file_atomically(out, text);
    return std::nullopt;
  } catch (const UsageError& e) {
    const auto kept = std::filesystem::temp_directory_path() / fmt::format("mpbench-result-{}.json", ::getpid());
    try {
      write_file_atomically(kept, text);
      fmt::print(stderr, "mpbench: error: {}; the {} cases are kept in {}\n", e.what(), document.cases.size(),
                 kept.string());
    } catch (const UsageError& second) {
      fmt::print(stderr, "mpbench: error: {}; nor could they be kept in {} ({}): the table above is all that is left\n",
                 e.what(), kept.string(), second.what());
    }
    return kept.string();
  }
}

// A run interrupted before it measured anything: a previous --out is worth more than a document
// of errors and skips, so it stays; what the run got to (steps of an unfinished mode, skip
// reasons) goes to a file of its own in the temporary folder, and both are said.
void keep_unmeasured(const std::string& out, const ResultDocument& document) {
  if (document.cases.empty()) {
    fmt::print(stderr, "mpbench: interrupted before any case finished: left {} as it was\n", out);
    return;
  }
  const auto kept = std::filesystem::temp_directory_path() / fmt::format("mpbench-interrupted-{}.json", ::getpid());
  try {
    write_file_atomically(kept, document.to_json().dump(2) + "\n");
    fmt::print(stderr, "mpbench: interrupted before any case finished: left {} as it was; the {} unmeasured case{} "
               "(skipped, failed or cut short) are in {}\n",
               out, document.cases.size(), document.cases.size() == 1 ? "" : "s", kept.string());
  } catch (const UsageError& e) {
    fmt::print(stderr, "mpbench: interrupted before any case finished: left {} as it was ({})\n", out, e.what());
  }
}

// The files a run writes besides --out, checked before any work: a side output that cannot be
// written must not cost the run its result document. Google Benchmark's own --benchmark_out too.
// No output may name an input (--data, --checkpoint-in) or another output.
void check_side_outputs(const RunOptions& options) {
  const auto& transformer = options.transformer;
  if (!transformer.trace_file.empty()) check_writable(transformer.trace_file);
  if (!transformer.checkpoint_out.empty()) check_writable_folder(transformer.checkpoint_out);
  for (const std::string& arg : options.benchmark_args)
    if (arg.rfind("--benchmark_out=", 0) == 0) check_writable(arg.substr(std::string("--benchmark_out=").size()));
  const std::vector<NamedPath> outputs = {{"--out", options.out},
                                          {"--trace", transformer.trace_file},
                                          {"--benchmark_out", microbench::flag_value(options.benchmark_args,
                                                                                     "--benchmark_out").value_or("")},
                                          {"--checkpoint-out", transformer.checkpoint_out}};
  const std::vector<NamedPath> inputs = {{"--data", transformer.data_file}, {"--checkpoint-in", transformer.checkpoint_in}};
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (const NamedPath& input : inputs) refuse_overwriting(outputs[i], input);
    for (std::size_t j = i + 1; j < outputs.size(); ++j) refuse_overwriting(outputs[i], outputs[j]);
  }
}

// The side outputs of the run's cases that could not be written mid-run (each was said on stderr
// when it failed): a mode's trace or checkpoint.
long side_outputs_not_written(const ResultDocument& document) {
  long lost = 0;
  for (const CaseResult& c : document.cases) {
    const auto profile = c.details.find("profile");
    lost += profile != c.details.end() && profile->is_object() && profile->contains("trace_error");
    const auto checkpoint = c.details.find("checkpoint");
    lost += checkpoint != c.details.end() && checkpoint->is_object() && checkpoint->contains("error");
  }
  return lost;
}

// The processes of the run: this one alone, or every rank a launcher started.
struct Job {
  LaunchInfo launch;
  std::unique_ptr<ProcessGroup> group;
  bool leader() const { return group->rank() == 0; }
};

bool runs_collectives(const SuiteSelection& selection) {
  return std::any_of(selection.microbenchmarks.begin(), selection.microbenchmarks.end(),
                     [](const Suite* s) { return s->name == "collective"; });
}

// FNV-1a: the same on every rank and every build, unlike std::hash.
std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

// Ranks that would run different cases would wait on each other forever: every rank must have
// been given the same command line. A hash of it is compared at start-up.
void check_same_options(ProcessGroup& group) {
  std::string joined;
  for (const std::string& arg : command_line_of_process()) joined += arg + '\0';
  const std::vector<std::string> hashes = group.all_gather(fmt::format("{:016x}", fnv1a(joined)));
  std::vector<int> differing;
  for (int r = 1; r < group.size(); ++r)
    if (hashes[static_cast<std::size_t>(r)] != hashes[0]) differing.push_back(r);
  if (!differing.empty())
    throw UsageError(fmt::format("rank{} {} got other options than rank 0 (command-line hash {} against rank 0's {}): "
                                 "start every rank with the same mpbench command",
                                 differing.size() == 1 ? "" : "s", fmt::join(differing, ", "),
                                 hashes[static_cast<std::size_t>(differing.front())], hashes[0]));
}

// Each rank's GPU is the one of its local rank: --device cuda and auto (where a GPU is usable)
// become cuda:LOCAL_RANK; cpu and an explicit cuda:N stay.
std::string device_of_rank(const std::string& device, const LaunchInfo& launch) {
  if (launch.world_size == 1) return device;
  if (device == "cuda" || (device == "auto" && !cuda_unavailable_reason()))
    return fmt::format("cuda:{}", launch.local_rank);
  return device;
}

// How this rank reaches the others, as MPI and NCCL tell (or why they cannot). Collective: the
// peers' transports follow from every rank's host.
nlohmann::json interconnect(const Job& job, const std::string& host) {
  const std::vector<std::string> hosts = job.group->all_gather(host);
#if MPBENCH_HAVE_MPI
  nlohmann::json mpi = cpu::mpi_interconnect(job.group->rank(), hosts);
#else
  nlohmann::json mpi = {{"library", nullptr}, {"reason", "mpbench was built without MPI"}};
#endif
#if MPBENCH_HAVE_NCCL
  nlohmann::json nccl = cuda::nccl_interconnect();
#else
  nlohmann::json nccl = {{"peers", nullptr}, {"reason", "mpbench was built without NCCL"}};
#endif
  return {{"mpi", std::move(mpi)}, {"nccl", std::move(nccl)}};
}

// One rank's entry in env.ranks: where it ran, on what, and how it reaches the other ranks.
nlohmann::json rank_record(const Job& job, const Backend& backend) {
  utsname uts{};
  uname(&uts);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return {{"rank", job.group->rank()}, {"local_rank", job.launch.local_rank}, {"host", uts.nodename},
          {"pid", static_cast<long>(::getpid())}, {"device", backend.device().to_json()},
          {"cuda_visible_devices", visible ? nlohmann::json(visible) : nlohmann::json(nullptr)},
          {"interconnect", interconnect(job, uts.nodename)}};
}

nlohmann::json every_rank(Job& job, const Backend& backend) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const std::string& text : job.group->all_gather(rank_record(job, backend).dump()))
    ranks.push_back(nlohmann::json::parse(text));
  return ranks;
}

// With several ranks, rank 0's document so far, rewritten to `out` after each finished case
// (microbenchmark case or training mode): a rank that fails or is killed ends the whole job
// (MPI_Abort, mpirun) while rank 0 may be waiting in a collective, with no chance to write at the
// end. Until the end the document says run.interrupted. One rank alone, and the other ranks, keep
// nothing here.
std::function<void(const CaseResult&)> finished_case_keeper(const Job& job, const std::string& out,
                                                            const ResultDocument& header) {
  if (!job.leader() || job.group->size() == 1) return [](const CaseResult&) {};
  auto finished = std::make_shared<ResultDocument>(header);
  finished->run["interrupted"] = true;
  auto said = std::make_shared<bool>(false);
  return [finished, said, out](const CaseResult& r) {
    finished->cases.push_back(r);
    try {
      write_file_atomically(out, finished->to_json().dump(2) + "\n");
    } catch (const UsageError& e) {
      if (!*said) fmt::print(stderr, "mpbench: error: {}: the finished cases are kept at the end only\n", e.what());
      *said = true;
    }
  };
}

// Rank 0's progress lines, each finished case kept as above. The other ranks print nothing.
microbench::ProgressFn rank_progress(const Job& job, const std::function<void(const CaseResult&)>& keep) {
  if (!job.leader()) return [](std::size_t, std::size_t, const CaseResult&) {};
  microbench::ProgressFn print = progress_printer();
  return [print, keep](std::size_t done, std::size_t total, const CaseResult& r) {
    print(done, total, r);
    keep(r);
  };
}

int run_on_rank(const RunOptions& options, const SuiteSelection& selection, Job& job);

}  // namespace

int run_benchmarks(const RunOptions& options) {
  const SuiteSelection selection = select_suites(options.suites);
  const LaunchInfo launch = detect_launch();
  Job job{launch, join_job(launch, runs_collectives(selection))};
  if (job.group->size() == 1) return run_on_rank(options, selection, job);
  // One rank that cannot go on must not leave the others waiting in a collective: it ends the job.
  int exit_code = 1;
  try {
    check_same_options(*job.group);
    const int code = run_on_rank(options, selection, job);
    // Until rank 0 has written its document: a rank exiting non-zero first (a mode failed on every
    // rank, or on one, agreed) would have mpirun end the job before it is written.
    job.group->barrier();
    return code;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "mpbench: error: rank %d: %s\n", job.group->rank(), printable(e.what()).c_str());
    exit_code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpbench: error: rank %d: %s\n", job.group->rank(), printable(e.what()).c_str());
  }
  job.group->abort(exit_code);
}

namespace {

int run_on_rank(const RunOptions& options, const SuiteSelection& selection, Job& job) {
  const auto& suites = selection.microbenchmarks;
  const bool transformer = selection.transformer;
  check_precisions(options.precisions, suites, transformer);
  const cpu::CpuOptions cpu_options{cpu::parse_gemm_path_choice(options.cpu_gemm)};
  workloads::TransformerSuiteOptions transformer_options = options.transformer;
  transformer_options.quick = options.quick;
  transformer_options.max_noise = sampler_config(options).max_noise;
  transformer_options.modes = transformer_modes(options.precisions);
  const bool run_transformer = transformer && (options.precisions.empty() || !transformer_options.modes.empty());
  std::vector<GemmShape> shapes;
  for (const auto& text : options.shapes) shapes.push_back(parse_shape(text));
  const std::regex filter = user_regex("--filter", options.filter.empty() ? ".*" : options.filter);
  check_writable(options.out);
  check_side_outputs(options);
  // --profile applies to every suite; --trace (which implies it) writes the transformer's traces only.
  const bool profile =
      transformer_options.profile || transformer_options.counters || !transformer_options.trace_file.empty();
  const bool profile_transformer = run_transformer && profile;
  // Before the backend starts (cuBLAS and the ops make NVTX calls), so that NVTX reaches CUPTI.
  std::string nvtx_injection;
  if (profile_transformer) {
    try {
      nvtx_injection = profiler::arrange_nvtx_injection();
    } catch (const profiler::CuptiUnavailable& e) {
      nvtx_injection = fmt::format("not set: {}", e.what());
    }
  }
  microbench::configure_google_benchmark(options.benchmark_args);
  if (!options.cpu_isa.empty()) cpu::limit_isa(options.cpu_isa);

  BackendChoice choice = choose_backend(device_of_rank(options.device, job.launch), cpu_options);
  Backend& backend = *choice.backend;
  if (!choice.note.empty() && job.leader()) std::fprintf(stderr, "mpbench: note: %s\n", choice.note.c_str());
  grad_reduce_dtype(options.grad_reduce);
  if (!std::isfinite(options.grad_buckets) || options.grad_buckets < 0)
    throw UsageError(fmt::format("bad --grad-buckets {}: use a size in MiB, or 0 for one all-reduce after the backward pass",
                                 options.grad_buckets));
  const bool data_parallel = run_transformer && job.group->size() > 1;
  std::unique_ptr<Communicator> communicator;
  std::string no_communicator;
  if (runs_collectives(selection) || data_parallel) communicator = make_communicator(backend, *job.group, &no_communicator);
  if (data_parallel && !communicator)
    throw UsageError(fmt::format("data-parallel training on {} ranks: {}", job.group->size(), no_communicator));

  std::optional<workloads::TransformerPlan> plan;
  if (run_transformer) plan = workloads::plan_transformer_run(transformer_options, backend.device());
  std::unique_ptr<workloads::GradientReducer> reducer;
  if (plan && data_parallel) {
    reducer = make_gradient_reducer(backend, *communicator, *job.group, options.grad_reduce);
    plan->train.reducer = reducer.get();
    plan->train.grad_bucket_mib = options.grad_buckets;
    if (!job.leader()) plan->checkpoint_out.clear();  // rank 0's weights are every rank's
  }
  const std::vector<GemmPrecision> gemms_run = gemm_precisions_run(options.precisions, suites, plan);
  check_native_choice(options, backend, gemms_run);
  check_device_can(options.precisions, suites, backend);
  check_shapes_fit(shapes, backend);

  microbench::SuiteOptions suite_options{options.quick, options.precisions, shapes, communicator.get(),
                                         job.group.get(), no_communicator};
  std::vector<CaseSpec> specs;
  for (const Suite* s : suites)
    for (auto& spec : s->cases(backend, suite_options))
      if (std::regex_search(spec.id(), filter)) specs.push_back(std::move(spec));
  if (specs.empty() && !plan)
    throw UsageError(fmt::format("no case matches --filter '{}': see `mpbench list`", options.filter));
  microbench::check_benchmark_filter(specs, options.benchmark_args);

  // Made before anything is measured: ops that cannot be set up (no kernel image, cuBLASLt) fail
  // the run before it has results to lose.
  const auto ops = plan ? make_transformer_ops(backend, plan->tensor_cores) : nullptr;
  // What will really run: skipped cases and modes are only listed in the table.
  std::vector<std::string> work;
  if (!specs.empty() || !plan) {
    const std::size_t measured = microbench::measurements_to_run(specs, options.benchmark_args);
    const auto skipped = std::count_if(specs.begin(), specs.end(), [](const CaseSpec& s) { return bool(s.skip_reason); });
    work.push_back(fmt::format("{} measurement{}{}", measured, measured == 1 ? "" : "s",
                               skipped ? fmt::format(" ({} case{} skipped)", skipped, skipped == 1 ? "" : "s") : ""));
  }
  if (plan) {
    const auto skipped = static_cast<std::size_t>(std::count_if(
        plan->modes.begin(), plan->modes.end(), [&](amp::Mode mode) { return bool(workloads::mode_skip_reason(*plan, *ops, mode)); }));
    const std::size_t trained = plan->modes.size() - skipped;
    work.push_back(fmt::format("{} training mode{}{}", trained, trained == 1 ? "" : "s",
                               skipped ? fmt::format(" ({} skipped)", skipped) : ""));
  }
  // Before the start line, which says the run has begun (users and tests Ctrl-C after it), and
  // before the environment is read (it takes a while): a Ctrl-C from here on keeps what finished.
  install_interrupt_handler();
  if (job.leader()) {
    const std::string ranks =
        job.group->size() > 1 ? fmt::format(", {} ranks ({})", job.group->size(), job.launch.launcher) : "";
    fmt::print(stderr, "mpbench: {} on {} ({}{})\n", fmt::join(work, " and "), backend.device().name,
               backend.device().backend, ranks);
    print_capability_notes(backend, gemms_run);
  }
  ResultDocument document;
  document.created = utc_timestamp_now();
  document.env["ranks"] = every_rank(job, backend);
  if (job.leader()) {
    document.env.update(full_environment(command_line_of_process(), cpu_options));
    document.env["backend"] = backend.environment();
    document.env["device"] = backend.device().to_json();
  }
  document.run = {{"device", backend.device().backend}, {"device_requested", options.device},
                  {"device_note", choice.note}, {"quick", options.quick}, {"precisions", options.precisions},
                  {"filter", options.filter}, {"cpu_isa", options.cpu_isa}, {"cpu_gemm", options.cpu_gemm},
                  {"interrupted", false}, {"world_size", job.group->size()},
                  {"launch", job.launch.to_json()},
                  {"sampler", sampler_config(options).to_json()}};
  if (profile_transformer)
    document.run["profile"] = {{"steps_per_mode", plan->profile_steps}, {"trace", transformer_options.trace_file},
                               {"counters", plan->counters}, {"nvtx_injection", nvtx_injection}};
  for (const Suite* s : suites) document.run["suites"].push_back(s->name);
  if (plan) document.run["suites"].push_back(workloads::kTransformerSuite);

  microbench::RunOutcome outcome;
  const auto keep_finished = finished_case_keeper(job, options.out, document);
  bool benchmark_out_lost = false;
  if (!specs.empty()) {
    const auto case_profiler = profile ? microbench::make_case_profiler(backend.device(), print_line) : nullptr;
    outcome = microbench::run_cases(backend, specs, sampler_config(options), options.benchmark_args,
                                    rank_progress(job, keep_finished), case_profiler.get());
    specs.clear();  // and with them the arrays their cases share (the bandwidth suite's), before training
    if (const auto problem = microbench::benchmark_out_problem(options.benchmark_args)) {
      fmt::print(stderr, "mpbench: error: {}; mpbench's own document is written as usual\n", *problem);
      benchmark_out_lost = true;
    }
  }
  for (const Suite* s : suites) s->finalize(outcome.cases);
  if (plan && !outcome.interrupted) {
    const auto quiet = [](const std::string&) {};
    auto trained = workloads::run_transformer_suite(*plan, *ops, backend.device(),
                                                    job.leader() ? workloads::TrainingProgress(print_line) : quiet,
                                                    workloads::start_step_profiler, keep_finished);
    for (auto& c : trained.cases) outcome.cases.push_back(std::move(c));
    outcome.interrupted = trained.interrupted;
    workloads::compare_final_losses(outcome.cases);
  }

  document.run["interrupted"] = outcome.interrupted;
  document.cases = std::move(outcome.cases);
  document.compute_speedups("fp32");
  // Rank 0 writes the job's one document; the others' cases are the same cases.
  if (!job.leader())
    return std::any_of(document.cases.begin(), document.cases.end(),
                       [](const CaseResult& c) { return c.status == CaseStatus::error; });

  // The table first: should the document not reach the disk, the results are still on the screen.
  std::fputs(microbench::format_summary(document).c_str(), stdout);
  warn_if_cpu_was_shared(backend);
  const int interrupted_status = 128 + interrupting_signal();
  const auto measured = std::count_if(document.cases.begin(), document.cases.end(),
                                      [](const CaseResult& c) { return c.status == CaseStatus::ok && c.seconds; });
  if (outcome.interrupted && measured == 0) {
    keep_unmeasured(options.out, document);
    return interrupted_status;
  }
  const std::optional<std::string> kept_elsewhere = write_result(options.out, document);
  const auto failed = std::count_if(document.cases.begin(), document.cases.end(),
                                    [](const CaseResult& c) { return c.status == CaseStatus::error; });
  if (kept_elsewhere) return 1;
  std::printf("\nwrote %zu cases to %s\n", document.cases.size(), options.out.c_str());
  if (outcome.interrupted) {
    fmt::print(stderr, "mpbench: interrupted: kept the {} measured case{} (of {}) in {}\n", measured,
               measured == 1 ? "" : "s", document.cases.size(), options.out);
    return interrupted_status;
  }
  if (failed) {
    std::fprintf(stderr, "mpbench: %ld case(s) failed: see their message in the table and in %s\n", static_cast<long>(failed), options.out.c_str());
    return 1;
  }
  if (const long lost = side_outputs_not_written(document) + benchmark_out_lost) {
    fmt::print(stderr, "mpbench: {} side output{} not written (a trace, checkpoint or --benchmark_out): see the errors "
               "above; the cases are in {}\n", lost, lost == 1 ? "" : "s", options.out);
    return 1;
  }
  return 0;
}

}  // namespace

}  // namespace mpbench::cli
