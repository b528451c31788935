// mpbench env [--json]: the environment that makes a result reproducible.
#include <fmt/format.h>

#include <iostream>

#include "backends/registry.hpp"
#include "cli/commands.hpp"
#include "cli/command_line.hpp"
#include "core/gemm.hpp"

namespace mpbench::cli {

namespace {

std::string value_or_missing(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "not found";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

// The capability table as stored ({"gemm": {"bf16": {"path", "reason"}}}), a line per precision.
void print_capabilities(const std::string& heading, const nlohmann::json& table) {
  if (!table.contains("gemm")) return;
  fmt::print("{}\n", heading);
  for (const GemmPrecisionInfo& info : gemm_precisions()) {
    const nlohmann::json row = table["gemm"].value(std::string(info.name), nlohmann::json::object());
    fmt::print("          {:<11} {:<12} {}\n", info.name, row.value("path", "?"), row.value("reason", ""));
  }
}

// The GPU code the binary carries: "gpu code  sm_75 sm_80 ... (SASS), compute_120 (PTX)".
void print_kernel_images(const nlohmann::json& images) {
  if (images.contains("error")) {
    fmt::print("gpu code  unknown: {}\n", images["error"].get<std::string>());
    return;
  }
  const auto joined = [&](const char* kind) {
    std::string out;
    for (const auto& name : images.value(kind, nlohmann::json::array())) out += (out.empty() ? "" : " ") + name.get<std::string>();
    return out.empty() ? std::string("none") : out;
  };
  fmt::print("gpu code  {} (SASS), {} (PTX)\n", joined("sass"), joined("ptx"));
}

void print_text(const nlohmann::json& env) {
  fmt::print("host      {}\nos        {} (kernel {})\n", env["host"].get<std::string>(),
             env["os"]["name"].get<std::string>(), env["os"]["kernel"].get<std::string>());
  fmt::print("cpu       {} ({} logical cores, {} threads, element loops {})\nisa       ",
             env["cpu"]["model"].get<std::string>(), env["cpu"]["logical_cores"].get<int>(),
             value_or_missing(env["cpu"], "threads"), value_or_missing(env["cpu"], "element_loops"));
  for (const auto& [flag, present] : env["cpu"]["flags"].items()) fmt::print("{}{} ", present.get<bool>() ? "+" : "-", flag);
  fmt::print("\ncompiler  {}\nmpbench   {} ({})\n", env["compiler"].get<std::string>(),
             env["mpbench"]["version"].get<std::string>(), env["mpbench"]["git_revision"].get<std::string>());
  fmt::print("oneDNN    {} (effective ISA {}, {} runtime)\n", value_or_missing(env["onednn"], "version"),
             value_or_missing(env["onednn"], "effective_isa"), value_or_missing(env["onednn"], "cpu_runtime"));
  if (env["onednn"].contains("source"))
    fmt::print("          from {} ({})\n", env["onednn"]["source"].get<std::string>(), value_or_missing(env["onednn"], "library"));
  if (env["onednn"].value("default_isa_limit", nlohmann::json()).is_string())
    fmt::print("          {}\n", env["onednn"]["default_isa_limit"].get<std::string>());
  if (const auto check = env["onednn"].value("amx_self_check", nlohmann::json()); check.is_object())
    fmt::print("          AMX bf16 self-check {}: {}\n", value_or_missing(check, "outcome"), value_or_missing(check, "detail"));
  print_capabilities(fmt::format("cpu gemms (--cpu-gemm {})", value_or_missing(env["cpu"], "gemm_path_choice")),
                     env["cpu"].value("capabilities", nlohmann::json()));
  const auto& mpi = env["mpi"];
  if (mpi["version"].is_string())
    fmt::print("mpi       {} {} (MPI {})\n", mpi["library"].get<std::string>(), mpi["version"].get<std::string>(),
               value_or_missing(mpi, "standard"));
  else fmt::print("mpi       none: {}\n", value_or_missing(mpi, "reason"));
  const auto& nccl = env["nccl"];
  if (nccl.contains("built_against"))
    fmt::print("nccl      {} (built against {})\n", nccl["version"].is_string() ? nccl["version"].get<std::string>() : "not loaded",
               nccl["built_against"].get<std::string>());
  else fmt::print("nccl      none: {}\n", value_or_missing(nccl, "reason"));
  const auto& cuda = env["cuda"];
  if (cuda.empty()) fmt::print("cuda      not built in\n");
  for (const auto& [name, version] : cuda.items()) {
    if (name == "kernel_images") continue;
    fmt::print("{:<9} {}\n", name, version.is_null() ? "not found" : (version.is_string() ? version.get<std::string>() : version.dump()));
  }
  if (cuda.contains("kernel_images")) print_kernel_images(cuda["kernel_images"]);
  if (env["gpus"].empty()) fmt::print("gpu       none: {}\n", env.value("gpu_status", "no GPU"));
  for (const auto& gpu : env["gpus"]) {
    fmt::print("gpu {}     {}\n", gpu.value("index", 0), gpu.value("name", "?"));
    for (const auto& [key, value] : gpu.items())
      if (key != "name" && key != "index" && key != "capabilities") fmt::print("          {:<22} {}\n", key, value.is_string() ? value.get<std::string>() : value.dump());
    print_capabilities(fmt::format("gpu {} gemms", gpu.value("index", 0)), gpu.value("capabilities", nlohmann::json()));
  }
}

}  // namespace

void add_env_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("env", "print the environment that makes a result reproducible (host, CPU, GPUs, library versions)");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print it as JSON, as it is stored in result documents");
  cmd->callback([json, &exit_code] {
    const nlohmann::json env = full_environment(command_line_of_process());
    if (*json) std::cout << env.dump(2) << "\n";
    else print_text(env);
    exit_code = 0;
  });
}

}  // namespace mpbench::cli
