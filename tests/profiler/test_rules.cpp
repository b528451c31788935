// explain's rule table: fixed, unique names, every entry filled in, the thresholds the rules
// apply are the table's, and `mpbench explain --list-rules` prints it.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "../cli/run_mpbench.hpp"
#include "core/result.hpp"
#include "profiler/explain.hpp"
#include "profiler/rules.hpp"

namespace mpbench::profiler {
namespace {

using nlohmann::json;

TEST(ExplainRules, NamesAreUniqueAndEveryEntryIsFilledIn) {
  std::set<std::string> names;
  for (const Rule& r : explain_rules()) {
    EXPECT_TRUE(names.insert(std::string(r.name)).second) << r.name;
    EXPECT_FALSE(r.reads.empty()) << r.name;
    EXPECT_FALSE(r.threshold_text.empty()) << r.name;
    EXPECT_FALSE(r.message.empty()) << r.name;
    EXPECT_FALSE(r.fix.empty()) << r.name;
    EXPECT_EQ(&explain_rule(r.name), &r);
  }
  EXPECT_THROW(explain_rule("no_such_rule"), std::logic_error);
  EXPECT_EQ(find_explain_rule("no_such_rule"), nullptr);
}

// A transformer pair whose amp-bf16 breakdown spends `cast_share` of its step in casts.
ResultDocument with_cast_share(double cast_share) {
  auto step = [](const std::string& precision, json categories) {
    return json{{"suite", "transformer"}, {"name", "t"}, {"backend", "cuda"}, {"precision", precision},
                {"params", json::object()}, {"status", "ok"}, {"message", ""},
                {"metrics", {{"seconds", {{"median", 0.1}, {"min", 0.1}, {"max", 0.1}, {"mean", 0.1}, {"stddev", 0.0},
                                          {"samples", 1}}}}},
                {"rates", json::object()}, {"details", {{"breakdown", {{"categories", categories}}}}}};
  };
  return ResultDocument::from_json(
      {{"schema", kResultSchema}, {"created", "2026-12-04T00:00:00Z"}, {"env", json::object()},
       {"run", {{"device", "cuda"}}}, {"speedups", json::array()},
       {"cases", json::array({step("fp32", {{"gemm_cuda_core", 0.08}, {"other", 0.02}}),
                              step("amp-bf16", {{"gemm_tensor_core", 1.0 - cast_share}, {"cast", cast_share}})})}});
}

bool fires(const Explanation& e, const std::string& rule) {
  for (const auto& c : e.cases)
    for (const auto& f : c.findings)
      if (f.rule == rule) return true;
  return false;
}

// The breakdown's cast rule fires at the table's threshold, not at a number of its own.
TEST(ExplainRules, TheCastRuleUsesTheTablesThreshold) {
  const double t = explain_rule("cast_overhead").threshold;
  EXPECT_FALSE(fires(explain(with_cast_share(t * 0.9)), "cast_overhead"));
  EXPECT_TRUE(fires(explain(with_cast_share(t * 1.1)), "cast_overhead"));
}

TEST(ExplainRules, FindingsCarryTheFixOfTheirRule) {
  const json j = explain(with_cast_share(0.5)).to_json();
  bool found = false;
  for (const auto& f : j["cases"][0]["findings"])
    if (f["rule"] == "cast_overhead") {
      found = true;
      EXPECT_EQ(f["fix"], std::string(explain_rule("cast_overhead").fix));
    }
  EXPECT_TRUE(found) << j.dump(2);
}

TEST(ExplainRules, ListRulesPrintsEveryRuleAndNeedsNoDocument) {
  const auto folder = std::filesystem::temp_directory_path();
  const auto r = mpbench::testing::run_mpbench({"explain", "--list-rules"}, folder);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const Rule& rule : explain_rules()) {
    EXPECT_NE(r.out.find(std::string(rule.name) + "\n"), std::string::npos) << rule.name;
    EXPECT_NE(r.out.find(std::string(rule.fix)), std::string::npos) << rule.name;
  }
  const auto none = mpbench::testing::run_mpbench({"explain"}, folder);
  EXPECT_EQ(none.status, 2) << none.out;
  EXPECT_EQ(mpbench::testing::count_lines(none.err), 1) << none.err;
}

}  // namespace
}  // namespace mpbench::profiler
