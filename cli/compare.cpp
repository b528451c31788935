#include "cli/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>

#include "core/error.hpp"

namespace mpbench::compare {

// ---------------------------------------------------------------- options

double parse_threshold(std::string_view text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string_view number = percent ? text.substr(0, text.size() - 1) : text;
  double value = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || error != std::errc() || end != number.data() + number.size() || !std::isfinite(value) ||
      value < 0)
    throw UsageError(fmt::format("--threshold '{}' is not a relative change: write e.g. 5% or 0.05", text));
  if (!percent && value >= 1)
    throw UsageError(fmt::format("--threshold '{}' is ambiguous: write {}% for a percentage or a fraction below 1",
                                 text, text));
  return percent ? value / 100 : value;
}

Format parse_format(std::string_view text) {
  if (text == "text") return Format::text;
  if (text == "markdown") return Format::markdown;
  if (text == "json") return Format::json;
  throw UsageError(fmt::format("--format '{}' is unknown: use text, markdown or json", text));
}

// ---------------------------------------------------------------- Mann-Whitney U

namespace {

constexpr std::size_t kExactLimit = 50;  // total samples; keeps the exact counts below 2^53

// Probability of each U for samples of sizes n_a, n_b without ties. The counts are the
// coefficients of the Gaussian binomial [n_a + n_b choose n_a] in q, built as
// prod_{i=1..n_a} (1 - q^(n_b + i)) / (1 - q^i).
std::vector<double> u_distribution(std::size_t n_a, std::size_t n_b) {
  std::vector<double> counts(n_a * n_b + 1, 0.0);
  counts[0] = 1;
  for (std::size_t i = 1; i <= n_a; ++i) {
    for (std::size_t j = counts.size(); j-- > n_b + i;) counts[j] -= counts[j - n_b - i];
    for (std::size_t j = i; j < counts.size(); ++j) counts[j] += counts[j - i];
  }
  double total = 0;
  for (double c : counts) total += c;
  for (double& c : counts) c /= total;
  return counts;
}

struct Ranked {
  double rank_sum_a = 0;
  double tie_term = 0;  // sum of t^3 - t over groups of t tied values
};

Ranked rank(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<std::pair<double, bool>> all;  // value, from a
  for (double v : a) all.emplace_back(v, true);
  for (double v : b) all.emplace_back(v, false);
  std::sort(all.begin(), all.end());
  Ranked r;
  for (std::size_t first = 0; first < all.size();) {
    std::size_t last = first;
    while (last + 1 < all.size() && all[last + 1].first == all[first].first) ++last;
    const double average_rank = 0.5 * static_cast<double>(first + last) + 1;
    for (std::size_t i = first; i <= last; ++i)
      if (all[i].second) r.rank_sum_a += average_rank;
    const double t = static_cast<double>(last - first + 1);
    r.tie_term += t * t * t - t;
    first = last + 1;
  }
  return r;
}

double normal_approximation_p(double u, double n_a, double n_b, double tie_term) {
  const double n = n_a + n_b;
  const double variance = n_a * n_b / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (variance <= 0) return 1;  // every value tied
  const double z = std::max(0.0, std::abs(u - n_a * n_b / 2) - 0.5) / std::sqrt(variance);
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

}  // namespace

RankTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) throw std::invalid_argument("Mann-Whitney U needs values on both sides");
  const double n_a = static_cast<double>(a.size()), n_b = static_cast<double>(b.size());
  const Ranked r = rank(a, b);
  RankTest test;
  test.u = r.rank_sum_a - n_a * (n_a + 1) / 2;
  test.exact = r.tie_term == 0 && a.size() + b.size() <= kExactLimit;
  if (!test.exact) {
    test.p_value = normal_approximation_p(test.u, n_a, n_b, r.tie_term);
    return test;
  }
  const auto distribution = u_distribution(a.size(), b.size());
  const auto smaller_tail = static_cast<std::size_t>(std::min(test.u, n_a * n_b - test.u));
  double tail = 0;
  for (std::size_t u = 0; u <= smaller_tail; ++u) tail += distribution[u];
  test.p_value = std::min(1.0, 2 * tail);
  return test;
}

double smallest_p_value(std::size_t n_a, std::size_t n_b) {
  const double log_arrangements = std::lgamma(static_cast<double>(n_a + n_b + 1)) -
                                  std::lgamma(static_cast<double>(n_a + 1)) -
                                  std::lgamma(static_cast<double>(n_b + 1));
  return std::min(1.0, 2 * std::exp(-log_arrangements));
}

bool rank_test_can_decide(std::size_t n_a, std::size_t n_b, double alpha) {
  return n_a >= 2 && n_b >= 2 && smallest_p_value(n_a, n_b) < alpha;
}

// ---------------------------------------------------------------- loading

std::string CaseKey::label() const { return fmt::format("{}/{}/{}/{}", suite, name, backend, precision); }

CaseKey key_of(const CaseResult& c) { return {c.suite, c.name, c.backend, c.precision}; }

namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("cannot read '{}': no such file or not readable", path.string()));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("'{}' is not valid JSON: {}", path.string(), e.what()));
  }
}

// The document's speedups over `baseline`; computed from its cases when it stored none over it.
std::vector<Speedup> speedups_over(const ResultDocument& doc, const std::string& baseline) {
  std::vector<Speedup> stored;
  for (const auto& s : doc.speedups)
    if (s.baseline == baseline) stored.push_back(s);
  if (!stored.empty()) return stored;
  ResultDocument copy = doc;
  copy.compute_speedups(baseline);
  return copy.speedups;
}

}  // namespace

ResultSet make_result_set(const std::vector<std::pair<std::string, ResultDocument>>& documents,
                          const std::string& baseline) {
  ResultSet set;
  std::map<CaseKey, std::string> origin;
  for (const auto& [source, doc] : documents) {
    set.sources.push_back(source);
    set.environments.push_back(doc.env);
    for (const auto& c : doc.cases) {
      const auto [it, inserted] = origin.emplace(key_of(c), source);
      if (!inserted)
        throw UsageError(fmt::format("case {} is in both '{}' and '{}': give one run per side "
                                     "(a folder holds one run, e.g. one document per suite)",
                                     key_of(c).label(), it->second, source));
      set.cases.emplace(key_of(c), c);
    }
    for (const auto& s : speedups_over(doc, baseline))
      set.speedups.emplace(CaseKey{s.suite, s.name, s.backend, s.precision}, s);
  }
  return set;
}

ResultSet load_result_set(const std::filesystem::path& path, const std::string& baseline) {
  if (!std::filesystem::exists(path))
    throw UsageError(fmt::format("cannot read '{}': no such file or folder", path.string()));
  if (!std::filesystem::is_directory(path)) return make_result_set({{path.string(), load_result(path)}}, baseline);

  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());

  std::vector<std::pair<std::string, ResultDocument>> documents;
  std::vector<std::string> ignored;
  for (const auto& file : files) {
    const auto j = read_json(file);
    // Google Benchmark's JSON and other tools' files may sit beside the results.
    if (!j.is_object() || !j.contains("schema")) {
      ignored.push_back(file.string());
      continue;
    }
    try {
      documents.emplace_back(file.string(), ResultDocument::from_json(j));
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("'{}': {}", file.string(), e.what()));
    }
  }
  if (documents.empty())
    throw UsageError(fmt::format("folder '{}' holds no mpbench result document (*.json with \"schema\": \"{}\")",
                                 path.string(), kResultSchema));
  ResultSet set = make_result_set(documents, baseline);
  set.ignored_files = std::move(ignored);
  return set;
}

// ---------------------------------------------------------------- verdicts

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::regressed: return "regressed";
    case Verdict::improved: return "improved";
    case Verdict::same: return "same";
  }
  return "same";
}

Comparison judge(Comparison c, double base_spread, double current_spread,
                 const std::vector<double>& base_samples, const std::vector<double>& current_samples,
                 const Options& options) {
  c.change = c.current / c.base - 1;
  bool beyond_noise = false;
  if (rank_test_can_decide(base_samples.size(), current_samples.size(), options.alpha)) {
    c.test = NoiseTest::rank;
    c.p_value = mann_whitney_u(base_samples, current_samples).p_value;
    beyond_noise = *c.p_value < options.alpha;
  } else {
    c.test = NoiseTest::spread;
    c.noise = std::hypot(base_spread, current_spread);
    // In log space a halving and a doubling are equally far; for small changes it is the change.
    beyond_noise = std::abs(std::log1p(c.change)) > c.noise;
  }
  const double worse_by = c.metric == Metric::speedup ? -c.change : c.change;
  if (beyond_noise && worse_by > options.threshold)
    c.verdict = Verdict::regressed;
  else if (beyond_noise && -worse_by > options.threshold)
    c.verdict = Verdict::improved;
  else
    c.verdict = Verdict::same;
  return c;
}

namespace {

double relative_spread(const ResultSet& set, const CaseKey& key) {
  const auto it = set.cases.find(key);
  return it != set.cases.end() && it->second.seconds ? it->second.seconds->relative_spread() : 0.0;
}

// A speedup is a ratio of two medians measured in one run: its spread combines both times'.
double speedup_spread(const ResultSet& set, const CaseKey& key, const std::string& baseline) {
  CaseKey baseline_key = key;
  baseline_key.precision = baseline;
  return std::hypot(relative_spread(set, key), relative_spread(set, baseline_key));
}

std::optional<Comparison> compare_speedup(const ResultSet& base, const ResultSet& current, const CaseKey& key,
                                          const Options& options) {
  const auto b = base.speedups.find(key), n = current.speedups.find(key);
  if (b == base.speedups.end() || n == current.speedups.end()) return std::nullopt;
  if (b->second.value <= 0 || n->second.value <= 0) return std::nullopt;
  Comparison c;
  c.key = key;
  c.baseline = options.baseline;
  c.base = b->second.value;
  c.current = n->second.value;
  return judge(c, speedup_spread(base, key, options.baseline), speedup_spread(current, key, options.baseline), {},
               {}, options);
}

std::optional<Comparison> compare_seconds(const CaseResult& base, const CaseResult& current, const Options& options) {
  if (!base.seconds || !current.seconds || base.seconds->median <= 0 || current.seconds->median <= 0)
    return std::nullopt;
  Comparison c;
  c.key = key_of(base);
  c.metric = Metric::seconds;
  c.base = base.seconds->median;
  c.current = current.seconds->median;
  return judge(c, base.seconds->relative_spread(), current.seconds->relative_spread(), base.seconds->values,
               current.seconds->values, options);
}

std::string suites_of(const ResultSet& set) {
  std::set<std::string> suites;
  for (const auto& [key, c] : set.cases) suites.insert(key.suite);
  return suites.empty() ? "no cases" : fmt::format("suites {}", fmt::join(suites, ", "));
}

std::string sources_of(const ResultSet& set) { return fmt::format("{}", fmt::join(set.sources, ", ")); }

int verdict_order(Verdict v) { return v == Verdict::regressed ? 0 : v == Verdict::improved ? 1 : 2; }

}  // namespace

std::size_t Report::count(Verdict v) const {
  return std::count_if(comparisons.begin(), comparisons.end(), [v](const Comparison& c) { return c.verdict == v; });
}

std::size_t Report::newly_failing() const {
  return std::count_if(not_ok.begin(), not_ok.end(), [](const StatusChange& s) { return s.newly_failing(); });
}

std::size_t Report::skipped_in_both() const {
  return std::count_if(not_ok.begin(), not_ok.end(), [](const StatusChange& s) { return s.skipped_in_both(); });
}

std::vector<std::string> param_changes(const nlohmann::json& base, const nlohmann::json& current) {
  const auto text = [](const nlohmann::json& params, const std::string& key) -> std::string {
    if (!params.is_object() || !params.contains(key)) return "-";
    const auto& v = params[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  std::set<std::string> keys;
  for (const auto* params : {&base, &current})
    if (params->is_object())
      for (const auto& [key, value] : params->items()) keys.insert(key);
  std::vector<std::string> changes;
  for (const auto& key : keys) {
    const std::string was = text(base, key), now = text(current, key);
    if (was != now) changes.push_back(fmt::format("{}: {} -> {}", key, was, now));
  }
  return changes;
}

Report compare(const ResultSet& base, const ResultSet& current, const Options& options) {
  Report report;
  report.options = options;
  report.base_sources = base.sources;
  report.current_sources = current.sources;
  report.ignored_files = base.ignored_files;
  report.ignored_files.insert(report.ignored_files.end(), current.ignored_files.begin(), current.ignored_files.end());

  for (const auto& [key, b] : base.cases) {
    const auto it = current.cases.find(key);
    if (it == current.cases.end()) {
      report.missing.push_back(key);
      continue;
    }
    const CaseResult& n = it->second;
    if (b.status != CaseStatus::ok || n.status != CaseStatus::ok) {
      report.not_ok.push_back({key, b.status, n.status, n.message.empty() ? b.message : n.message});
      continue;
    }
    const std::vector<std::string> changes = param_changes(b.params, n.params);
    if (auto c = compare_speedup(base, current, key, options)) {
      c->param_changes = changes;
      report.comparisons.push_back(*c);
    }
    if (options.absolute)
      if (auto c = compare_seconds(b, n, options)) {
        c->param_changes = changes;
        report.comparisons.push_back(*c);
      }
  }
  for (const auto& [key, n] : current.cases)
    if (!base.cases.contains(key)) report.added.push_back(key);

  if (report.missing.size() == base.cases.size())
    throw UsageError(fmt::format("no case in common: base ({}) has {}, new ({}) has {}; compare runs of the same "
                                 "suites and backend",
                                 sources_of(base), suites_of(base), sources_of(current), suites_of(current)));

  std::stable_sort(report.comparisons.begin(), report.comparisons.end(), [](const auto& x, const auto& y) {
    return verdict_order(x.verdict) < verdict_order(y.verdict);
  });
  report.environment = environment_fields(base.environments, current.environments);
  return report;
}

// ---------------------------------------------------------------- environment

namespace {

std::string json_text(const nlohmann::json& j) {
  if (j.is_null()) return "";
  return j.is_string() ? j.get<std::string>() : j.dump();
}

std::string at_pointer(const nlohmann::json& env, const std::string& pointer) {
  const nlohmann::json::json_pointer p(pointer);
  return env.contains(p) ? json_text(env.at(p)) : "";
}

std::string gpu_names(const nlohmann::json& env) {
  if (!env.contains("gpus") || !env["gpus"].is_array()) return "";
  std::vector<std::string> names;
  for (const auto& gpu : env["gpus"]) names.push_back(gpu.is_object() ? json_text(gpu.value("name", nlohmann::json())) : "");
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, " + "));
}

struct EnvField {
  std::string_view label;
  std::string (*read)(const nlohmann::json& env);
};

// What decides the speed of a kernel: the GPU, the driver and the libraries that pick kernels.
const std::vector<EnvField>& tracked_fields() {
  static const std::vector<EnvField> fields = {
      {"GPU", gpu_names},
      {"NVIDIA driver", [](const nlohmann::json& e) { return at_pointer(e, "/gpus/0/driver_version"); }},
      {"CUDA driver", [](const nlohmann::json& e) { return at_pointer(e, "/cuda/driver"); }},
      {"CUDA runtime", [](const nlohmann::json& e) { return at_pointer(e, "/cuda/runtime"); }},
      {"cuBLAS", [](const nlohmann::json& e) { return at_pointer(e, "/cuda/cublas"); }},
      {"cuBLASLt", [](const nlohmann::json& e) { return at_pointer(e, "/cuda/cublaslt"); }},
      {"cuDNN", [](const nlohmann::json& e) { return at_pointer(e, "/cuda/cudnn"); }},
      {"oneDNN", [](const nlohmann::json& e) { return at_pointer(e, "/onednn/version"); }},
      {"oneDNN ISA", [](const nlohmann::json& e) { return at_pointer(e, "/backend/onednn/effective_isa"); }},
      {"CPU", [](const nlohmann::json& e) { return at_pointer(e, "/cpu/model"); }},
      {"mpbench revision", [](const nlohmann::json& e) { return at_pointer(e, "/mpbench/git_revision"); }},
  };
  return fields;
}

// Distinct values over the documents of one side, in order of appearance.
std::string side_value(const std::vector<nlohmann::json>& environments, const EnvField& field) {
  std::vector<std::string> values;
  for (const auto& env : environments) {
    const auto v = field.read(env);
    if (!v.empty() && std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  return fmt::format("{}", fmt::join(values, ", "));
}

}  // namespace

std::vector<EnvironmentField> environment_fields(const std::vector<nlohmann::json>& base,
                                                 const std::vector<nlohmann::json>& current) {
  std::vector<EnvironmentField> fields;
  for (const auto& field : tracked_fields()) {
    EnvironmentField f{std::string(field.label), side_value(base, field), side_value(current, field)};
    if (!f.base.empty() || !f.current.empty()) fields.push_back(std::move(f));
  }
  return fields;
}

// ---------------------------------------------------------------- rendering

namespace {

std::string format_seconds(double s) {
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.3g} us", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}

std::string format_value(const Comparison& c, double v) {
  return c.metric == Metric::speedup ? fmt::format("{:.3f}x", v) : format_seconds(v);
}

std::string metric_label(const Comparison& c) {
  return c.metric == Metric::speedup ? fmt::format("speedup/{}", c.baseline) : "median time";
}

std::string noise_label(const Comparison& c) {
  if (c.test == NoiseTest::rank) return fmt::format("U test p={:.2g}", *c.p_value);
  return fmt::format("spread ±{:.1f}%", 100 * c.noise);
}

std::string change_label(const Comparison& c) { return fmt::format("{:+.1f}%", 100 * c.change); }

std::string status_label(const StatusChange& s) {
  return fmt::format("{} -> {}", case_status_name(s.base), case_status_name(s.current));
}

std::string what_is_compared(const Options& o) {
  return fmt::format("speedups over {}{}; regression = worse by more than {:g}% and beyond the noise of both runs",
                     o.baseline, o.absolute ? " and median times" : "", 100 * o.threshold);
}

std::string summary_line(const Report& r) {
  return fmt::format("{} regressed, {} newly failing, {} improved, {} same, {} not ok ({} skipped in both), "
                     "{} added, {} missing",
                     r.count(Verdict::regressed), r.newly_failing(), r.count(Verdict::improved),
                     r.count(Verdict::same), r.not_ok.size(), r.skipped_in_both(), r.added.size(),
                     r.missing.size());
}

std::string keys_line(const std::vector<CaseKey>& keys) {
  std::vector<std::string> labels;
  for (const auto& k : keys) labels.push_back(k.label());
  return fmt::format("{}", fmt::join(labels, ", "));
}

using Row = std::vector<std::string>;

std::string aligned_table(const std::vector<Row>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) line += fmt::format("{:<{}}  ", row[i], widths[i]);
    line.erase(line.find_last_not_of(' ') + 1);
    out += "  " + line + "\n";
  }
  return out;
}

Row comparison_row(const Comparison& c) {
  return {std::string(verdict_name(c.verdict)), c.key.label(), metric_label(c), format_value(c, c.base),
          format_value(c, c.current), change_label(c), noise_label(c)};
}

std::string markdown_cell(const std::string& text) {
  std::string escaped;
  for (char ch : text) {
    if (ch == '|') escaped.push_back('\\');
    escaped.push_back(ch);
  }
  return escaped;
}

std::string markdown_row(const Row& cells) {
  std::string out = "|";
  for (const auto& cell : cells) out += fmt::format(" {} |", markdown_cell(cell));
  return out + "\n";
}

std::string markdown_table(const Row& header, const std::vector<Row>& rows) {
  std::string out = markdown_row(header) + "|";
  for (std::size_t i = 0; i < header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& row : rows) out += markdown_row(row);
  return out;
}

// One row per changed param of a compared case (each case once, though compared twice with --absolute).
std::vector<Row> param_change_rows(const Report& r) {
  std::vector<Row> rows;
  std::set<CaseKey> listed;
  for (const auto& c : r.comparisons)
    if (!c.param_changes.empty() && listed.insert(c.key).second)
      for (const auto& change : c.param_changes) rows.push_back({c.key.label(), change});
  return rows;
}

std::string text_environment(const Report& r) {
  std::vector<Row> changed;
  for (const auto& f : r.environment)
    if (f.changed()) changed.push_back({f.field, f.base.empty() ? "-" : f.base, "->", f.current.empty() ? "-" : f.current});
  if (changed.empty()) return "environment: unchanged (GPU, driver, CUDA, libraries, CPU, mpbench revision)\n";
  return "environment changes:\n" + aligned_table(changed);
}

}  // namespace

std::string render_text(const Report& r) {
  std::vector<std::string> blocks;  // separated by blank lines
  blocks.push_back(fmt::format("mpbench compare\n  base: {}\n  new:  {}\n  {}\n", fmt::join(r.base_sources, ", "),
                               fmt::join(r.current_sources, ", "), what_is_compared(r.options)));
  blocks.push_back(text_environment(r));
  if (!r.comparisons.empty()) {
    std::vector<Row> rows{{"verdict", "case", "metric", "base", "new", "change", "noise"}};
    for (const auto& c : r.comparisons) rows.push_back(comparison_row(c));
    blocks.push_back(aligned_table(rows));
  }
  if (const auto changed = param_change_rows(r); !changed.empty())
    blocks.push_back("params changed (same case, other settings):\n" + aligned_table(changed));
  std::string lists;
  std::vector<Row> not_ok_rows;
  for (const auto& s : r.not_ok)
    if (!s.skipped_in_both())
      not_ok_rows.push_back({s.key.label(), status_label(s), s.newly_failing() ? "NEWLY FAILING" : "", s.message});
  if (!not_ok_rows.empty()) lists += "not ok:\n" + aligned_table(not_ok_rows);
  if (r.skipped_in_both() > 0) lists += fmt::format("skipped in both runs: {} cases\n", r.skipped_in_both());
  if (!r.added.empty()) lists += fmt::format("added ({}): {}\n", r.added.size(), keys_line(r.added));
  if (!r.missing.empty()) lists += fmt::format("missing ({}): {}\n", r.missing.size(), keys_line(r.missing));
  if (!r.ignored_files.empty())
    lists += fmt::format("ignored (not mpbench results): {}\n", fmt::join(r.ignored_files, ", "));
  if (!lists.empty()) blocks.push_back(lists);
  blocks.push_back(fmt::format("result: {} ({})\n", r.regressed() ? "REGRESSED" : "no regression", summary_line(r)));
  return fmt::format("{}", fmt::join(blocks, "\n"));
}

std::string render_markdown(const Report& r) {
  std::string out = fmt::format("### mpbench compare: {}\n\n", r.regressed() ? "regression" : "no regression");
  out += fmt::format("{}.\n\nBase: `{}` · new: `{}` · {}.\n\n", summary_line(r), fmt::join(r.base_sources, "`, `"),
                     fmt::join(r.current_sources, "`, `"), what_is_compared(r.options));
  if (!r.comparisons.empty()) {
    std::vector<Row> rows;
    for (const auto& c : r.comparisons) {
      Row row = comparison_row(c);
      if (c.verdict != Verdict::same) row[0] = "**" + row[0] + "**";
      rows.push_back(std::move(row));
    }
    out += markdown_table({"verdict", "case", "metric", "base", "new", "change", "noise"}, rows) + "\n";
  }
  if (const auto changed = param_change_rows(r); !changed.empty())
    out += "#### Params changed\n\n" + markdown_table({"case", "change"}, changed) + "\n";
  std::vector<Row> not_ok_rows;
  for (const auto& s : r.not_ok)
    if (!s.skipped_in_both())
      not_ok_rows.push_back({s.key.label(), status_label(s) + (s.newly_failing() ? " (newly failing)" : ""), s.message});
  if (!not_ok_rows.empty()) out += "#### Not ok\n\n" + markdown_table({"case", "status", "message"}, not_ok_rows) + "\n";
  if (r.skipped_in_both() > 0) out += fmt::format("Skipped in both runs: {} cases.\n\n", r.skipped_in_both());
  if (!r.added.empty()) out += fmt::format("**Added ({}):** {}\n\n", r.added.size(), keys_line(r.added));
  if (!r.missing.empty()) out += fmt::format("**Missing ({}):** {}\n\n", r.missing.size(), keys_line(r.missing));
  if (!r.environment.empty()) {
    std::vector<Row> rows;
    for (const auto& f : r.environment)
      rows.push_back({f.changed() ? "**" + f.field + "** (changed)" : f.field, f.base.empty() ? "-" : f.base,
                      f.current.empty() ? "-" : f.current});
    out += "#### Environment\n\n" + markdown_table({"", "base", "new"}, rows);
  }
  return out;
}

nlohmann::json report_json(const Report& r) {
  auto key_json = [](const CaseKey& k) {
    return nlohmann::json{{"suite", k.suite}, {"name", k.name}, {"backend", k.backend}, {"precision", k.precision}};
  };
  nlohmann::json comparisons = nlohmann::json::array();
  for (const auto& c : r.comparisons) {
    auto j = key_json(c.key);
    j["metric"] = c.metric == Metric::speedup ? "speedup" : "seconds";
    if (c.metric == Metric::speedup) j["baseline"] = c.baseline;
    j.update({{"base", c.base}, {"new", c.current}, {"change", c.change},
              {"test", c.test == NoiseTest::rank ? "mann-whitney-u" : "spread"},
              {"noise", c.test == NoiseTest::spread ? nlohmann::json(c.noise) : nlohmann::json()},
              {"p_value", c.p_value ? nlohmann::json(*c.p_value) : nlohmann::json()},
              {"verdict", verdict_name(c.verdict)}, {"param_changes", c.param_changes}});
    comparisons.push_back(j);
  }
  nlohmann::json not_ok = nlohmann::json::array();
  for (const auto& s : r.not_ok) {
    auto j = key_json(s.key);
    j.update({{"base_status", case_status_name(s.base)}, {"new_status", case_status_name(s.current)},
              {"newly_failing", s.newly_failing()}, {"skipped_in_both", s.skipped_in_both()},
              {"message", s.message}});
    not_ok.push_back(j);
  }
  nlohmann::json added = nlohmann::json::array(), missing = nlohmann::json::array(),
                 environment = nlohmann::json::array();
  for (const auto& k : r.added) added.push_back(key_json(k));
  for (const auto& k : r.missing) missing.push_back(key_json(k));
  for (const auto& f : r.environment)
    environment.push_back({{"field", f.field}, {"base", f.base}, {"new", f.current}, {"changed", f.changed()}});
  return {{"base", r.base_sources},
          {"new", r.current_sources},
          {"ignored_files", r.ignored_files},
          {"options",
           {{"threshold", r.options.threshold}, {"alpha", r.options.alpha}, {"absolute", r.options.absolute},
            {"baseline", r.options.baseline}}},
          {"regressed", r.regressed()},
          {"summary",
           {{"regressed", r.count(Verdict::regressed)}, {"newly_failing", r.newly_failing()},
            {"improved", r.count(Verdict::improved)}, {"same", r.count(Verdict::same)},
            {"not_ok", r.not_ok.size()}, {"skipped_in_both", r.skipped_in_both()}, {"added", r.added.size()},
            {"missing", r.missing.size()}}},
          {"comparisons", comparisons},
          {"not_ok", not_ok},
          {"added", added},
          {"missing", missing},
          {"environment", environment}};
}

std::string render(const Report& report, Format format) {
  switch (format) {
    case Format::text: return render_text(report);
    case Format::markdown: return render_markdown(report);
    case Format::json: return report_json(report).dump(2) + "\n";
  }
  return render_text(report);
}

}  // namespace mpbench::compare
