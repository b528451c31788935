#include "compare/environment.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>

namespace mpbench::compare {

namespace {

using nlohmann::json;

std::string json_text(const json& j) {
  if (j.is_null()) return "";
  return j.is_string() ? j.get<std::string>() : j.dump();
}

std::string at_pointer(const json& j, const std::string& pointer) {
  const json::json_pointer p(pointer);
  return j.contains(p) ? json_text(j.at(p)) : "";
}

std::string gpu_names(const ResultDocument& doc) {
  if (!doc.env.contains("gpus") || !doc.env["gpus"].is_array()) return "";
  std::vector<std::string> names;
  for (const auto& gpu : doc.env["gpus"]) names.push_back(gpu.is_object() ? json_text(gpu.value("name", json())) : "");
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, " + "));
}

std::string cpu_flags(const ResultDocument& doc) {
  const json::json_pointer p("/cpu/flags");
  if (!doc.env.contains(p) || !doc.env.at(p).is_object()) return "";
  std::vector<std::string> present;
  for (const auto& [flag, has] : doc.env.at(p).items())
    if (has.is_boolean() && has.get<bool>()) present.push_back(flag);
  return fmt::format("{}", fmt::join(present, " "));
}

// --cpu-isa as the run recorded it ("none" when not given); empty for documents without it.
std::string isa_limit(const ResultDocument& doc) {
  if (!doc.run.contains("cpu_isa")) return "";
  const std::string limit = json_text(doc.run["cpu_isa"]);
  return limit.empty() ? "none" : limit;
}

// OMP_NUM_THREADS as the run found it ("unset"); empty for documents that did not record it.
std::string omp_num_threads(const ResultDocument& doc) {
  const json::json_pointer p("/cpu/omp_num_threads");
  if (!doc.env.contains(p)) return "";
  return doc.env.at(p).is_null() ? "unset" : json_text(doc.env.at(p));
}

// "bf16 native, fp16 converted, ..." from the CPU's capability table.
std::string cpu_capabilities(const ResultDocument& doc) {
  const json::json_pointer p("/cpu/capabilities/gemm");
  if (!doc.env.contains(p) || !doc.env.at(p).is_object()) return "";
  std::vector<std::string> rows;
  for (const auto& [precision, row] : doc.env.at(p).items())
    rows.push_back(fmt::format("{} {}", precision, row.is_object() ? json_text(row.value("path", json())) : ""));
  return fmt::format("{}", fmt::join(rows, ", "));
}

// How the cases' GEMMs ran (details.gemm_path), per GEMM precision.
std::string gemm_paths(const ResultDocument& doc) {
  std::set<std::string> seen;
  for (const auto& c : doc.cases) {
    const json& g = c.details.contains("gemm_path") ? c.details["gemm_path"] : json();
    if (g.is_object() && g.contains("precision") && g.contains("path"))
      seen.insert(fmt::format("{} {}", json_text(g["precision"]), json_text(g["path"])));
  }
  return fmt::format("{}", fmt::join(seen, ", "));
}

struct Setting {
  std::string_view label;
  std::string (*read)(const ResultDocument& doc);
};

// What decides the speed of a kernel: the device, its driver, the libraries that pick kernels, the
// instructions and threads the CPU may use.
const std::vector<Setting>& settings() {
  static const std::vector<Setting> fields = {
      {"GPU", gpu_names},
      {"NVIDIA driver", [](const ResultDocument& d) { return at_pointer(d.env, "/gpus/0/driver_version"); }},
      {"CUDA driver", [](const ResultDocument& d) { return at_pointer(d.env, "/cuda/driver"); }},
      {"CUDA runtime", [](const ResultDocument& d) { return at_pointer(d.env, "/cuda/runtime"); }},
      {"cuBLAS", [](const ResultDocument& d) { return at_pointer(d.env, "/cuda/cublas"); }},
      {"cuBLASLt", [](const ResultDocument& d) { return at_pointer(d.env, "/cuda/cublaslt"); }},
      {"cuDNN", [](const ResultDocument& d) { return at_pointer(d.env, "/cuda/cudnn"); }},
      {"oneDNN", [](const ResultDocument& d) { return at_pointer(d.env, "/onednn/version"); }},
      {"oneDNN ISA", [](const ResultDocument& d) { return at_pointer(d.env, "/backend/onednn/effective_isa"); }},
      {"CPU", [](const ResultDocument& d) { return at_pointer(d.env, "/cpu/model"); }},
      {"CPU ISA flags", cpu_flags},
      {"CPU ISA limit (--cpu-isa)", isa_limit},
      {"threads", [](const ResultDocument& d) { return at_pointer(d.env, "/cpu/threads"); }},
      {"OMP_NUM_THREADS", omp_num_threads},
      {"CPU GEMM choice (--cpu-gemm)", [](const ResultDocument& d) { return at_pointer(d.env, "/cpu/gemm_path_choice"); }},
      {"CPU GEMM capabilities", cpu_capabilities},
      {"GEMM paths run", gemm_paths},
      {"mpbench revision", [](const ResultDocument& d) { return at_pointer(d.env, "/mpbench/git_revision"); }},
  };
  return fields;
}

// Distinct values over the runs of one side, in order of appearance.
std::string side_value(const Side& side, const Setting& setting) {
  std::vector<std::string> values;
  for (const auto& run : side.runs) {
    const auto v = setting.read(run.document);
    if (!v.empty() && std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  return fmt::format("{}", fmt::join(values, ", "));
}

struct Condition {
  std::string_view label, key, format;  // key in details.measurement.clocks_before/after
};

const std::vector<Condition>& conditions() {
  static const std::vector<Condition> fields = {
      {"load average (1 min)", "load_average_1m", "{:.1f}"},
      {"CPU clock (MHz, mean of cores)", "cpu_mhz_mean", "{:.0f}"},
      {"GPU SM clock (MHz)", "sm_clock_mhz", "{:.0f}"},
      {"GPU memory clock (MHz)", "memory_clock_mhz", "{:.0f}"},
      {"GPU temperature (C)", "temperature_c", "{:.0f}"},
  };
  return fields;
}

// "min-max" (or the one value) of a reading over every case of every run of the side.
std::string side_range(const Side& side, const Condition& condition) {
  std::optional<double> low, high;
  const json::json_pointer readings[] = {json::json_pointer("/measurement/clocks_before/" + std::string(condition.key)),
                                         json::json_pointer("/measurement/clocks_after/" + std::string(condition.key))};
  for (const auto& run : side.runs)
    for (const auto& c : run.document.cases)
      for (const json::json_pointer& p : readings) {
        if (!c.details.contains(p) || !c.details.at(p).is_number()) continue;
        const double v = c.details.at(p).get<double>();
        low = std::min(low.value_or(v), v);
        high = std::max(high.value_or(v), v);
      }
  if (!low) return "";
  const std::string from = fmt::format(fmt::runtime(condition.format), *low);
  const std::string to = fmt::format(fmt::runtime(condition.format), *high);
  return from == to ? from : from + "-" + to;
}

}  // namespace

std::vector<EnvironmentField> environment_fields(const Side& base, const Side& current) {
  std::vector<EnvironmentField> fields;
  for (const auto& setting : settings()) {
    EnvironmentField f{std::string(setting.label), side_value(base, setting), side_value(current, setting)};
    if (!f.base.empty() || !f.current.empty()) fields.push_back(std::move(f));
  }
  for (const auto& condition : conditions()) {
    EnvironmentField f{std::string(condition.label), side_range(base, condition), side_range(current, condition), true};
    if (!f.base.empty() || !f.current.empty()) fields.push_back(std::move(f));
  }
  return fields;
}

}  // namespace mpbench::compare
