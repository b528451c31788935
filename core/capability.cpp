#include "core/capability.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace mpbench {

std::string_view gemm_path_name(GemmPath path) {
  switch (path) {
    case GemmPath::native: return "native";
    case GemmPath::converted: return "converted";
    case GemmPath::unsupported: return "unsupported";
  }
  return "unknown";
}

nlohmann::json gemm_path_json(const GemmCapability& row) {
  return {{"precision", gemm_precision_info(row.precision).name},
          {"path", gemm_path_name(row.path)},
          {"reason", row.reason}};
}

CapabilityTable::CapabilityTable(std::vector<GemmCapability> rows) : rows_(std::move(rows)) {
  for (const GemmPrecisionInfo& info : gemm_precisions()) {
    const auto count = std::count_if(rows_.begin(), rows_.end(),
                                     [&](const GemmCapability& row) { return row.precision == info.precision; });
    if (count != 1)
      throw std::logic_error(fmt::format("capability table with {} rows for {}", count, info.name));
  }
}

CapabilityTable CapabilityTable::every_precision(GemmPath path, const std::string& reason) {
  std::vector<GemmCapability> rows;
  for (const GemmPrecisionInfo& info : gemm_precisions()) rows.push_back({info.precision, path, reason});
  return CapabilityTable(std::move(rows));
}

const GemmCapability& CapabilityTable::gemm(GemmPrecision precision) const {
  for (const GemmCapability& row : rows_)
    if (row.precision == precision) return row;
  throw std::logic_error(fmt::format("capability table without a row for {}", gemm_precision_info(precision).name));
}

std::optional<std::string> CapabilityTable::unsupported(GemmPrecision precision) const {
  const GemmCapability& row = gemm(precision);
  if (row.path == GemmPath::unsupported) return row.reason;
  return std::nullopt;
}

nlohmann::json CapabilityTable::to_json() const {
  nlohmann::json gemm = nlohmann::json::object();
  for (const GemmCapability& row : rows_)
    gemm[std::string(gemm_precision_info(row.precision).name)] = {{"path", gemm_path_name(row.path)},
                                                                   {"reason", row.reason}};
  return {{"gemm", gemm}};
}

std::string CapabilityTable::to_text(std::string_view indent) const {
  std::string text;
  for (const GemmCapability& row : rows_)
    text += fmt::format("{}{:<11} {:<12} {}\n", indent, gemm_precision_info(row.precision).name,
                        gemm_path_name(row.path), row.reason);
  return text;
}

}  // namespace mpbench
