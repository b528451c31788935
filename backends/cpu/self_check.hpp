#pragma once
// Whether oneDNN's bf16 matmuls give correct products on this machine under an ISA limit, found
// in a child process: oneDNN takes an ISA limit only before its first work, so the process that
// decides (isa.cpp, before oneDNN's first primitive) cannot try the ISA itself. The child is this
// program again, with MPBENCH_CPU_SELF_CHECK=ISA in its environment; a constructor in this library
// runs the check before main and exits. It runs bf16 x bf16 -> fp32 matmuls of a few shapes (one
// not a multiple of any vector width) on random data, each twice, and compares every element with
// the product in double of the same bf16 values, within fp32 accumulation's bound. A wrong
// element, a signal (SIGILL where a guest loses the AMX tile state) or no answer within
// kSelfCheckSeconds is a failure.
#include <string>
#include <string_view>

namespace mpbench::cpu {

inline constexpr int kSelfCheckSeconds = 30;

struct SelfCheck {
  enum class Outcome { passed, failed, not_run };
  Outcome outcome = Outcome::not_run;
  std::string detail;  // what was checked, what was wrong, or why it did not run
};
std::string_view outcome_name(SelfCheck::Outcome outcome);  // "passed", "failed", "not run"

// The check under the oneDNN ISA limit `isa` (an isa_names() name). Where `kernel_must_name` is
// not empty, oneDNN's chosen implementation must name it ("amx"), else the check did not run:
// oneDNN dispatched elsewhere (the kernel refused AMX's tile permission, say).
// Test hooks, for tests/backends only: MPBENCH_TEST_SELF_CHECK_FAULT=wrong moves one element of
// the child's first product by k/1000 (far beyond the bound); =signal makes it die of SIGILL.
SelfCheck run_bf16_self_check(const std::string& isa, const std::string& kernel_must_name);

}  // namespace mpbench::cpu
