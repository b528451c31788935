// mpbench policy MODE|all [--json]: the cast policy of a precision mode, op category by op
// category, with its loss scaling and the model-state bytes per parameter it implies.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "amp/loss_scaler_math.hpp"
#include "amp/memory.hpp"
#include "amp/policy.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"

namespace mpbench::cli {
namespace {

using Json = nlohmann::ordered_json;
using namespace mpbench::amp;

struct PolicyArgs {
  std::string mode;
  bool json = false;
};

std::string_view format_name(num::Format f) { return num::format_info(f).name; }

Json memory_json(const ParameterBytes& b) {
  return Json{{"optimizer", optimizer_name(OptimizerKind::adamw)},
              {"weights", b.weights},
              {"working_copy", b.working_copy},
              {"master", b.master},
              {"gradients", b.gradients},
              {"optimizer_state", b.optimizer_state},
              {"persistent", b.persistent()},
              {"peak", b.peak()}};
}

Json policy_json(const ModePolicy& p) {
  Json doc{{"mode", p.name},
           {"summary", p.summary},
           {"weight_storage", format_name(p.weight_storage)},
           {"activations", format_name(p.activations)},
           {"low_precision", format_name(p.low_precision)},
           {"master_weights", p.master_weights},
           {"loss_scaling", p.loss_scaling == LossScaling::dynamic ? "dynamic" : "none"}};
  if (p.loss_scaling == LossScaling::dynamic) {
    const ScalerConfig scaler;
    doc["loss_scaler"] = Json{{"init_scale", scaler.init_scale},
                              {"growth_factor", scaler.growth_factor},
                              {"backoff_factor", scaler.backoff_factor},
                              {"growth_interval", scaler.growth_interval}};
  }
  doc["bytes_per_parameter"] = memory_json(parameter_bytes(p.mode));
  doc["ops"] = Json::array();
  for (const OpPolicy& op : p.ops) {
    doc["ops"].push_back(Json{{"op", op_name(op.op)},
                              {"rule", rule_name(op.rule)},
                              {"input", format_name(op.input)},
                              {"compute", format_name(op.compute)},
                              {"output", format_name(op.output)},
                              {"torch_ops", torch_ops(op.op)},
                              {"note", op.note}});
  }
  return doc;
}

void print_policy(const ModePolicy& p) {
  fmt::print("{}: {}\n", p.name, p.summary);
  const std::string_view master = !p.master_weights                     ? "no"
                                  : p.weight_storage == num::Format::fp32 ? "the fp32 weights, cast down each step"
                                                                          : "yes, a separate fp32 copy";
  fmt::print("weights {}; activations {}; fp32 master weights: {}; loss scaling: {}\n", format_name(p.weight_storage),
             format_name(p.activations), master,
             p.loss_scaling == LossScaling::dynamic ? "dynamic (GradScaler: 65536, x2 after 2000 clean steps, x0.5 on inf/NaN)"
                                                    : "none");
  const ParameterBytes b = parameter_bytes(p.mode);
  fmt::print("bytes per parameter with AdamW: weights {} + master {} + gradients {} + moments {} = {}", b.weights,
             b.master, b.gradients, b.optimizer_state, b.persistent());
  if (b.working_copy > 0) fmt::print(" (+{} per-step working copy = {} peak)", b.working_copy, b.peak());
  fmt::print("\n\n{:<14} {:<16} {:<9} {:<8} {:<9} {}\n", "op", "rule", "inputs", "compute", "output", "why");
  for (const OpPolicy& op : p.ops) {
    fmt::print("{:<14} {:<16} {:<9} {:<8} {:<9} {}\n", op_name(op.op), rule_name(op.rule), format_name(op.input),
               format_name(op.compute), format_name(op.output), op.note);
  }
}

int run_policy(const PolicyArgs& args) {
  std::vector<const ModePolicy*> selected;
  if (args.mode == "all") {
    for (const ModePolicy& p : all_policies()) selected.push_back(&p);
  } else {
    const std::optional<Mode> mode = parse_mode(args.mode);
    if (!mode) {
      throw UsageError(fmt::format("unknown precision mode '{}'; use one of {} or all", args.mode, mode_names()));
    }
    selected.push_back(&policy(*mode));
  }
  if (args.json) {
    if (selected.size() == 1) {
      std::cout << policy_json(*selected.front()).dump(2) << "\n";
    } else {
      Json modes = Json::array();
      for (const ModePolicy* p : selected) modes.push_back(policy_json(*p));
      std::cout << Json{{"modes", modes}}.dump(2) << "\n";
    }
    return 0;
  }
  for (std::size_t i = 0; i < selected.size(); ++i) {
    if (i > 0) fmt::print("\n");
    print_policy(*selected[i]);
  }
  return 0;
}

}  // namespace

void add_policy_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<PolicyArgs>();
  auto* cmd = app.add_subcommand(
      "policy", "Show a precision mode's cast policy: per op category the dtypes in, computed and out");
  cmd->add_option("mode", args->mode, "fp32, tf32, amp-fp16, amp-bf16, bf16, fp8-delayed (or fp8), fp8-current, mxfp8, or all")->required();
  cmd->add_flag("--json", args->json, "print JSON instead of a table");
  cmd->callback([args, &exit_code] { exit_code = run_policy(*args); });
}

}  // namespace mpbench::cli
