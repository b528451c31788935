#include "profiler/causes.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>

#include "profiler/breakdown.hpp"
#include "profiler/classify.hpp"
#include "profiler/evidence.hpp"
#include "profiler/fp8_rules.hpp"
#include "profiler/rules.hpp"

namespace mpbench::profiler {

namespace {

using nlohmann::json;

double threshold(std::string_view rule) { return explain_rule(rule).threshold; }
std::string pct(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }
std::string ms(double s) { return fmt::format("{:.3g} ms", s * 1e3); }

bool is_low_precision(const std::string& precision) {
  return precision != "fp32" && precision != "fp64" && precision != "tf32";
}
bool is_fp16(const std::string& precision) { return precision == "fp16" || precision == "amp-fp16"; }
bool is_bf16(const std::string& precision) { return precision == "bf16" || precision == "amp-bf16"; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

// The parts of a version ("8.0.5", "9.1"), as numbers; a part that is not one ends it.
std::vector<long> version_parts(std::string_view v) {
  std::vector<long> parts;
  while (!v.empty()) {
    long n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc()) break;
    parts.push_back(n);
    v.remove_prefix(static_cast<std::size_t>(end - v.data()));
    if (v.empty() || v.front() != '.') break;
    v.remove_prefix(1);
  }
  return parts;
}

// Seconds per step by category of a case's breakdown; empty where it has none.
std::map<std::string, double> categories_of(const CaseResult& c) {
  const json& b = member_or_null(c.details, "breakdown");
  return b.is_object() ? breakdown_categories(b) : std::map<std::string, double>{};
}

double total_of(const std::map<std::string, double>& m) {
  double s = 0;
  for (const auto& [k, v] : m) s += v;
  return s;
}

// A CPU breakdown's "gemm", or a GPU breakdown's GEMMs on Tensor Cores or CUDA cores.
bool is_gemm_category(const std::string& name) {
  const auto category = parse_category(name);
  return name == "gemm" || (category && is_gemm(*category));
}

// Causes of the whole document, each a finding or nothing.

// Without Tensor Cores, compute capabilities 5.3, 6.0 (P100) and 6.2 still run fp16 arithmetic at
// twice fp32's rate (hgemm); the rest (6.1: the GTX 10 series) at a fraction of it.
bool fp16_double_rate(double cc) { return cc == 5.3 || cc == 6.0 || cc == 6.2; }

std::optional<Finding> no_tensor_cores(const ResultDocument& doc) {
  if (has_tensor_cores(doc).value_or(true)) return std::nullopt;
  std::vector<std::string> modes;
  for (const CaseResult& c : doc.cases)
    if (is_low_precision(c.precision) && std::find(modes.begin(), modes.end(), c.precision) == modes.end())
      modes.push_back(c.precision);
  if (modes.empty()) return std::nullopt;
  const std::string gpu = string_or(member_or_null(doc.env, "device"), "name", "this GPU");
  const std::string cc_text = string_or(member_or_null(doc.env, "device"), "compute_capability", "");
  const bool double_rate = fp16_double_rate(compute_capability(doc));
  const std::string what =
      double_rate ? "its fp16 arithmetic runs at twice fp32's rate, so fp16 GEMMs gain at most 2x and only through "
                    "hgemm, not the Tensor Cores' 8x or more"
                  : "no mixed-precision mode will pay here through its GEMMs, only through the halved bytes of "
                    "memory-bound kernels";
  return finding("no_tensor_cores", double_rate ? "info" : "warning",
                 fmt::format("{} is compute capability {}: it has no Tensor Cores (they start at 7.0, Volta, and "
                             "Turing's GTX 16 series lacks them), so the GEMMs of {} run on CUDA cores, and bf16 has "
                             "no hardware at all before 8.0: {}",
                             gpu, cc_text, fmt::join(modes, ", "), what),
                 {{"device", gpu}, {"compute_capability", cc_text}, {"modes", modes}, {"fp16_double_rate", double_rate}});
}

// Whether `test` holds for one of the comma-separated words of `list` (true for an empty list).
template <typename Test>
bool any_word(std::string_view list, Test test) {
  if (list.empty()) return true;
  while (!list.empty()) {
    const std::size_t comma = std::min(list.find(','), list.size());
    if (test(list.substr(0, comma))) return true;
    list.remove_prefix(std::min(comma + 1, list.size()));
  }
  return false;
}

// Whether the document ran a GPU case of the op and in a precision the fix is about.
bool bears_on(const ResultDocument& doc, const LibraryFix& fix) {
  return std::any_of(doc.cases.begin(), doc.cases.end(), [&](const CaseResult& c) {
    if (c.backend != "cuda" || !(is_low_precision(c.precision) || c.precision == "tf32")) return false;
    const std::string where = lower(c.suite + "/" + c.name);
    return any_word(fix.precisions, [&](std::string_view p) { return p == c.precision; }) &&
           any_word(fix.ops, [&](std::string_view op) { return where.find(op) != std::string::npos; });
  });
}

// One finding per library of env.cuda older than a release that fixed an op, naming the newest.
std::vector<Finding> libraries_too_old(const ResultDocument& doc) {
  std::vector<Finding> out;
  const json& cuda = member_or_null(doc.env, "cuda");
  if (!cuda.is_object()) return out;
  std::map<std::string_view, std::vector<LibraryFix>> missing;
  for (const LibraryFix& fix : library_fixes()) {
    const std::string version = string_or(cuda, std::string(fix.library).c_str(), "");
    if (!version.empty() && !version_parts(version).empty() && compare_versions(version, fix.fixed_in) < 0 &&
        bears_on(doc, fix))
      missing[fix.library].push_back(fix);
  }
  for (const auto& [library, fixes] : missing) {
    const std::string version = string_or(cuda, std::string(library).c_str(), "");
    std::string_view newest = fixes.front().fixed_in;
    json ops = json::array();
    std::vector<std::string> named;
    for (const LibraryFix& f : fixes) {
      if (compare_versions(f.fixed_in, newest) > 0) newest = f.fixed_in;
      ops.push_back({{"op", f.op}, {"fixed_in", f.fixed_in}, {"source", f.source}});
      named.push_back(fmt::format("{} (from {}; {})", f.op, f.fixed_in, f.source));
    }
    out.push_back(finding("library_too_old", "warning",
                          fmt::format("{} {} (env.cuda.{}) predates the releases that run these on Tensor Cores: {}; "
                                      "upgrade {} to {} or later",
                                      fixes.front().label, version, library, fmt::join(named, "; "),
                                      fixes.front().label, newest),
                          {{"library", library}, {"version", version}, {"upgrade_to", newest}, {"ops", ops}}));
  }
  return out;
}

// A CPU without bf16 matmul instructions, with the document's bf16 cases: its flags, the ISA
// oneDNN ran and the skipped cases' reasons say why bf16 cannot pay.
std::optional<Finding> no_bf16_instructions(const ResultDocument& doc) {
  const json& flags = member_or_null(member_or_null(doc.env, "cpu"), "flags");
  if (on_gpu(doc) || !flags.is_object()) return std::nullopt;
  if (has_cpu_flag(doc.env, "avx512_bf16") || has_cpu_flag(doc.env, "amx_bf16")) return std::nullopt;
  std::vector<std::string> skipped, present;
  std::size_t bf16_cases = 0, converted = 0;
  for (const CaseResult& c : doc.cases) {
    if (c.backend != "cpu" || !is_bf16(c.precision)) continue;
    ++bf16_cases;
    converted += string_or(member_or_null(c.details, "gemm_path"), "path", "") == "converted";
    if (c.status != CaseStatus::ok && skipped.size() < 3) skipped.push_back(fmt::format("{}: {}", c.full_id(), c.message));
  }
  if (bf16_cases == 0) return std::nullopt;
  for (const auto& [flag, has] : flags.items())
    if (has.is_boolean() && has.get<bool>()) present.push_back(flag);
  std::string isa = string_or(member_or_null(member_or_null(doc.env, "backend"), "onednn"), "effective_isa", "");
  if (isa.empty()) isa = string_or(member_or_null(doc.env, "onednn"), "effective_isa", "not recorded");
  const std::string model = string_or(member_or_null(doc.env, "cpu"), "model", "this CPU");
  std::string message = fmt::format("{} has no bf16 instructions: env.cpu.flags has neither avx512_bf16 nor amx_bf16 "
                                    "(it has {}), and oneDNN ran ISA {}; bf16 matmuls can only run converted to fp32 "
                                    "or emulated, slower than fp32",
                                    model, present.empty() ? "none of the listed" : fmt::format("{}", fmt::join(present, ", ")), isa);
  if (converted > 0) message += fmt::format("; {} case(s) ran converted", converted);
  if (!skipped.empty()) message += fmt::format("; skipped: {}", fmt::join(skipped, "; "));
  return finding("no_bf16_instructions", "warning", message,
                 {{"cpu", model}, {"cpu_flags", present}, {"effective_isa", isa}, {"bf16_cases", bf16_cases},
                  {"converted", converted}, {"skipped", skipped}});
}

// Causes of one case.

// Casts of the weights happen once a step whatever the batch; the GEMMs' work grows with it.
void small_batch_casts(const CaseResult& c, std::vector<Finding>& out) {
  const auto batch = number_at(c.params, {"batch"});
  if (c.suite != "transformer" || !batch || *batch > threshold("small_batch_casts")) return;
  const auto categories = categories_of(c);
  const double total = total_of(categories);
  const auto cast = categories.find("cast");
  if (total <= 0 || cast == categories.end() || cast->second / total < threshold("cast_overhead")) return;
  const auto tokens = number_at(c.params, {"tokens_per_step"});
  out.push_back(finding(
      "small_batch_casts", "warning",
      fmt::format("casts take {} of the {} step at batch {:.0f}{}: a step casts its weights once whatever the batch, "
                  "while its GEMM work grows with the batch, so at a small batch the casts eat what the GEMMs gain; "
                  "raise the batch (or accumulate micro-batches)",
                  pct(cast->second / total), c.precision, *batch,
                  tokens ? fmt::format(" ({:.0f} tokens)", *tokens) : std::string()),
      {{"batch", *batch}, {"cast_seconds", cast->second}, {"cast_share", cast->second / total},
       {"tokens_per_step", tokens ? json(*tokens) : json()}}));
}

// Amdahl: with the GEMMs infinitely fast the step gains at most 1 / (1 - their share).
void tensor_core_share(const CaseResult& c, const CaseResult& base, std::vector<Finding>& out) {
  if (!is_low_precision(c.precision) && c.precision != "tf32") return;
  const auto categories = categories_of(base);
  const double total = total_of(categories);
  if (total <= 0 || categories_of(c).empty()) return;
  double gemm = 0;
  std::string largest;
  double largest_s = 0;
  for (const auto& [name, s] : categories) {
    if (is_gemm_category(name)) gemm += s;
    else if (s > largest_s) largest = name, largest_s = s;
  }
  const double share = gemm / total;
  if (share >= threshold("tensor_core_share_small") || share >= 1) return;
  const double bound = 1.0 / (1.0 - share);
  out.push_back(finding(
      "tensor_core_share_small", "warning",
      fmt::format("GEMMs, the work Tensor Cores (or bf16 matmul instructions) speed up, are {} of the {} step: with "
                  "them infinitely fast the step gains at most {:.2f}x (Amdahl); {} ({} of the step) and the rest "
                  "set the limit",
                  pct(share), base.precision, bound, largest.empty() ? "other work" : largest, pct(largest_s / total)),
      {{"gemm_share", share}, {"bound", bound}, {"largest_other", largest}, {"largest_other_share", largest_s / total}}));
}

std::vector<std::string> kernel_names(const CaseResult& c) {
  std::vector<std::string> names;
  for (const json* list : {&member_or_null(member_or_null(c.details, "profile"), "kernels"),
                           &member_or_null(member_or_null(c.details, "breakdown"), "top_kernels")})
    if (list->is_array())
      for (const json& k : *list)
        if (const std::string name = string_or(k, "name", ""); !name.empty()) names.push_back(name);
  return names;
}


// fp16 storage with fp32 math on CUDA cores (cublasSgemmEx, "pseudo-fp16"): by kernel name, or by
// cuBLASLt's record of an fp16 GEMM with 32F compute and no Tensor Core op type.
void pseudo_fp16_sgemm(const CaseResult& c, std::vector<Finding>& out) {
  if (!is_fp16(c.precision)) return;
  std::vector<std::string> sgemms;
  for (const std::string& name : kernel_names(c))
    if (lower(name).find("sgemm") != std::string::npos &&
        std::find(sgemms.begin(), sgemms.end(), name) == sgemms.end())
      sgemms.push_back(name);
  const json& algo = member_or_null(c.details, "algorithm");
  const json& inputs = member_or_null(algo, "inputs");
  const bool fp16_inputs = inputs.is_array() && std::find(inputs.begin(), inputs.end(), json("fp16")) != inputs.end();
  const json& tc = member_or_null(algo, "tensor_cores");
  const bool record = fp16_inputs && string_or(algo, "compute_type", "") == "CUBLAS_COMPUTE_32F" && tc.is_boolean() &&
                      !tc.get<bool>();
  if (sgemms.empty() && !record) return;
  const std::string what = sgemms.empty() ? fmt::format("cuBLASLt's record: fp16 inputs, compute type "
                                                        "CUBLAS_COMPUTE_32F, no Tensor Core op type")
                                          : fmt::format("kernels {}", fmt::join(sgemms, ", "));
  out.push_back(finding("pseudo_fp16_sgemm", "warning",
                        fmt::format("{} GEMMs ran as fp32 sgemm on fp16 storage ({}): pseudo-fp16, fp32 math on CUDA "
                                    "cores rather than hgemm or a Tensor Core kernel, so the halved bytes are all it "
                                    "saves",
                                    c.precision, what),
                        {{"sgemm_kernels", sgemms}, {"algorithm_record", record}}));
}

// What math a baseline GEMM record ran where it was not pedantic fp32; empty where it was.
std::string non_pedantic_math(const json& record) {
  const std::string type = string_or(record, "compute_type", "");
  if (type.find("TF32") != std::string::npos) return "TF32 on Tensor Cores";
  if (type.find("16BF") != std::string::npos) return "bf16 on Tensor Cores";
  if (type.find("16F") != std::string::npos) return "fp16 on Tensor Cores";
  const json& tc = member_or_null(record, "tensor_cores");
  return tc.is_boolean() && tc.get<bool>() ? "on Tensor Cores" : "";
}

// The GEMM records of a case: details.algorithm and details.gemm_algorithms[].
std::vector<const json*> gemm_records(const CaseResult& c) {
  std::vector<const json*> records;
  if (const json& a = member_or_null(c.details, "algorithm"); a.is_object()) records.push_back(&a);
  if (const json& list = member_or_null(c.details, "gemm_algorithms"); list.is_array())
    for (const json& a : list) records.push_back(&a);
  return records;
}

// What the records ran where they were not pedantic fp32: the most common such math, how many
// records ran it, and the first one's compute type.
struct NonPedantic {
  std::string math, compute_type;
  std::size_t count = 0, records = 0;
};

std::optional<NonPedantic> non_pedantic(const CaseResult& c) {
  const auto records = gemm_records(c);
  std::map<std::string, std::size_t> maths;
  std::string type;
  for (const json* r : records)
    if (const std::string math = non_pedantic_math(*r); !math.empty()) {
      ++maths[math];
      if (type.empty()) type = string_or(*r, "compute_type", "not recorded");
    }
  if (maths.empty()) return std::nullopt;
  const auto most = std::max_element(maths.begin(), maths.end(),
                                     [](const auto& x, const auto& y) { return x.second < y.second; });
  return NonPedantic{most->first, type, most->second, records.size()};
}

// Whether `c` ran pedantic fp32: fp32 whose GEMM records (there are some) all ran fp32 math off
// Tensor Cores.
bool pedantic_fp32(const CaseResult& c) {
  return c.precision == "fp32" && c.status == CaseStatus::ok && c.seconds && !gemm_records(c).empty() &&
         !non_pedantic(c);
}

// A baseline the user took at face value: its GEMMs' compute types say what math it really ran.
// An fp32 baseline that ran TF32 (PyTorch's default for convolutions, A100 defaults) or a tf32
// baseline is already on Tensor Cores: a mode's gain over it is 16-bit against TF32 Tensor Core
// math (about 2x the peak), not against fp32 on CUDA cores (8x or more), and that, not the mode,
// is why the gain is small. Where the document also measured the case in pedantic fp32 (`fp32`,
// the same case's fp32 run, may be null), how much faster the baseline already was says what a
// pedantic baseline would show.
void baseline_not_pedantic(const CaseResult& c, const std::string& baseline, const CaseResult* fp32,
                           std::vector<Finding>& out) {
  if (c.precision != baseline || (baseline != "fp32" && baseline != "tf32")) return;
  const auto found = non_pedantic(c);
  if (!found) return;
  json evidence = {{"math", found->math},
                   {"compute_type", found->compute_type},
                   {"records", found->records},
                   {"non_pedantic", found->count}};
  std::string pedantic_view = "a pedantic fp32 baseline (CUBLAS_COMPUTE_32F_PEDANTIC; PyTorch: "
                              "torch.backends.cuda.matmul.allow_tf32 = False) would show the gain over fp32 on CUDA "
                              "cores";
  if (fp32 && pedantic_fp32(*fp32) && c.seconds && c.seconds->median > 0) {
    const double ahead = fp32->seconds->median / c.seconds->median;
    evidence["pedantic_fp32_case"] = fp32->full_id();
    evidence["baseline_speedup_over_pedantic_fp32"] = ahead;
    pedantic_view = fmt::format("this run's pedantic fp32 ({}) took {:.3g} s against the baseline's {:.3g} s, so the "
                                "baseline is already {:.2f}x faster than pedantic fp32 and every mode's speedup over "
                                "fp32 on CUDA cores is {:.2f} times its speedup over this baseline (explain "
                                "--baseline fp32 shows it)",
                                fp32->full_id(), fp32->seconds->median, c.seconds->median, ahead, ahead);
  }
  const bool tf32 = baseline == "tf32";
  const std::string advice =
      tf32 ? pedantic_view
           : fmt::format("compare against the math it used ({}), or: {}",
                         found->math.rfind("TF32", 0) == 0 ? "--baseline tf32" : "the matching mode", pedantic_view);
  out.push_back(finding(
      "baseline_not_pedantic", "warning",
      fmt::format("the {} baseline {}: {} of its {} GEMM records ran {} (compute type {}), so a mode's speedup over it "
                  "is 16-bit against {} math, not against fp32 on CUDA cores, and that, not the mode, is why the gain "
                  "is small; {}",
                  baseline, tf32 ? "already runs on Tensor Cores" : "is not pedantic fp32", found->count,
                  found->records, found->math, found->compute_type, found->math, advice),
      evidence));
}

// What a data-parallel case records of its gradient reduction (params.world_size,
// params.grad_reduce, details.communication); each part may be missing.
struct Communication {
  std::optional<double> world_size, seconds, exposed;
  std::string dtype, library;
};

Communication communication_of(const CaseResult& c) {
  const json& comm = member_or_null(c.details, "communication");
  Communication out{number_at(c.params, {"world_size"}), number_at(comm, {"seconds_per_step"}),
                    number_at(comm, {"exposed_seconds_per_step"}), string_or(c.params, "grad_reduce", ""),
                    string_or(comm, "library", "")};
  if (out.dtype.empty()) out.dtype = string_or(comm, "dtype", "");
  return out;
}

// "; 12 ms of communication per step, 8 ms of it exposed (20.0% of the 40 ms step)".
std::string communication_figures(const Communication& comm, double step_s) {
  std::string out;
  if (comm.seconds) out += fmt::format("; {} of communication per step", ms(*comm.seconds));
  if (comm.exposed)
    out += fmt::format("{} {} exposed ({} of the {} step)", comm.seconds ? "," : ";", ms(*comm.exposed),
                       pct(*comm.exposed / step_s), ms(step_s));
  return out;
}

json communication_evidence(const Communication& comm, double step_s) {
  auto number = [](const std::optional<double>& v) { return v ? json(*v) : json(); };
  return {{"world_size", number(comm.world_size)}, {"grad_reduce", comm.dtype}, {"library", comm.library},
          {"seconds_per_step", number(comm.seconds)}, {"exposed_seconds_per_step", number(comm.exposed)},
          {"step_seconds", step_s}, {"exposed_share", comm.exposed ? json(*comm.exposed / step_s) : json()}};
}

// Gradients reduced in fp32 under a 16-bit mode move twice the bytes they need to; exposed
// communication does not get faster with the precision at all.
void communication_rules(const CaseResult& c, std::vector<Finding>& out) {
  if (!c.seconds || c.seconds->median <= 0) return;
  const Communication comm = communication_of(c);
  const double step_s = c.seconds->median;
  const bool several = comm.world_size ? *comm.world_size > 1 : (comm.seconds || comm.exposed);
  if (!several) return;
  const std::string across = comm.world_size ? fmt::format(" across {:.0f} ranks", *comm.world_size) : "";
  const std::string by = comm.library.empty() ? "" : fmt::format(" ({})", comm.library);
  if (comm.dtype == "fp32" && is_low_precision(c.precision))
    out.push_back(finding("fp32_gradient_reduce", "warning",
                          fmt::format("gradients travel in fp32 under {}{}{}{}: reducing them in {} halves the bytes",
                                      c.precision, across, by, communication_figures(comm, step_s),
                                      is_fp16(c.precision) ? "fp16" : "bf16"),
                          communication_evidence(comm, step_s)));
  if (comm.exposed && *comm.exposed / step_s >= threshold("exposed_communication"))
    out.push_back(finding("exposed_communication", "warning",
                          fmt::format("the {} step waits {} of its time for the gradient reduction{}{}: exposed "
                                      "communication does not get faster with the precision, so the GEMMs' speedup "
                                      "cannot show in the step{}",
                                      c.precision, pct(*comm.exposed / step_s), across, by,
                                      comm.dtype.empty() ? "" : fmt::format(" (gradients in {})", comm.dtype)),
                          communication_evidence(comm, step_s)));
}

// What `run` recorded of the profiled steps' host side (details.host, profiler/host_evidence.hpp).
const json& host_of(const CaseResult& c) { return member_or_null(c.details, "host"); }

// Device time of the case's kernels per step: details.host's, else a GPU breakdown's categories.
std::optional<double> kernel_seconds(const CaseResult& c) {
  if (const auto recorded = number_at(host_of(c), {"kernel_s_per_step"})) return recorded;
  if (c.backend != "cuda") return std::nullopt;
  const double total = total_of(categories_of(c));
  return total > 0 ? std::optional<double>(total) : std::nullopt;
}

void input_wait_rule(const CaseResult& c, std::vector<Finding>& out) {
  const json& host = host_of(c);
  const auto wait = number_at(host, {"input_wait_s_per_step"}), step_s = number_at(host, {"step_s"});
  if (!wait || !step_s || *step_s <= 0 || *wait / *step_s < threshold("input_wait")) return;
  const auto data = number_at(host, {"data_s_per_step"}), staging = number_at(host, {"staging_s_per_step"});
  out.push_back(finding("input_wait", "warning",
                        fmt::format("the {} step waits {} of its time for its input ({} per step: {} reading the "
                                    "batch, {} staging it to the device): no precision shortens it",
                                    c.precision, pct(*wait / *step_s), ms(*wait), ms(data.value_or(0)),
                                    ms(staging.value_or(0))),
                        {{"input_wait_s_per_step", *wait}, {"step_s", *step_s}, {"share", *wait / *step_s},
                         {"data_s_per_step", data ? json(*data) : json()},
                         {"staging_s_per_step", staging ? json(*staging) : json()}}));
}

// Syncs cost where they leave the GPU idle: the host cannot queue work ahead of one.
void host_syncs_rule(const CaseResult& c, std::vector<Finding>& out) {
  const json& host = host_of(c);
  const auto syncs = number_at(host, {"host_syncs_per_step"}), step_s = number_at(host, {"step_s"});
  const auto kernels = kernel_seconds(c);
  if (!syncs || *syncs < threshold("host_syncs") || !step_s || *step_s <= 0 || !kernels) return;
  const double busy = *kernels / *step_s;
  if (busy >= threshold("host_bound_step")) return;
  out.push_back(finding("host_syncs", "warning",
                        fmt::format("{:.1f} host-device synchronisations per {} step while the GPU is busy only {} of "
                                    "it: each sync drains the queue, so the host cannot launch ahead (a loss scaler "
                                    "reading its scale on the host each step forces one)",
                                    *syncs, c.precision, pct(busy)),
                        {{"host_syncs_per_step", *syncs}, {"kernel_s_per_step", *kernels}, {"step_s", *step_s},
                         {"gpu_busy_share", busy}}));
}

}  // namespace

std::vector<LibraryFix> library_fixes() {
  return {
      {"runtime", "CUDA", "fp16 batched GEMMs (attention's q.k^T and att.v)", "9.1",
       "CUDA 9.1 release notes: cublasGemmBatchedEx and cublasGemmStridedBatchedEx with Tensor Core math", "",
       "transformer,attention,bmm,batched"},
      {"runtime", "CUDA", "bf16 and TF32 GEMMs", "11.0", "CUDA 11.0 release notes: cuBLAS bf16 and TF32 for Ampere",
       "tf32,bf16,amp-bf16", ""},
      {"cudnn", "cuDNN", "Tensor Core kernels at all (fp16 convolutions and RNNs on Volta)", "7.0",
       "cuDNN 7.0 release notes", "", "conv,rnn,lstm"},
      {"cudnn", "cuDNN", "fast fp16 Tensor Core convolutions for detection models", "7.4",
       "facebookresearch/maskrcnn-benchmark#807: slower with cuDNN 7.0.4, 7.4 needed", "", "conv"},
      {"cudnn", "cuDNN", "fp16 3D convolutions (Conv3d) on Tensor Cores", "8.1",
       "pytorch/pytorch#57115: the wheel's cuDNN 8.0.5 ran them without, 8.1.0.77 with", "", "conv3d,3d"},
  };
}

int compare_versions(std::string_view a, std::string_view b) {
  auto pa = version_parts(a), pb = version_parts(b);
  const std::size_t n = std::max(pa.size(), pb.size());
  pa.resize(n, 0);
  pb.resize(n, 0);
  return pa < pb ? -1 : pa > pb ? 1 : 0;
}

bool on_gpu(const ResultDocument& doc) { return string_or(doc.run, "device", "").rfind("cuda", 0) == 0; }

std::optional<bool> has_tensor_cores(const ResultDocument& doc) {
  const double cc = compute_capability(doc);
  if (!on_gpu(doc) || cc <= 0) return std::nullopt;
  const std::string name = string_or(member_or_null(doc.env, "device"), "name", "");
  return cc >= threshold("no_tensor_cores") && name.find("GTX 16") == std::string::npos;
}

double compute_capability(const ResultDocument& doc) {
  const auto parts = version_parts(string_or(member_or_null(doc.env, "device"), "compute_capability", ""));
  if (parts.empty()) return 0;
  return static_cast<double>(parts[0]) + (parts.size() > 1 ? static_cast<double>(parts[1]) / 10.0 : 0.0);
}

std::vector<Finding> document_causes(const ResultDocument& doc) {
  std::vector<Finding> out;
  if (auto f = no_tensor_cores(doc)) out.push_back(std::move(*f));
  for (Finding& f : libraries_too_old(doc)) out.push_back(std::move(f));
  if (auto f = no_bf16_instructions(doc)) out.push_back(std::move(*f));
  return out;
}

void case_causes(const CaseResult& c, const CaseResult* base, const std::string& baseline, const CaseResult* fp32,
                 std::vector<Finding>& out) {
  if (!base) return baseline_not_pedantic(c, baseline, fp32, out);
  small_batch_casts(c, out);
  tensor_core_share(c, *base, out);
  pseudo_fp16_sgemm(c, out);
  communication_rules(c, out);
  input_wait_rule(c, out);
  host_syncs_rule(c, out);
  fp8_rules(c, out);
}

// The largest measured part of a step's host time: the wait for its input (details.host), or the
// GPU's idle time between kernels beyond that wait (details.breakdown.gaps_s), which is host syncs
// draining the queue where the step makes them (host_syncs' threshold), else launches. Empty
// where the case recorded neither.
std::optional<HostPart> host_part_of(const CaseResult& c) {
  const json& host = host_of(c);
  const double input = number_at(host, {"input_wait_s_per_step"}).value_or(0);
  const auto gaps = number_at(member_or_null(c.details, "breakdown"), {"gaps_s"});
  const auto syncs = number_at(host, {"host_syncs_per_step"});
  const double idle = std::max(0.0, gaps.value_or(0) - input);
  if (input <= 0 && idle <= 0) return std::nullopt;
  if (input >= idle) return HostPart{"input_wait", input, "the wait for its input (reading and staging the batch)"};
  if (syncs && *syncs >= threshold("host_syncs"))
    return HostPart{"host_syncs", idle,
                    fmt::format("the GPU's idle time between kernels, with {:.1f} host syncs per step draining the "
                                "queue",
                                *syncs)};
  return HostPart{"launch_gaps", idle, "the GPU's idle time between kernels: launch-bound"};
}

void host_bound_rule(const CaseResult& c, const CaseResult& base, double speedup, std::vector<Finding>& out) {
  const auto kernels = kernel_seconds(c), base_kernels = kernel_seconds(base);
  if (!kernels || !base_kernels || *kernels <= 0) return;
  const double kernel_speedup = *base_kernels / *kernels;
  if (kernel_speedup <= 1 || speedup >= threshold("host_bound_step") * kernel_speedup) return;
  const double host_s = c.seconds ? c.seconds->median - *kernels : 0;
  const auto part = host_part_of(c);
  const std::string largest = part ? fmt::format("; its largest part is {} ({} per step)", part->what, ms(part->seconds))
                                   : "; what it is (input, syncs, launches) was not recorded: --profile records it";
  json evidence = {{"kernel_speedup", kernel_speedup}, {"step_speedup", speedup}, {"kernel_s_per_step", *kernels},
                   {"baseline_kernel_s_per_step", *base_kernels}};
  if (part) evidence["largest_part"] = {{"part", part->name}, {"seconds", part->seconds}};
  out.push_back(finding("host_bound_step", "warning",
                        fmt::format("the {} kernels ran {:.2f}x faster than {}'s but the step only {:.2f}x: {} of the "
                                    "{} step is host time that no precision shortens{}",
                                    c.precision, kernel_speedup, base.precision, speedup, ms(std::max(0.0, host_s)),
                                    c.seconds ? ms(c.seconds->median) : std::string("measured"), largest),
                        std::move(evidence)));
}

}  // namespace mpbench::profiler
