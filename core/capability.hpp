#pragma once
// What one device can do in each GEMM precision: the one table that the backend, the transformer
// ops, `list`, `env`, the run's start line and `explain` all read, so that they never disagree.
//   native:      the device's own instructions for the format run the GEMM (Tensor Cores,
//                AVX512-BF16, AMX), through its library (cuBLASLt, oneDNN).
//   converted:   no instructions for the format: the operands are converted to fp32, the fp32 GEMM
//                runs, and the result is rounded to the output format (what frameworks do on such
//                CPUs). The numbers are the format's; the speed is fp32's plus the conversions.
//   unsupported: the precision cannot run here; `reason` says why (ISA, compute capability,
//                library version) and what would run it.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/gemm.hpp"

namespace mpbench {

enum class GemmPath { native, converted, unsupported };
std::string_view gemm_path_name(GemmPath path);  // "native", "converted", "unsupported"

struct GemmCapability {
  GemmPrecision precision = GemmPrecision::fp32;
  GemmPath path = GemmPath::unsupported;
  // native: what runs it ("oneDNN 2.6.3 matmul, AVX512-BF16"); converted: why not natively, and how
  // it runs instead; unsupported: why not, and what would.
  std::string reason;
};

// {"precision": "bf16", "path": "converted", "reason": "..."}: the GEMM precision a case ran and
// how (details.gemm_path).
nlohmann::json gemm_path_json(const GemmCapability& row);

class CapabilityTable {
 public:
  CapabilityTable() = default;
  // One row per GEMM precision of core/gemm.hpp, each exactly once (std::logic_error otherwise).
  explicit CapabilityTable(std::vector<GemmCapability> rows);

  const GemmCapability& gemm(GemmPrecision precision) const;
  GemmPath path(GemmPrecision precision) const { return gemm(precision).path; }
  // The reason when the precision is unsupported, nullopt when it runs (natively or converted).
  std::optional<std::string> unsupported(GemmPrecision precision) const;
  const std::vector<GemmCapability>& rows() const { return rows_; }

  // Every precision on one path for one reason (the reference loops').
  static CapabilityTable every_precision(GemmPath path, const std::string& reason);

  // {"gemm": {"bf16": {"path": "converted", "reason": "..."}, ...}}
  nlohmann::json to_json() const;
  // "  bf16        converted    reason" lines, one per precision, for `env` and `list`.
  std::string to_text(std::string_view indent = "  ") const;

 private:
  std::vector<GemmCapability> rows_;
};

}  // namespace mpbench
