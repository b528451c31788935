#pragma once
// The root causes users hit when mixed precision does not pay, read from evidence a result
// document carries: the device (no Tensor Cores below compute capability 7.0), the library
// versions in env against the versions that fixed an op (a small table with its public sources),
// the CPU's flags, the batch against the cast share, the share of the step Tensor Cores can speed
// up at all (Amdahl), a baseline whose GEMMs were not pedantic fp32, and fp16 GEMMs that ran an
// fp32 sgemm on fp16 storage. Each finding quotes its evidence; its fix is its rule's
// (profiler/rules.cpp).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "profiler/explain.hpp"

namespace mpbench::profiler {

// A finding of a rule of the table (explain_rule throws for a name not in it).
Finding finding(std::string rule, std::string severity, std::string message, nlohmann::json evidence);

// A library release that first did an op right for mixed precision, and where that is said.
struct LibraryFix {
  std::string_view library;  // the key in env.cuda: "runtime", "cublas", "cudnn"
  std::string_view label;    // "CUDA", "cuDNN"
  std::string_view op;
  std::string_view fixed_in;  // the first version with it, "9.1"
  std::string_view source;    // the public note or thread that says so
  // The precisions it bears on, comma-separated; empty: every low-precision mode.
  std::string_view precisions;
  // The cases it bears on: words of which one must be in "suite/name" (e.g. "conv"); empty: all.
  std::string_view ops;
};
std::vector<LibraryFix> library_fixes();

// -1, 0 or 1 as version a ("8.0.5") is below, equal to or above b ("8.1"); missing parts count 0.
int compare_versions(std::string_view a, std::string_view b);

// Whether the document's GPU has Tensor Cores: compute capability 7.0 or later, except Turing's
// GTX 16 series (TU116, TU117: compute capability 7.5 without them). Nothing where it is no GPU's.
std::optional<bool> has_tensor_cores(const ResultDocument& doc);

// The document's compute capability as a number (7.5), or 0 where it is not a GPU's.
double compute_capability(const ResultDocument& doc);
bool on_gpu(const ResultDocument& doc);

// Causes of the whole document: no Tensor Cores, libraries too old, no bf16 instructions.
std::vector<Finding> document_causes(const ResultDocument& doc);

// Causes of one case against its baseline case (null where it has none): small batch with casts,
// a small Tensor-Core-eligible share, pseudo-fp16 sgemm; on a baseline case itself (`base` null,
// its precision the baseline), whether its GEMMs were pedantic (for an fp32 or tf32 baseline, with
// `fp32`, the same case's fp32 run where the document has one, as the comparison when it was
// pedantic).
void case_causes(const CaseResult& c, const CaseResult* base, const std::string& baseline, const CaseResult* fp32,
                 std::vector<Finding>& out);

// The kernels' speedup against the step's (`speedup`, measured): where the step gained less than
// host_bound_step's share of it, the host holds the step. A ratio: call it past the noise gate.
void host_bound_rule(const CaseResult& c, const CaseResult& base, double speedup, std::vector<Finding>& out);

// The largest measured part of a step's host time, the rule that names it (input_wait, host_syncs
// or launch_gaps), its seconds per step and what it is.
struct HostPart {
  std::string name;
  double seconds = 0;
  std::string what;
};
// Empty where the case recorded neither its input wait nor the GPU's gaps between kernels.
std::optional<HostPart> host_part_of(const CaseResult& c);

}  // namespace mpbench::profiler
