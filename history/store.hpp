#pragma once
// The result history (`mpbench history`): every run a CI job appends, kept in one SQLite file or on
// a PostgreSQL server shared by a fleet of runners. Each document is stored whole, and each of its
// cases as a row of the figures `compare` tracks (the speedup over fp32, the share of the copy, the
// fastest time, each with its spread), keyed by the machine as `compare` names it, so a case's runs
// on one machine form a series in run order.
//
// Both stores run the same queries (this file's Store); they differ only in the connection and its
// statements (history/connection.hpp): the SQLite file in WAL mode with a busy timeout, each
// document in one immediate transaction; PostgreSQL through libpq, each document in one
// transaction, a run's content hash unique. A foreign, corrupted or newer history, or one that
// cannot be written, is a UsageError naming it (a URL with its password hidden), left as it was.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compare/figures.hpp"
#include "core/result.hpp"
#include "history/connection.hpp"

namespace mpbench::history {

// One case of one stored run: its figures as compare reads them from that run.
struct StoredCase {
  std::string machine, suite, name, backend, precision, status;
  std::string created, revision, source;  // of its run
  std::int64_t run = 0;                   // the run's row, in the order runs were added
  std::optional<compare::RunFigure> speedup, pct_of_copy, seconds;
};

// One stored run's document as it was added.
struct StoredDocument {
  std::int64_t run = 0;
  std::string machine, source, document;  // the document as JSON text
};

struct AddOutcome {
  std::string source;
  bool duplicate = false;  // the same document (by content) was stored before: not stored again
  std::size_t cases = 0;
};

class Store {
 public:
  using Mode = OpenMode;
  // Opens (with Mode::write, creates) the history `db`: a postgresql:// or postgres:// URL names a
  // PostgreSQL server (a UsageError where this mpbench was built without libpq), anything else a file.
  Store(const std::string& db, Mode mode);
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
  // The history as messages name it: the file, or the URL with its password hidden.
  const std::string& name() const { return db_->name(); }
  // The last `count` runs stored for `machine` (compare::machine_of), oldest first, but `except`.
  std::vector<compare::Run> last_runs(const std::string& machine, std::size_t count,
                                      std::optional<std::int64_t> except) const;
  // The documents of the last `count` runs stored for each machine, by machine, oldest first: what
  // the hardware-selection plots read (`history export --latest`).
  std::vector<StoredDocument> latest_documents(std::size_t count) const;
  // The row of the run stored with this content hash, if any.
  std::optional<std::int64_t> run_with_hash(const std::string& hash) const;

 private:
  std::unique_ptr<Connection> db_;
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
