// mpbench run: the CLI11 front of run.hpp.
#include <fmt/format.h>

#include "backends/cpu/cpu_backend.hpp"
#include "cli/commands.hpp"
#include "cli/run.hpp"
#include "core/error.hpp"

namespace mpbench::cli {

namespace {
const CLI::Validator kPositive(
    [](std::string& text) {
      double value = 0;
      return CLI::detail::lexical_cast(text, value) && value > 0 ? std::string() : "must be a number above 0, got " + text;
    },
    "POSITIVE");
}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "run benchmark suites and write one result document");
  auto o = std::make_shared<RunOptions>();
  auto max_noise = std::make_shared<double>(0), min_time = std::make_shared<double>(0), timeout = std::make_shared<double>(0);
  cmd->add_option("--suite", o->suites, "gemm, bandwidth, cast or all (repeat or comma-separate)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--device", o->device, "auto (GPU if usable, else CPU), cuda, cuda:N or cpu")->capture_default_str();
  cmd->add_option("--precision", o->precisions,
                  "comma-separated precisions to run (default: all the suite has); gemm: fp32, tf32, fp16, "
                  "fp16-acc16, bf16, fp8-e4m3; bandwidth: fp32, fp16, bf16; cast: fp16, bf16, fp8-e4m3")
      ->delimiter(',');
  cmd->add_option("--filter", o->filter, "regular expression on case ids suite/case/precision");
  cmd->add_flag("--quick", o->quick, "fewer sizes and a looser noise target (a smoke run)");
  cmd->add_option("--out", o->out, "result document to write (JSON, schema mpbench.result/1)")->capture_default_str();
  cmd->add_option("--shape", o->shapes, "extra GEMM shape MxNxK[xBATCH] for the gemm suite (repeatable)");
  cmd->add_option("--cpu-isa", o->cpu_isa,
                  fmt::format("limit oneDNN to an instruction set, as DNNL_MAX_CPU_ISA does: {}", fmt::join(cpu::isa_names(), ", ")));
  auto* noise = cmd->add_option("--max-noise", *max_noise, "stop sampling once stddev/mean is below this (default 0.005; --quick 0.02)")->check(kPositive);
  auto* mintime = cmd->add_option("--min-time", *min_time, "seconds of device time to accumulate per case at least (default 0.5; --quick 0.05)")->check(kPositive);
  auto* limit = cmd->add_option("--timeout", *timeout, "wall-clock seconds per case at most (default 15; --quick 3)")->check(kPositive);
  cmd->allow_extras();
  cmd->footer(
      "Options starting with --benchmark_ go to Google Benchmark, the harness (e.g. --benchmark_filter, "
      "--benchmark_repetitions=N whose samples are pooled, --benchmark_out=FILE --benchmark_out_format=json). "
      "--benchmark_min_time has no effect: each case runs mpbench's own sampler, set by --max-noise, --min-time and --timeout.\n"
      "Exit status: 0 every case ok or skipped, 1 a case failed, 2 bad input, 130 interrupted (finished cases are kept).");
  cmd->callback([cmd, o, noise, mintime, limit, max_noise, min_time, timeout, &exit_code] {
    for (const auto& extra : cmd->remaining())
      if (extra.rfind("--benchmark_", 0) == 0) o->benchmark_args.push_back(extra);
      else throw UsageError(fmt::format("run: unknown option or argument '{}': see mpbench run --help", extra));
    if (*noise) o->max_noise = *max_noise;
    if (*mintime) o->min_time = *min_time;
    if (*limit) o->timeout = *timeout;
    exit_code = run_benchmarks(*o);
  });
}

}  // namespace mpbench::cli
