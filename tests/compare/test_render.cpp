#include "compare/render.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"
#include "documents.hpp"

namespace mpbench::compare {
namespace {

using namespace testing;

std::vector<ResultDocument> runs_with_bf16(const std::vector<double>& bf16_seconds) {
  std::vector<ResultDocument> runs;
  for (double s : bf16_seconds) runs.push_back(gemm_run(s));
  return runs;
}

// bf16 regressed (speedup 10x -> 8x), fp32 improved (1 ms -> 0.5 ms), over three runs per side.
Report mixed_report() {
  std::vector<ResultDocument> base, current;
  for (double jitter : {1.0, 1.005, 0.995}) {
    base.push_back(gemm_run(1e-4 * jitter, 0.01, 1e-3 / jitter));
    current.push_back(gemm_run(0.625e-4 * jitter, 0.01, 0.5e-3 / jitter));
  }
  return compare(side_of("base", base), side_of("new", current), {});
}

TEST(RenderOptions, FormatNames) {
  EXPECT_EQ(parse_format("text"), Format::text);
  EXPECT_EQ(parse_format("markdown"), Format::markdown);
  EXPECT_EQ(parse_format("json"), Format::json);
  EXPECT_THROW(parse_format("html"), UsageError);
}

TEST(RenderOptions, ThresholdAcceptsPercentOrFraction) {
  EXPECT_DOUBLE_EQ(parse_threshold("5%"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold("0.05"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold("12.5%"), 0.125);
  EXPECT_DOUBLE_EQ(parse_threshold("0"), 0.0);
}

TEST(RenderOptions, ThresholdRejectsAmbiguousOrBrokenValues) {
  for (const char* bad : {"5", "abc", "-1%", "", "%", "5%%", "0.05x"})
    EXPECT_THROW(parse_threshold(bad), UsageError) << bad;
}

TEST(RenderOptions, AlphaIsAProbabilityInItsRange) {
  EXPECT_DOUBLE_EQ(parse_alpha("0.01"), 0.01);
  EXPECT_DOUBLE_EQ(parse_alpha("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(parse_alpha("1e-9"), 1e-9);
  for (const char* bad : {"0", "-0.01", "0.51", "1", "1e-10", "nan", "inf", "", "0.01x", "1%"}) {
    try {
      parse_alpha(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("from 1e-09 to 0.5"), std::string::npos) << e.what();
    }
  }
}

TEST(RenderMarkdown, TellsARegressionFromAnImprovementAtAGlance) {
  const auto r = mixed_report();
  ASSERT_EQ(r.count(Verdict::regressed), 1u);
  ASSERT_EQ(r.count(Verdict::improved), 1u);
  const auto md = render_markdown(r);
  EXPECT_NE(md.find("| 🔴 **regressed** | gemm/square_4096/cuda/bf16 | speedup over fp32 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 🟢 improved | gemm/square_4096/cuda/fp32 | fastest time |"), std::string::npos) << md;
  EXPECT_NE(md.find("| verdict | case | tracked figure | base | new | change | interval | noise | runs |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("between runs | 3/3 |"), std::string::npos) << "each case's noise and run count\n" << md;
}

TEST(RenderMarkdown, EscapesPipesInCaseNames) {
  const auto run = document({timed_case("a|b", "fp32", samples_around(1e-3, 0.01)),
                             timed_case("a|b", "bf16", samples_around(1e-4, 0.01))});
  const auto markdown = render_markdown(compare(side_of("base", {run}), side_of("new", {run}), {}));
  EXPECT_NE(markdown.find("| gemm/a\\|b/cuda/bf16 |"), std::string::npos) << markdown;
}

// Free-form fields a document can carry: an escape sequence that clears the screen, a newline, a
// pipe, a backslash at the end, a right-to-left override, C1's CSI, a bidi isolate.
const std::string kHostileName = "sq\x1b[2J\nuare|\xe2\x80\xae" "evil\\";
const std::string kHostileMessage = "boom\r\nline2 \xc2\x9b" "31m | done";

// A GEMM case named kHostileName on both sides, a failed case with kHostileMessage, a case only in
// the base, and CPU models with a bidi isolate and an OSC title sequence.
Report hostile_report() {
  auto run = [](const std::string& model, bool with_missing) {
    std::vector<CaseResult> cases{timed_case(kHostileName, "fp32", samples_around(1e-3, 0.01)),
                                  timed_case(kHostileName, "bf16", samples_around(1e-4, 0.01)),
                                  failed_case("fails\x1b[0m", "fp32", CaseStatus::error, kHostileMessage)};
    if (with_missing) cases.push_back(timed_case("gone\xe2\x81\xa6x\xe2\x81\xa9", "fp32", samples_around(1e-3, 0.01)));
    auto doc = document(std::move(cases));
    doc.env["cpu"]["model"] = model;
    return doc;
  };
  return compare(side_of("base", {run("Xeon\xe2\x81\xa6rtl\xe2\x81\xa9 \xc2\xb1", true)}),
                 side_of("new", {run("Xeon\x1b]0;title\x07", false)}), {});
}

// No byte of a control that acts on a terminal or on the text's direction is left as it was.
void expect_no_controls(const std::string& out) {
  for (const std::string control : {"\x1b", "\nuare", "\r", "\x07", "\xe2\x80\xae", "\xc2\x9b", "\xe2\x81\xa6"})
    EXPECT_EQ(out.find(control), std::string::npos) << printable(control) << " in\n" << out;
}

TEST(RenderText, ControlCharactersInFreeFormFieldsAreEscaped) {
  const auto text = render_text(hostile_report());
  expect_no_controls(text);
  EXPECT_NE(text.find("gemm/sq\\x1b[2J\\x0auare|\\xe2\\x80\\xaeevil\\/cuda/bf16"), std::string::npos) << text;
  EXPECT_NE(text.find("boom\\x0d\\x0aline2 \\xc2\\x9b31m | done"), std::string::npos) << text;
  EXPECT_NE(text.find("Xeon\\xe2\\x81\\xa6rtl\\xe2\\x81\\xa9 ±"), std::string::npos) << "other Unicode stays\n" << text;
  EXPECT_NE(text.find("Xeon\\x1b]0;title\\x07"), std::string::npos) << text;
  EXPECT_NE(text.find("missing (1): gemm/gone\\xe2\\x81\\xa6x\\xe2\\x81\\xa9/cuda/fp32"), std::string::npos) << text;
}

// The cells of a markdown table row: split at the pipes no backslash escapes.
std::size_t markdown_cells(const std::string& row) {
  std::size_t pipes = 0;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '\\') ++i;
    else if (row[i] == '|') ++pipes;
  }
  return pipes - 1;
}

TEST(RenderMarkdown, FreeFormFieldsStayInTheirCellOnOneLine) {
  const auto md = render_markdown(hostile_report());
  expect_no_controls(md);
  std::size_t rows = 0;
  std::string line, header;
  for (std::istringstream in(md); std::getline(in, line);) {
    if (line.empty() || line[0] != '|') continue;
    if (line.rfind("| verdict |", 0) == 0 || line.rfind("| case |", 0) == 0 || line.rfind("|  | base |", 0) == 0)
      header = line;
    EXPECT_EQ(markdown_cells(line), markdown_cells(header)) << line;
    ++rows;
  }
  EXPECT_GT(rows, 6u) << md;
  EXPECT_NE(md.find("| gemm/sq\\\\x1b[2J uare\\|\\\\xe2\\\\x80\\\\xaeevil\\\\/cuda/bf16 |"), std::string::npos) << md;
  EXPECT_NE(md.find("boom  line2 \\\\xc2\\\\x9b31m \\| done |"), std::string::npos) << "newlines become spaces\n" << md;
}

TEST(RenderText, SaysWhatEachTrackedFigureIsAndWhereTheRunsCameFrom) {
  const auto text = render_text(mixed_report());
  EXPECT_NE(text.find("base: 3 runs on GPU NVIDIA H100 80GB HBM3, CUDA 12.4: base0.json, base1.json, base2.json"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("speedup over fp32"), std::string::npos) << text;
  EXPECT_NE(text.find("fastest time"), std::string::npos) << text;
  EXPECT_NE(text.find("result: REGRESSED (1 regressed, 0 newly failing, 1 improved, 0 noisy, 0 same"), std::string::npos)
      << text;
}

TEST(RenderText, NoisyCasesAreSummarisedWithTheRunsThatWouldSettleThem) {
  const auto r = compare(side_of("base", runs_with_bf16({1e-4, 1.3e-4, 0.8e-4})),
                         side_of("new", runs_with_bf16({1.1e-4, 0.85e-4, 1.35e-4})), {});
  ASSERT_EQ(r.count(Verdict::noisy), 1u);
  const auto text = render_text(r);
  EXPECT_NE(text.find("1 noisy case (inconclusive; never a failure)"), std::string::npos) << text;
  EXPECT_NE(text.find("result: no regression"), std::string::npos) << text;
}

TEST(RenderText, FigureLabels) {
  Comparison c;
  c.reference = "fp32";
  EXPECT_EQ(figure_label(c), "speedup over fp32");
  c.metric = Metric::pct_of_copy;
  c.reference = "memcpy/n=1048576 fp32";
  EXPECT_EQ(figure_label(c), "% of memcpy/n=1048576 fp32");
  c.metric = Metric::seconds;
  EXPECT_EQ(figure_label(c), "fastest time");
}

TEST(RenderJson, CarriesTheIntervalTheRunsAndTheExitStatus) {
  const auto j = report_json(mixed_report());
  EXPECT_EQ(j.at("exit_status"), kExitRegressed);
  EXPECT_EQ(j.at("summary").at("improved"), 1);
  const auto& first = j.at("comparisons").at(0);
  EXPECT_EQ(first.at("verdict"), "regressed");
  EXPECT_EQ(first.at("test"), "between-runs");
  EXPECT_EQ(first.at("runs").at("base"), 3);
  ASSERT_EQ(first.at("interval").size(), 2u);
  EXPECT_LT(first.at("interval").at(0).get<double>(), first.at("change").get<double>());
  EXPECT_GT(first.at("interval").at(1).get<double>(), first.at("change").get<double>());
  EXPECT_EQ(first.at("figure"), "speedup over fp32");
}

// The JSON text is written comparison by comparison: the same text as the whole report dumped, for
// a report with comparisons (one with a string that holds the key's text) and one without.
TEST(RenderJson, TheStreamedTextIsTheWholeReportDumped) {
  Report r = mixed_report();
  r.base_sources.push_back("odd \"comparisons\": [] name.json");
  EXPECT_EQ(render(r, Format::json), report_json(r).dump(2) + "\n");
  EXPECT_EQ(nlohmann::json::parse(render(r, Format::json)), report_json(r));
  r.comparisons.clear();
  EXPECT_EQ(render(r, Format::json), report_json(r).dump(2) + "\n");
}

}  // namespace
}  // namespace mpbench::compare
