#include "core/result.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "core/error.hpp"

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

CaseResult CaseResult::from_json(const nlohmann::json& j) {
  CaseResult c;
  c.suite = j.at("suite").get<std::string>();
  c.name = j.at("name").get<std::string>();
  c.backend = j.at("backend").get<std::string>();
  c.precision = j.at("precision").get<std::string>();
  c.params = j.value("params", nlohmann::json::object());
  c.status = parse_status(j.at("status").get<std::string>());
  c.message = j.value("message", "");
  if (j.contains("metrics") && j["metrics"].contains("seconds"))
    c.seconds = Statistics::from_json(j["metrics"]["seconds"]);
  c.rates = j.value("rates", nlohmann::json::object());
  c.details = j.value("details", nlohmann::json::object());
  return c;
}

nlohmann::json Speedup::to_json() const {
  return {{"suite", suite},         {"name", name},           {"backend", backend},
          {"baseline", baseline},   {"precision", precision}, {"speedup", value}};
}

Speedup Speedup::from_json(const nlohmann::json& j) {
  return {j.at("suite").get<std::string>(),    j.at("name").get<std::string>(),
          j.at("backend").get<std::string>(),  j.at("baseline").get<std::string>(),
          j.at("precision").get<std::string>(), j.at("speedup").get<double>()};
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

ResultDocument ResultDocument::from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("schema"))
    throw UsageError("not an mpbench result document: it has no \"schema\" field");
  const auto schema = j.at("schema").get<std::string>();
  if (schema != kResultSchema)
    throw UsageError(fmt::format("result document has schema '{}', this mpbench reads '{}': "
                                 "re-run the benchmark with this version",
                                 schema, kResultSchema));
  try {
    ResultDocument d;
    d.created = j.at("created").get<std::string>();
    d.env = j.at("env");
    d.run = j.at("run");
    for (const auto& c : j.at("cases")) d.cases.push_back(CaseResult::from_json(c));
    for (const auto& s : j.at("speedups")) d.speedups.push_back(Speedup::from_json(s));
    return d;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("malformed result document: {}", e.what()));
  }
}

std::string utc_timestamp_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

void write_file_atomically(const std::filesystem::path& path, const std::string& contents) {
  const auto temp = path.string() + fmt::format(".tmp{}", ::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw UsageError(fmt::format("cannot write '{}': check that its folder exists and is writable", path.string()));
    out << contents;
    out.flush();
    if (!out) {
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

void check_writable(const std::filesystem::path& path) {
  const auto folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(folder))
    throw UsageError(fmt::format("cannot write '{}': folder '{}' does not exist", path.string(), folder.string()));
  if (std::filesystem::is_directory(path))
    throw UsageError(fmt::format("cannot write '{}': it is a folder, give a file name", path.string()));
  if (::access(folder.c_str(), W_OK) != 0 || (std::filesystem::exists(path) && ::access(path.c_str(), W_OK) != 0))
    throw UsageError(fmt::format("cannot write '{}': permission denied", path.string()));
}

ResultDocument load_result(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("cannot read '{}': no such file or not readable", path.string()));
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("'{}' is not valid JSON: {}", path.string(), e.what()));
  }
  try {
    return ResultDocument::from_json(j);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("'{}': {}", path.string(), e.what()));
  }
}

}  // namespace mpbench
