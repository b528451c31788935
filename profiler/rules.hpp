#pragma once
// explain's rules as data: one table, one entry per rule, each with its fixed name, what it reads
// from a result document, its threshold, the template its message follows and the fix it names.
// The code of a rule takes its threshold from here, and `mpbench explain --list-rules` prints the
// table, so what the documentation and the list say is what the rules do.
#include <span>
#include <string>
#include <string_view>

namespace mpbench::profiler {

struct Rule {
  std::string_view name;
  std::string_view reads;           // the document's fields it reads
  double threshold;                 // the number it compares with; 0 where it has none
  std::string_view threshold_text;  // that number in words, "-" where there is none
  std::string_view message;         // the template its message follows ({...}: filled from the evidence)
  std::string_view fix;             // what to do; "-" for a rule that gives context only
};

std::span<const Rule> explain_rules();
// The rule of that name; std::logic_error for a name not in the table (a rule's code misspelt it).
const Rule& explain_rule(std::string_view name);
// nullptr where the table has no such rule.
const Rule* find_explain_rule(std::string_view name);

// The table as `--list-rules` prints it: name, reads, threshold, fix.
std::string rules_text();

}  // namespace mpbench::profiler
