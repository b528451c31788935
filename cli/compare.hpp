#pragma once
// `mpbench compare`: verdicts between two sets of result documents (a baseline and a new run).
// A case is matched by its identity (suite, name, backend, precision). By default the speedup of
// each precision over the run's baseline precision is compared, because ratios measured within one
// run survive machine drift; `absolute` also compares median times. A change is a regression only
// when it is worse than the threshold AND beyond the noise both runs measured.
#include <compare>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace mpbench::compare {

struct Options {
  double threshold = 0.05;        // smallest relative change that counts
  double alpha = 0.05;            // significance level of the rank test
  bool absolute = false;          // also compare median times, not only speedups
  std::string baseline = "fp32";  // the precision speedups are taken over
};

// "5%" or "0.05" -> 0.05. Throws UsageError for anything else (negative, "5" without a percent sign).
double parse_threshold(std::string_view text);

enum class Format { text, markdown, json };
Format parse_format(std::string_view text);  // throws UsageError naming the formats

// ---- Mann-Whitney U (two-sided) ----

struct RankTest {
  double u = 0;        // U of the first sample: pairs where it is larger, ties count 1/2
  double p_value = 1;  // two-sided
  bool exact = false;  // exact distribution (small samples, no ties) or normal approximation
};

// Needs at least one value on each side.
RankTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);
// The smallest two-sided p-value samples of these sizes can give (complete separation, no ties).
double smallest_p_value(std::size_t n_a, std::size_t n_b);
// Whether samples of these sizes can reach significance at all; below that the spreads decide.
bool rank_test_can_decide(std::size_t n_a, std::size_t n_b, double alpha);

// ---- the two sides ----

struct CaseKey {
  std::string suite, name, backend, precision;
  auto operator<=>(const CaseKey&) const = default;
  std::string label() const;  // suite/name/backend/precision
};
CaseKey key_of(const CaseResult& c);

// One side of the comparison: the cases of all its documents, merged by identity.
struct ResultSet {
  std::vector<std::string> sources;        // documents read
  std::vector<std::string> ignored_files;  // JSON in a folder that is not an mpbench result
  std::vector<nlohmann::json> environments;
  std::map<CaseKey, CaseResult> cases;
  std::map<CaseKey, Speedup> speedups;  // keyed by the sped-up case, over Options::baseline
};

// A document, or a folder of them (*.json, not recursive). Throws UsageError for a missing path,
// malformed JSON, another schema version, an empty folder, or a case found in two documents.
ResultSet load_result_set(const std::filesystem::path& path, const std::string& baseline = "fp32");
// The same from documents already in memory; `sources` names them in messages.
ResultSet make_result_set(const std::vector<std::pair<std::string, ResultDocument>>& documents,
                          const std::string& baseline = "fp32");

// ---- verdicts ----

enum class Verdict { regressed, improved, same };
std::string_view verdict_name(Verdict v);

enum class Metric { speedup, seconds };  // speedup: higher is better; seconds: lower is better
enum class NoiseTest { spread, rank };

struct Comparison {
  CaseKey key;
  Metric metric = Metric::speedup;
  std::string baseline;  // for speedups: over which precision
  double base = 0, current = 0;
  double change = 0;  // current / base - 1
  NoiseTest test = NoiseTest::spread;
  double noise = 0;                 // spread test: relative noise band both runs measured
  std::optional<double> p_value;    // rank test
  Verdict verdict = Verdict::same;
  // The case's params that differ between the runs, e.g. `attention: unfused -> fused`: what
  // changed besides the code and the environment (a default that moved, a counterfactual).
  std::vector<std::string> param_changes;
};

// A case common to both sides whose status is not ok in at least one of them.
struct StatusChange {
  CaseKey key;
  CaseStatus base = CaseStatus::ok, current = CaseStatus::ok;
  std::string message;  // the new run's message, else the baseline's
  bool newly_failing() const { return base == CaseStatus::ok && current == CaseStatus::error; }
  // What the hardware or library cannot do, unchanged: counted, not listed line by line.
  bool skipped_in_both() const { return base == CaseStatus::skipped && current == CaseStatus::skipped; }
};

struct EnvironmentField {
  std::string field, base, current;
  bool changed() const { return base != current; }
};

struct Report {
  std::vector<std::string> base_sources, current_sources, ignored_files;
  Options options;
  std::vector<Comparison> comparisons;
  std::vector<StatusChange> not_ok;
  std::vector<CaseKey> added, missing;
  std::vector<EnvironmentField> environment;

  std::size_t count(Verdict v) const;
  std::size_t newly_failing() const;
  std::size_t skipped_in_both() const;
  // Regressed when a comparison regressed or a case that was ok now fails with an error.
  bool regressed() const { return count(Verdict::regressed) > 0 || newly_failing() > 0; }
  int exit_code() const { return regressed() ? 1 : 0; }
};

// Judges one pair of values (exposed for tests). `base_spread`/`current_spread` are relative
// spreads; `base_samples`/`current_samples` enable the rank test when both are large enough.
Comparison judge(Comparison c, double base_spread, double current_spread,
                 const std::vector<double>& base_samples, const std::vector<double>& current_samples,
                 const Options& options);

// Throws UsageError when the two sides have no case in common (other suites, other machines).
Report compare(const ResultSet& base, const ResultSet& current, const Options& options);

// "key: base -> new" for each top-level param whose value differs (strings unquoted, "-" for absent).
std::vector<std::string> param_changes(const nlohmann::json& base, const nlohmann::json& current);

std::vector<EnvironmentField> environment_fields(const std::vector<nlohmann::json>& base,
                                                 const std::vector<nlohmann::json>& current);

std::string render_text(const Report& report);
std::string render_markdown(const Report& report);
nlohmann::json report_json(const Report& report);
std::string render(const Report& report, Format format);

}  // namespace mpbench::compare
