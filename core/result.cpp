#include "core/result.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/json_fields.hpp"

namespace mpbench {

std::string_view case_status_name(CaseStatus s) {
  switch (s) {
    case CaseStatus::ok: return "ok";
    case CaseStatus::skipped: return "skipped";
    case CaseStatus::error: return "error";
  }
  return "error";
}

namespace {
CaseStatus parse_status(const std::string& s) {
  if (s == "ok") return CaseStatus::ok;
  if (s == "skipped") return CaseStatus::skipped;
  if (s == "error") return CaseStatus::error;
  throw UsageError(fmt::format("case status '{}' is not ok, skipped or error", s));
}
}  // namespace

nlohmann::json CaseResult::to_json() const {
  nlohmann::json j = {{"suite", suite},   {"name", name},       {"backend", backend},
                      {"precision", precision}, {"params", params}, {"status", case_status_name(status)},
                      {"message", message}, {"rates", rates},   {"details", details}};
  j["metrics"] = nlohmann::json::object();
  if (seconds) j["metrics"]["seconds"] = seconds->to_json();
  return j;
}

namespace {

// A case's identity field: printable text, so that a name cannot move the terminal's cursor or
// break a table row when it is shown.
std::string identity(const JsonObject& fields, const char* key) {
  std::string value = fields.text(key);
  for (const char c : value)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw UsageError(fmt::format("{}: contains a control character (code {})", fields.path_of(key), int(c)));
  return value;
}

// The object at `key` (UsageError naming it when it is no object), {} when absent; moved out of
// `owned` where the caller gave its JSON up.
nlohmann::json object_field(const JsonObject& fields, nlohmann::json* owned, const char* key) {
  if (!fields.has_object(key)) return nlohmann::json::object();
  return owned ? std::move((*owned)[key]) : fields.json()[key];
}

CaseResult case_from(const nlohmann::json& j, const std::string& where, nlohmann::json* owned) {
  const JsonObject fields(j, where);
  CaseResult c;
  c.suite = identity(fields, "suite");
  c.name = identity(fields, "name");
  c.backend = identity(fields, "backend");
  c.precision = identity(fields, "precision");
  c.params = object_field(fields, owned, "params");
  try {
    c.status = parse_status(fields.text("status"));
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", fields.path_of("status"), e.what()));
  }
  c.message = fields.text_or("message", "");
  static const nlohmann::json kNoMetrics = nlohmann::json::object();
  const nlohmann::json& metrics = fields.has_object("metrics") ? j["metrics"] : kNoMetrics;
  if (metrics.contains("seconds"))
    c.seconds = Statistics::from_json(metrics["seconds"], fields.path_of("metrics") + ".seconds");
  if (c.status == CaseStatus::ok && (!c.seconds || !(c.seconds->median > 0)))
    throw UsageError(fmt::format("{}: an ok case needs a positive median time", fields.path_of("metrics")));
  c.rates = object_field(fields, owned, "rates");
  // Rates are amounts per second, shares and byte counts: never negative.
  for (const auto& [rate, value] : c.rates.items()) {
    if (!value.is_null() && !value.is_number())
      throw UsageError(fmt::format("{}.{}: must be a number or null, is {}", fields.path_of("rates"), rate,
                                   value.type_name()));
    if (value.is_number() && !(value.get<double>() >= 0))
      throw UsageError(fmt::format("{}.{}: must be 0 or more, or null, is {}", fields.path_of("rates"),
                                   rate, value.get<double>()));
  }
  c.details = object_field(fields, owned, "details");
  return c;
}

}  // namespace

CaseResult CaseResult::from_json(const nlohmann::json& j, const std::string& where) { return case_from(j, where, nullptr); }

CaseResult CaseResult::from_json(nlohmann::json&& j, const std::string& where) { return case_from(j, where, &j); }

nlohmann::json Speedup::to_json() const {
  return {{"suite", suite},         {"name", name},           {"backend", backend},
          {"baseline", baseline},   {"precision", precision}, {"speedup", value}};
}

Speedup Speedup::from_json(const nlohmann::json& j, const std::string& where) {
  const JsonObject fields(j, where);
  Speedup s{identity(fields, "suite"),    identity(fields, "name"),      identity(fields, "backend"),
            identity(fields, "baseline"), identity(fields, "precision"), fields.number("speedup")};
  if (!(s.value > 0)) throw UsageError(fmt::format("{}: must be positive", fields.path_of("speedup")));
  return s;
}

std::vector<Speedup> speedups_over(const std::vector<CaseResult>& cases, const std::string& baseline) {
  std::map<std::tuple<std::string, std::string, std::string>, double> baseline_time;
  for (const auto& c : cases)
    if (c.status == CaseStatus::ok && c.seconds && c.precision == baseline)
      baseline_time[{c.suite, c.name, c.backend}] = c.seconds->median;
  std::vector<Speedup> speedups;
  for (const auto& c : cases) {
    if (c.status != CaseStatus::ok || !c.seconds || c.precision == baseline) continue;
    auto it = baseline_time.find({c.suite, c.name, c.backend});
    if (it == baseline_time.end() || c.seconds->median <= 0) continue;
    speedups.push_back({c.suite, c.name, c.backend, baseline, c.precision, it->second / c.seconds->median});
  }
  return speedups;
}

void ResultDocument::compute_speedups(const std::string& baseline) { speedups = speedups_over(cases, baseline); }

nlohmann::json ResultDocument::to_json() const {
  nlohmann::json j = {{"schema", kResultSchema}, {"created", created}, {"env", env}, {"run", run}};
  j["cases"] = nlohmann::json::array();
  for (const auto& c : cases) j["cases"].push_back(c.to_json());
  j["speedups"] = nlohmann::json::array();
  for (const auto& s : speedups) j["speedups"].push_back(s.to_json());
  return j;
}

namespace {

// A document's fields checked in order (schema first: a document of another version is told so,
// whatever else is wrong), its cases from `cases_of` (given the checked "cases" array), then each
// case checked to appear once.
ResultDocument document_from(const nlohmann::json& j,
                             const std::function<std::vector<CaseResult>(const nlohmann::json&)>& cases_of) {
  const JsonObject fields(j, "the document");
  if (!fields.has("schema")) throw UsageError("not an mpbench result document: it has no \"schema\" field");
  const std::string schema = fields.text("schema");
  if (schema != kResultSchema)
    throw UsageError(fmt::format("result document has schema '{}', this mpbench reads '{}': "
                                 "re-run the benchmark with this version",
                                 schema, kResultSchema));
  ResultDocument d;
  d.created = fields.text("created");
  d.env = fields.object("env").json();
  d.run = fields.object("run").json();
  d.cases = cases_of(fields.array("cases"));
  std::set<std::tuple<std::string, std::string, std::string, std::string>> seen;
  for (std::size_t i = 0; i < d.cases.size(); ++i) {
    const CaseResult& c = d.cases[i];
    if (!seen.insert({c.suite, c.name, c.backend, c.precision}).second)
      throw UsageError(fmt::format("cases[{}]: case {} appears twice", i, c.id()));
  }
  const nlohmann::json& speedups = fields.array("speedups");
  for (std::size_t i = 0; i < speedups.size(); ++i)
    d.speedups.push_back(Speedup::from_json(speedups[i], fmt::format("speedups[{}]", i)));
  return d;
}

}  // namespace

ResultDocument ResultDocument::from_json(const nlohmann::json& j) {
  return document_from(j, [](const nlohmann::json& cases) {
    std::vector<CaseResult> out;
    for (std::size_t i = 0; i < cases.size(); ++i) out.push_back(CaseResult::from_json(cases[i], fmt::format("cases[{}]", i)));
    return out;
  });
}

std::string utc_timestamp_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

namespace {

// What an existing `path` is when it is not a regular file ("a device"), or nothing.
std::optional<std::string> not_a_regular_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  switch (status.type()) {
    case std::filesystem::file_type::not_found:
    case std::filesystem::file_type::regular: return std::nullopt;
    case std::filesystem::file_type::directory: return "a folder";
    case std::filesystem::file_type::fifo: return "a FIFO";
    case std::filesystem::file_type::block:
    case std::filesystem::file_type::character: return "a device";
    default: return "not a regular file";
  }
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, const std::string& contents) {
  write_file_atomically(path, [&contents](std::ostream& out) { out << contents; });
}

void write_file_atomically(const std::filesystem::path& link_or_path, const std::function<void(std::ostream&)>& write) {
  check_writable(link_or_path);
  // The rename below would replace a link by a file and leave its target as it was.
  const std::filesystem::path path = followed_links(link_or_path);
  remove_stale_temporaries(path);
  const auto temp = path.string() + fmt::format(".tmp{}", ::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw UsageError(fmt::format("cannot write '{}': check that its folder exists and is writable", path.string()));
    try {
      write(out);
    } catch (...) {
      out.close();
      std::remove(temp.c_str());
      throw;
    }
    out.flush();
    if (!out) {
      out.close();
      std::remove(temp.c_str());
      throw UsageError(fmt::format("writing '{}' failed (disk full?)", path.string()));
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::remove(temp.c_str());
    throw UsageError(fmt::format("cannot write '{}': {}", path.string(), ec.message()));
  }
}

void check_writable(const std::filesystem::path& link_or_path) {
  if (link_or_path.empty()) throw UsageError("cannot write a file with an empty name: give a file name");
  const std::filesystem::path path = followed_links(link_or_path);  // what write_file_atomically writes
  if (path.filename().string().size() > NAME_MAX || path.string().size() >= PATH_MAX)
    throw UsageError(fmt::format("cannot write '{}': the name is longer than the file system allows",
                                 path.string().substr(0, 80) + "..."));
  const auto folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(folder))
    throw UsageError(fmt::format("cannot write '{}': folder '{}' does not exist", path.string(), folder.string()));
  if (const auto kind = not_a_regular_file(path))
    throw UsageError(fmt::format("cannot write '{}': it is {}, give a regular file's name", path.string(), *kind));
  if (::access(folder.c_str(), W_OK) != 0 || (std::filesystem::exists(path) && ::access(path.c_str(), W_OK) != 0))
    throw UsageError(fmt::format("cannot write '{}': permission denied", path.string()));
}

void check_writable_folder(const std::filesystem::path& folder) {
  if (folder.empty()) throw UsageError("cannot write into a folder with an empty name: give a folder name");
  std::error_code ec;
  if (std::filesystem::is_directory(folder, ec)) {
    if (::access(folder.c_str(), W_OK) != 0)
      throw UsageError(fmt::format("cannot write into '{}': permission denied", folder.string()));
    return;
  }
  if (const auto kind = not_a_regular_file(folder); std::filesystem::exists(folder, ec))
    throw UsageError(fmt::format("cannot write into '{}': it is {}, not a folder", folder.string(),
                                 kind.value_or("a file")));
  // Created when first needed: the nearest existing folder above it must take it.
  std::filesystem::path above = folder.parent_path();
  while (!above.empty() && !std::filesystem::exists(above, ec)) above = above.parent_path();
  if (above.empty()) above = ".";
  if (!std::filesystem::is_directory(above, ec))
    throw UsageError(fmt::format("cannot create '{}': '{}' is a file, not a folder", folder.string(), above.string()));
  if (::access(above.c_str(), W_OK) != 0)
    throw UsageError(fmt::format("cannot create '{}': '{}' is not writable", folder.string(), above.string()));
}

// A document of 100,000 cases with their samples is a few hundred MB.
constexpr std::uint64_t kMaxResultBytes = std::uint64_t{1} << 30;

nlohmann::json read_document_json(const std::filesystem::path& path) {
  return parse_json_file_text(read_regular_file(path, kMaxResultBytes, "result document"), path);
}

namespace {

// The cases of a document's top-level "cases" array, converted as the parser completes each one
// and then dropped from the JSON it builds: a document of a million cases never exists whole as
// JSON (about 7 times its text), only as its cases. A case's error is kept, the first one, to be
// said after the document's own fields, as from_json orders them.
class StreamedCases {
 public:
  explicit StreamedCases(const std::function<void(CaseResult&)>& keep) : keep_(keep) {}
  bool on(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (depth == 1 && event == Event::key) in_cases_ = parsed == "cases";
    if (depth == 1 && in_cases_ && (event == Event::array_start || event == Event::array_end))
      in_array_ = event == Event::array_start;
    const bool element_done = event == Event::object_end || event == Event::array_end || event == Event::value;
    if (!(in_cases_ && in_array_ && depth == 2 && element_done)) return true;
    if (!error_) {
      try {
        CaseResult c = CaseResult::from_json(std::move(parsed), fmt::format("cases[{}]", index_));
        if (keep_) keep_(c);
        cases_.push_back(std::move(c));
      } catch (const UsageError& e) {
        error_ = e.what();
      }
    }
    ++index_;
    return false;
  }
  std::vector<CaseResult> take() {
    if (error_) throw UsageError(*error_);
    return std::move(cases_);
  }

 private:
  const std::function<void(CaseResult&)>& keep_;
  bool in_cases_ = false, in_array_ = false;
  std::size_t index_ = 0;
  std::vector<CaseResult> cases_;
  std::optional<std::string> error_;
};

}  // namespace

ResultDocument load_result(const std::filesystem::path& path) { return load_result(path, {}); }

ResultDocument load_result(const std::filesystem::path& path, const std::function<void(CaseResult&)>& keep) {
  StreamedCases streamed(keep);
  const nlohmann::json rest =
      parse_json_file(path, kMaxResultBytes, "result document",
                      [&streamed](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
                        return streamed.on(depth, event, parsed);
                      });
  try {
    return document_from(rest, [&streamed](const nlohmann::json&) { return streamed.take(); });
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("'{}': {}", path.string(), e.what()));
  }
}

ResultDocument result_from_json(const std::filesystem::path& path, const nlohmann::json& j) {
  try {
    return ResultDocument::from_json(j);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("'{}': {}", path.string(), e.what()));
  }
}

}  // namespace mpbench
