#include "backends/cpu/self_check.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_version.h>
#include <optional>
#include <random>
#include <string_view>
#include <thread>
#include <vector>

#include "amp/formats.hpp"
#include "backends/cpu/isa.hpp"
#include "core/error.hpp"

extern char** environ;

namespace mpbench::cpu {
namespace {

constexpr const char* kIsaVariable = "MPBENCH_CPU_SELF_CHECK";
constexpr const char* kKernelVariable = "MPBENCH_CPU_SELF_CHECK_KERNEL";
constexpr const char* kFaultVariable = "MPBENCH_TEST_SELF_CHECK_FAULT";
constexpr int kExitPassed = 0, kExitFailed = 1, kExitNotRun = 3;

struct Shape {
  int m, n, k;
};
// Small, as a start-up check must be; the last one a multiple of no vector width or tile.
constexpr Shape kShapes[] = {{16, 16, 32}, {64, 96, 128}, {197, 131, 333}};

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// C [m,n] = A [m,k] B [k,n] in fp32 from bf16 operands, row-major, through one oneDNN matmul;
// `kernel` gets the implementation oneDNN chose.
std::vector<float> onednn_product(const dnnl::engine& engine, dnnl::stream& stream, std::vector<std::uint16_t>& a,
                                  std::vector<std::uint16_t>& b, Shape s, std::string& kernel) {
  const dnnl::memory::desc a_desc({s.m, s.k}, dt::bf16, tag::ab), b_desc({s.k, s.n}, dt::bf16, tag::ab),
      c_desc({s.m, s.n}, dt::f32, tag::ab);
#if DNNL_VERSION_MAJOR >= 3
  const dnnl::matmul::primitive_desc descriptor(engine, a_desc, b_desc, c_desc);
#else
  const dnnl::matmul::primitive_desc descriptor(dnnl::matmul::desc(a_desc, b_desc, c_desc), engine);
#endif
  kernel = descriptor.impl_info_str();
  std::vector<float> c(static_cast<std::size_t>(s.m) * s.n);
  dnnl::memory a_memory(a_desc, engine, a.data()), b_memory(b_desc, engine, b.data()), c_memory(c_desc, engine, c.data());
  dnnl::matmul(descriptor).execute(stream, {{DNNL_ARG_SRC, a_memory}, {DNNL_ARG_WEIGHTS, b_memory}, {DNNL_ARG_DST, c_memory}});
  stream.wait();
  return c;
}

// The first element of `c` off the product in double of the bf16 values beyond fp32
// accumulation's bound (k 2^-23 of the sum of |a b|: twice the worst case of any order), or "".
std::string first_wrong(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                        const std::vector<float>& c, Shape s) {
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      double exact = 0, magnitude = 0;
      for (int p = 0; p < s.k; ++p) {
        const double x = num::bf16_bits_to_f32(a[static_cast<std::size_t>(i) * s.k + p]);
        const double y = num::bf16_bits_to_f32(b[static_cast<std::size_t>(p) * s.n + j]);
        exact += x * y;
        magnitude += std::abs(x * y);
      }
      const double got = c[static_cast<std::size_t>(i) * s.n + j];
      if (!(std::abs(got - exact) <= s.k * std::ldexp(magnitude, -23)))
        return fmt::format("{}x{}x{} element ({}, {}) is {:.9g}, the exact product {:.9g}", s.m, s.n, s.k, i, j, got,
                           exact);
    }
  return "";
}

// The child's work: its exit status and one line on stdout.
int check_in_child(const std::string& isa, const std::string& kernel_must_name, const std::string& fault) {
  if (fault == "signal") std::raise(SIGILL);
  try {
    limit_isa(isa);
  } catch (const UsageError& e) {
    std::printf("%s\n", e.what());
    return kExitNotRun;
  }
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    std::mt19937 random(20261207);
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    std::string kernels;
    int products = 0;
    for (const Shape& s : kShapes) {
      std::vector<std::uint16_t> a(static_cast<std::size_t>(s.m) * s.k), b(static_cast<std::size_t>(s.k) * s.n);
      for (auto& x : a) x = num::f32_to_bf16_bits(value(random));
      for (auto& x : b) x = num::f32_to_bf16_bits(value(random));
      for (int repeat = 0; repeat < 2; ++repeat, ++products) {
        std::string kernel;
        std::vector<float> c = onednn_product(engine, stream, a, b, s, kernel);
        if (!kernel_must_name.empty() && kernel.find(kernel_must_name) == std::string::npos) {
          std::printf("oneDNN runs bf16 matmuls with %s here, not %s (effective ISA %s)\n", kernel.c_str(),
                      kernel_must_name.c_str(), effective_isa_name().c_str());
          return kExitNotRun;
        }
        if (fault == "wrong") c[c.size() / 2] += 1e-3f * static_cast<float>(s.k);
        if (const std::string wrong = first_wrong(a, b, c, s); !wrong.empty()) {
          std::printf("%s (oneDNN %s)\n", wrong.c_str(), kernel.c_str());
          return kExitFailed;
        }
        if (kernels.find(kernel) == std::string::npos) kernels += (kernels.empty() ? "" : ", ") + kernel;
      }
    }
    std::printf("%d bf16 products (16x16x32, 64x96x128, 197x131x333, each twice) within fp32 accumulation of the "
                "exact ones (oneDNN %s)\n",
                products, kernels.c_str());
    return kExitPassed;
  } catch (const dnnl::error& e) {
    std::printf("oneDNN has no bf16 matmul here: %s\n", e.what());
    return kExitNotRun;
  }
}

// Runs before main where this program is the child of run_bf16_self_check.
__attribute__((constructor)) void run_the_check_if_this_is_the_child() {
  const char* isa = std::getenv(kIsaVariable);
  if (!isa) return;
  const char* kernel = std::getenv(kKernelVariable);
  const char* fault = std::getenv(kFaultVariable);
  const int status = check_in_child(isa, kernel ? kernel : "", fault ? fault : "");
  std::fflush(stdout);
  std::_Exit(status);
}

// This process's environment with the child's variables set.
std::vector<std::string> child_environment(const std::string& isa, const std::string& kernel) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with(std::string(kIsaVariable) + "=") || entry.starts_with(std::string(kKernelVariable) + "="))
      continue;
    out.emplace_back(entry);
  }
  out.push_back(fmt::format("{}={}", kIsaVariable, isa));
  out.push_back(fmt::format("{}={}", kKernelVariable, kernel));
  return out;
}

// The child's exit status as waitpid gives it, or none when it outlived kSelfCheckSeconds (then killed).
std::optional<int> wait_bounded(pid_t child) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kSelfCheckSeconds);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) return status;
    if (done < 0 && errno != EINTR) return std::nullopt;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string read_all(int fd) {
  std::string text;
  char buffer[512];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

std::string_view outcome_name(SelfCheck::Outcome outcome) {
  switch (outcome) {
    case SelfCheck::Outcome::passed: return "passed";
    case SelfCheck::Outcome::failed: return "failed";
    case SelfCheck::Outcome::not_run: return "not run";
  }
  return "not run";
}

SelfCheck run_bf16_self_check(const std::string& isa, const std::string& kernel_must_name) {
  int out[2];
  if (::pipe(out) != 0) return {SelfCheck::Outcome::not_run, fmt::format("no pipe to the check: {}", std::strerror(errno))};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<std::string> environment = child_environment(isa, kernel_must_name);
  std::vector<char*> envp;
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  char program[] = "/proc/self/exe";
  char* argv[] = {program, nullptr};
  pid_t child = 0;
  const int spawned = ::posix_spawn(&child, program, &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(out[0]);
    return {SelfCheck::Outcome::not_run, fmt::format("could not start the check: {}", std::strerror(spawned))};
  }
  const std::optional<int> status = wait_bounded(child);
  const std::string said = read_all(out[0]);
  ::close(out[0]);
  if (!status)
    return {SelfCheck::Outcome::failed, fmt::format("the check gave no answer within {} s", kSelfCheckSeconds)};
  if (WIFSIGNALED(*status))
    return {SelfCheck::Outcome::failed,
            fmt::format("the check died of signal {} (SIG{})", WTERMSIG(*status), sigabbrev_np(WTERMSIG(*status)))};
  switch (WEXITSTATUS(*status)) {
    case kExitPassed: return {SelfCheck::Outcome::passed, said};
    case kExitFailed: return {SelfCheck::Outcome::failed, said};
    default: return {SelfCheck::Outcome::not_run, said.empty() ? "the check could not run" : said};
  }
}

}  // namespace mpbench::cpu
