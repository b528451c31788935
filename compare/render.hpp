#pragma once
// A compare Report as text (the CI log), markdown (a CI comment or job summary) or JSON (tools).
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "compare/report.hpp"

namespace mpbench::compare {

enum class Format { text, markdown, json };
Format parse_format(std::string_view text);  // throws UsageError naming the formats

std::string render_text(const Report& report);
std::string render_markdown(const Report& report);
nlohmann::json report_json(const Report& report);
std::string render(const Report& report, Format format);
// The same text written to `out`; JSON comparison by comparison, never whole in memory.
void write_rendered(std::ostream& out, const Report& report, Format format);

// "speedup over fp32", "% of memcpy/n=1048576 fp32", "fastest time": what a row's figure is.
std::string figure_label(const Comparison& c);
// "3 noisy cases (inconclusive; ...): 9 runs per side would settle them"; empty without noisy ones.
std::string noisy_summary(const Report& report);

// The pieces every compare report is written with (the peer report among them).
using Row = std::vector<std::string>;
// A free-form field from a document with its control characters written as \xNN.
std::string shown(const std::string& text);
// The same on one line (a newline becomes a space), for markdown.
std::string markdown_inline(const std::string& text);
// Rows in columns, each line indented by two spaces, each cell shown().
std::string aligned_table(std::vector<Row> rows);
// A markdown table, each cell on one line with its pipes and backslashes escaped.
std::string markdown_table(const Row& header, const std::vector<Row>& rows);

}  // namespace mpbench::compare
