#pragma once
// The result document (schema "mpbench.result/1", results/schema/result-1.schema.json): one per
// `mpbench run`, holding the environment, every case and the speedups computed within the run.
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/stats.hpp"

namespace mpbench {

inline constexpr const char* kResultSchema = "mpbench.result/1";

enum class CaseStatus { ok, skipped, error };
std::string_view case_status_name(CaseStatus s);

struct CaseResult {
  std::string suite;      // gemm, bandwidth, cast, ...
  std::string name;       // the case without its precision, e.g. "square_2048"
  std::string backend;    // cpu, cuda
  std::string precision;  // fp32, bf16, ... (or the conversion for casts)
  nlohmann::json params = nlohmann::json::object();  // shape, bytes, config
  CaseStatus status = CaseStatus::ok;
  std::string message;                    // why skipped or failed
  std::optional<Statistics> seconds;      // device time per op
  nlohmann::json rates = nlohmann::json::object();    // tflops, gbps, pct_of_peak, ...
  nlohmann::json details = nlohmann::json::object();  // algorithm, clocks, sampler outcome

  std::string id() const { return suite + "/" + name + "/" + precision; }
  std::string full_id() const { return suite + "/" + name + "/" + backend + "/" + precision; }  // with its backend
  nlohmann::json to_json() const;
  // UsageError naming `where` and the field for a malformed case.
  static CaseResult from_json(const nlohmann::json& j, const std::string& where = "case");
  // The same, taking params, rates and details out of `j` rather than copying them.
  static CaseResult from_json(nlohmann::json&& j, const std::string& where = "case");
};

// Time of the baseline precision over the time of `precision`, same suite, case and backend.
struct Speedup {
  std::string suite, name, backend, baseline, precision;
  double value = 0;
  nlohmann::json to_json() const;
  static Speedup from_json(const nlohmann::json& j, const std::string& where = "speedup");
};

// Each ok case's speedup over the ok case of `baseline` precision with the same suite, name and
// backend: the ratio of their median times.
std::vector<Speedup> speedups_over(const std::vector<CaseResult>& cases, const std::string& baseline);

struct ResultDocument {
  std::string created;  // UTC, ISO 8601
  nlohmann::json env = nlohmann::json::object();
  nlohmann::json run = nlohmann::json::object();  // what was asked for: suites, device, options
  std::vector<CaseResult> cases;
  std::vector<Speedup> speedups;

  // Fills `speedups` from the ok cases that have a baseline on the same suite/name/backend.
  void compute_speedups(const std::string& baseline = "fp32");
  nlohmann::json to_json() const;
  // Throws UsageError for another schema or a malformed document, naming the file.
  static ResultDocument from_json(const nlohmann::json& j);
};

std::string utc_timestamp_now();

// Writes to a temporary file beside `path` and renames it over `path`, so readers never see a
// partial document; temporaries that killed processes left beside it are removed. A `path` that
// is a symbolic link is written through: its target gets the contents, the link stays. Throws
// UsageError naming the path when it cannot be written (check_writable's reasons among them).
void write_file_atomically(const std::filesystem::path& path, const std::string& contents);
// The same with the contents written by `write`, for a file too large to hold as one string.
void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);
// Fails early, before a long run, when `path` cannot be created: an empty or overlong name, a
// missing or unwritable folder, or a target that exists and is not a regular file (a device such
// as /dev/null, a FIFO, a folder: never replaced by a file).
void check_writable(const std::filesystem::path& path);
// The same for a folder files will be written into, created when first needed.
void check_writable_folder(const std::filesystem::path& folder);
// Reads the document at `path`, converting its cases one by one as they are parsed (the JSON of
// a case is dropped once it is a CaseResult), so that a large document costs little more than
// its cases. Throws UsageError naming the file and the field.
ResultDocument load_result(const std::filesystem::path& path);
// The same, giving each case to `keep` as soon as it is read and valid, before it is kept (a
// reader that needs less of each case than all of it, such as compare with a million of them).
ResultDocument load_result(const std::filesystem::path& path, const std::function<void(CaseResult&)>& keep);
// load_result in two steps, for readers that look at the JSON first (compare skips other tools'
// JSON in a folder): the file's one JSON value, then that value as the document `path` holds.
nlohmann::json read_document_json(const std::filesystem::path& path);
ResultDocument result_from_json(const std::filesystem::path& path, const nlohmann::json& j);

}  // namespace mpbench
