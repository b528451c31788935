#pragma once
// explain's rules for the fp8 training modes (issue 31 item 3), read from details.fp8: how much
// of the step the quantization takes (amax, scales, the casts to fp8 and back), and how many
// values the scales left outside the format's range, clamped to its largest finite value; and for
// the gemm suite's fp8-e4m3 cases (details.quantize), whether the GEMM pays for its casts.
#include <vector>

#include "core/result.hpp"
#include "profiler/explain.hpp"

namespace mpbench::profiler {

// fp8_quantization_share and fp8_saturation for a case with details.fp8; nothing for others.
void fp8_rules(const CaseResult& c, std::vector<Finding>& out);

// fp8_gemm_below_crossover for an fp8-e4m3 gemm case of `doc` whose end-to-end time (the casts
// from bf16, then the GEMM) is above the same shape's bf16 time in `doc`; nothing for others.
void fp8_gemm_rules(const ResultDocument& doc, const CaseResult& c, std::vector<Finding>& out);

// fp8_loss_drift for a transformer case with details.fp8 and a bf16 twin in `doc` (amp-bf16, else
// bf16: same name and backend, so the same model, data and seed): the final losses' difference
// against the noise of two bf16 runs, |final loss of the twin - that of the same case in
// `bf16_noise`| (explain --noise: the same run with another --seed), or, without that document or
// when the two bf16 runs agree exactly, the rule's threshold relative to the twin's loss.
void fp8_loss_drift_rule(const ResultDocument& doc, const CaseResult& c, const ResultDocument* bf16_noise,
                         std::vector<Finding>& out);

}  // namespace mpbench::profiler
