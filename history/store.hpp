#pragma once
// The result history (`mpbench history`): every run a CI job appends, kept in one SQLite file. Each
// document is stored whole, and each of its cases as a row of the figures `compare` tracks (the
// speedup over fp32, the share of the copy, the fastest time, each with its spread), keyed by the
// machine as `compare` names it, so a case's runs on one machine form a series in run order.
//
// The file: SQLite in WAL mode with a busy timeout, so that CI jobs appending at once all land (each
// document in one immediate transaction); PRAGMA application_id marks it as mpbench's and
// user_version holds the schema version, migrated on open. A foreign, corrupted or newer file, or
// one that cannot be written, is a UsageError naming it; the file is then left as it was.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compare/figures.hpp"
#include "core/result.hpp"

struct sqlite3;

namespace mpbench::history {

inline constexpr int kSchemaVersion = 1;

// One case of one stored run: its figures as compare reads them from that run.
struct StoredCase {
  std::string machine, suite, name, backend, precision, status;
  std::string created, revision, source;  // of its run
  std::int64_t run = 0;                   // the run's row, in the order runs were added
  std::optional<compare::RunFigure> speedup, pct_of_copy, seconds;
};

struct AddOutcome {
  std::string source;
  bool duplicate = false;  // the same document (by content) was stored before: not stored again
  std::size_t cases = 0;
};

class Store {
 public:
  enum class Mode { read, write };
  // Opens (with Mode::write, creates) the history at `path`.
  Store(const std::filesystem::path& path, Mode mode);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Stores each document whole with its cases; a document stored before is recognised by its
  // content hash. Every document is read and checked before any is stored: a malformed one
  // throws UsageError (file and field named) and nothing is stored.
  std::vector<AddOutcome> add(const std::vector<std::filesystem::path>& documents);
  // Every stored case, by machine, suite, name, backend, precision, then run order.
  std::vector<StoredCase> cases() const;
  // The same for the last `runs` runs stored for `machine` only: what check reads, whatever the
  // length of the history.
  std::vector<StoredCase> cases(const std::string& machine, std::size_t runs) const;
  std::size_t runs() const;
  // The last `count` runs stored for `machine` (compare::machine_of), oldest first, but `except`.
  std::vector<compare::Run> last_runs(const std::string& machine, std::size_t count,
                                      std::optional<std::int64_t> except) const;
  // The row of the run stored with this content hash, if any.
  std::optional<std::int64_t> run_with_hash(const std::string& hash) const;

 private:
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

// The content hash a document is recognised by: FNV-1a (64 bits) of its JSON in canonical form
// (nlohmann's dump: keys sorted, no whitespace), so reformatting a file does not make it new.
std::string content_hash(const nlohmann::json& document);
// FNV-1a, 64 bits: the same on every platform and standard library (std::hash is not).
std::uint64_t stable_hash(std::string_view bytes);

// A case's three figures in its run, as compare computes them (compare::run_figure, baseline fp32);
// `run` indexes the case's document, built once per document.
StoredCase figures_of(const compare::CaseIndex& run, const CaseResult& c);

}  // namespace mpbench::history
