#include "history/store.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstdint>
#include <system_error>

#include "compare/sides.hpp"
#include "core/error.hpp"

namespace mpbench::history {

namespace {

// 'mpb1': marks the file as mpbench's history, so a foreign SQLite file is refused, not altered.
constexpr std::int32_t kApplicationId = 0x6d706231;
constexpr int kBusyTimeoutMs = 60000;  // concurrent CI jobs wait for each other's transaction

// The schema of version 1: a document per run, a row per case with its figures.
constexpr const char* kSchema = R"sql(
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE,
  source TEXT NOT NULL,
  created TEXT NOT NULL,
  machine TEXT NOT NULL,
  revision TEXT NOT NULL,
  added TEXT NOT NULL,
  document TEXT NOT NULL);
CREATE TABLE cases(
  run INTEGER NOT NULL REFERENCES runs(id),
  suite TEXT NOT NULL, name TEXT NOT NULL, backend TEXT NOT NULL, precision TEXT NOT NULL,
  status TEXT NOT NULL,
  speedup REAL, speedup_spread REAL,
  pct_of_copy REAL, pct_of_copy_spread REAL, copy TEXT,
  seconds REAL, seconds_spread REAL,
  converged INTEGER NOT NULL,
  PRIMARY KEY(run, suite, name, backend, precision));
CREATE INDEX cases_by_series ON cases(suite, name, backend, precision, run);
)sql";

[[noreturn]] void fail(const std::filesystem::path& path, sqlite3* db, const std::string& doing) {
  throw UsageError(fmt::format("history {}: {}: {}", path.string(), doing, db ? sqlite3_errmsg(db) : "out of memory"));
}

void check(int rc, const std::filesystem::path& path, sqlite3* db, const std::string& doing) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) fail(path, db, doing);
}

// A prepared statement, finalized when it goes.
class Statement {
 public:
  Statement(sqlite3* db, const std::filesystem::path& path, const char* sql) : db_(db), path_(path) {
    check(sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr), path, db, "preparing a query");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& text) {
    check(sqlite3_bind_text(stmt_, i, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT), path_, db_,
          "binding a value");
    return *this;
  }
  Statement& bind(int i, std::int64_t v) {
    check(sqlite3_bind_int64(stmt_, i, v), path_, db_, "binding a value");
    return *this;
  }
  Statement& bind(int i, const std::optional<double>& v) {
    check(v ? sqlite3_bind_double(stmt_, i, *v) : sqlite3_bind_null(stmt_, i), path_, db_, "binding a value");
    return *this;
  }
  // True while there is a row.
  bool step(const std::string& doing) {
    const int rc = sqlite3_step(stmt_);
    check(rc, path_, db_, doing);
    return rc == SQLITE_ROW;
  }
  // Ready for the next row's values.
  void reset() {
    check(sqlite3_reset(stmt_), path_, db_, "reusing a query");
    check(sqlite3_clear_bindings(stmt_), path_, db_, "reusing a query");
  }
  std::string text(int column) const {
    const auto* p = sqlite3_column_text(stmt_, column);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  std::int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }
  std::optional<double> real(int column) const {
    if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(stmt_, column);
  }

 private:
  sqlite3* db_;
  const std::filesystem::path& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

void execute(sqlite3* db, const std::filesystem::path& path, const char* sql, const std::string& doing) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) == SQLITE_OK) return;
  const std::string what = message ? message : sqlite3_errmsg(db);
  sqlite3_free(message);
  throw UsageError(fmt::format("history {}: {}: {}", path.string(), doing, what));
}

std::int64_t pragma(sqlite3* db, const std::filesystem::path& path, const char* sql) {
  Statement s(db, path, sql);
  if (!s.step("reading its header")) fail(path, db, "reading its header");
  return s.integer(0);
}

std::int64_t table_count(sqlite3* db, const std::filesystem::path& path) {
  return pragma(db, path, "SELECT count(*) FROM sqlite_schema");
}

// A new file gets the schema; mpbench's of this version is used as it is; anything else is refused.
void check_schema(sqlite3* db, const std::filesystem::path& path, Store::Mode mode) {
  const std::int64_t id = pragma(db, path, "PRAGMA application_id");
  const std::int64_t version = pragma(db, path, "PRAGMA user_version");
  if (id == 0 && table_count(db, path) == 0) {
    if (mode == Store::Mode::read) throw UsageError(fmt::format("history {}: empty: no run was added", path.string()));
    execute(db, path, "BEGIN IMMEDIATE", "creating its tables");
    execute(db, path, kSchema, "creating its tables");
    execute(db, path, fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {}", kApplicationId, kSchemaVersion).c_str(),
            "marking it as mpbench's");
    execute(db, path, "COMMIT", "creating its tables");
    return;
  }
  if (id != kApplicationId)
    throw UsageError(fmt::format("history {}: an SQLite file that is not an mpbench history (application_id {:#x}); "
                                 "give a new file name or an mpbench history",
                                 path.string(), id));
  if (version > kSchemaVersion)
    throw UsageError(fmt::format("history {}: schema version {} was written by a newer mpbench; this one reads up "
                                 "to version {}",
                                 path.string(), version, kSchemaVersion));
  // Versions below kSchemaVersion would be migrated here, in one transaction; version 1 is the first.
}

std::string revision_of(const ResultDocument& doc) {
  const nlohmann::json::json_pointer p("/mpbench/git_revision");
  return doc.env.contains(p) && doc.env.at(p).is_string() ? doc.env.at(p).get<std::string>() : "";
}

struct Checked {
  std::filesystem::path path;
  nlohmann::json json;
  ResultDocument document;
};

void insert(sqlite3* db, const std::filesystem::path& db_path, const Checked& d, AddOutcome& outcome) {
  Statement run(db, db_path,
                "INSERT INTO runs(hash, source, created, machine, revision, added, document) VALUES(?,?,?,?,?,?,?)");
  const std::string machine = compare::machine_of(d.document);
  run.bind(1, content_hash(d.json)).bind(2, d.path.string()).bind(3, d.document.created).bind(4, machine);
  run.bind(5, revision_of(d.document)).bind(6, utc_timestamp_now()).bind(7, d.json.dump());
  run.step("storing a run");
  const std::int64_t id = sqlite3_last_insert_rowid(db);
  Statement row(db, db_path,
                "INSERT OR IGNORE INTO cases(run, suite, name, backend, precision, status, speedup, speedup_spread, "
                "pct_of_copy, pct_of_copy_spread, copy, seconds, seconds_spread, converged) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  const compare::CaseIndex index(d.document);
  for (const CaseResult& c : d.document.cases) {
    const StoredCase s = figures_of(index, c);
    const auto value = [](const auto& f) { return f ? std::optional<double>(f->value) : std::nullopt; };
    const auto spread = [](const auto& f) { return f ? std::optional<double>(f->spread) : std::nullopt; };
    const bool converged = (!s.speedup || s.speedup->converged) && (!s.seconds || s.seconds->converged);
    row.bind(1, id).bind(2, c.suite).bind(3, c.name).bind(4, c.backend).bind(5, c.precision);
    row.bind(6, std::string(case_status_name(c.status)));
    row.bind(7, value(s.speedup)).bind(8, spread(s.speedup)).bind(9, value(s.pct_of_copy));
    row.bind(10, spread(s.pct_of_copy)).bind(11, s.pct_of_copy ? s.pct_of_copy->reference : std::string());
    row.bind(12, value(s.seconds)).bind(13, spread(s.seconds)).bind(14, std::int64_t{converged});
    row.step("storing a case");
    row.reset();
    ++outcome.cases;
  }
}

}  // namespace

std::uint64_t stable_hash(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

std::string content_hash(const nlohmann::json& document) { return fmt::format("{:016x}", stable_hash(document.dump())); }

StoredCase figures_of(const compare::CaseIndex& index, const CaseResult& c) {
  StoredCase s;
  s.suite = c.suite;
  s.name = c.name;
  s.backend = c.backend;
  s.precision = c.precision;
  s.status = std::string(case_status_name(c.status));
  s.speedup = compare::run_figure(index, c, compare::Metric::speedup, "fp32");
  s.pct_of_copy = compare::run_figure(index, c, compare::Metric::pct_of_copy, "fp32");
  s.seconds = compare::run_figure(index, c, compare::Metric::seconds, "fp32");
  return s;
}

Store::Store(const std::filesystem::path& path, Mode mode) : path_(path) {
  std::error_code ec;
  if (mode == Mode::read && !std::filesystem::exists(path, ec))
    throw UsageError(fmt::format("history {}: no such file (mpbench history add creates it)", path.string()));
  const int flags = mode == Mode::write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw UsageError(fmt::format("history {}: cannot open it: {}", path.string(), why));
  }
  try {
    // SQLite opens a file it may not write for reading only, and says so at the first write.
    if (mode == Mode::write && sqlite3_db_readonly(db_, "main") == 1)
      throw UsageError(fmt::format("history {}: the file is read-only (its permissions or a read-only mount): "
                                   "nothing can be added to it; make it writable, or give another file",
                                   path.string()));
    check(sqlite3_busy_timeout(db_, kBusyTimeoutMs), path, db_, "setting its busy timeout");
    check_schema(db_, path, mode);
    if (mode == Mode::write) execute(db_, path, "PRAGMA journal_mode = WAL", "switching it to WAL mode");
  } catch (...) {
    sqlite3_close(db_);
    throw;
  }
}

Store::~Store() { sqlite3_close(db_); }

std::vector<AddOutcome> Store::add(const std::vector<std::filesystem::path>& documents) {
  std::vector<Checked> checked;
  for (const auto& path : documents) {
    auto json = read_document_json(path);
    auto document = result_from_json(path, json);
    checked.push_back({path, std::move(json), std::move(document)});
  }
  std::vector<AddOutcome> outcomes;
  for (const Checked& d : checked) {
    AddOutcome outcome{d.path.string()};
    execute(db_, path_, "BEGIN IMMEDIATE", "starting a transaction");
    try {
      Statement seen(db_, path_, "SELECT count(*) FROM runs WHERE hash = ?");
      seen.bind(1, content_hash(d.json));
      seen.step("looking the document up");
      outcome.duplicate = seen.integer(0) > 0;
      if (!outcome.duplicate) insert(db_, path_, d, outcome);
      execute(db_, path_, "COMMIT", "committing the run");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    outcomes.push_back(outcome);
  }
  return outcomes;
}

namespace {

constexpr const char* kCaseColumns =
    "SELECT r.machine, c.suite, c.name, c.backend, c.precision, c.status, r.created, r.revision, r.source, r.id, "
    "c.speedup, c.speedup_spread, c.pct_of_copy, c.pct_of_copy_spread, c.copy, c.seconds, c.seconds_spread, "
    "c.converged FROM cases c JOIN runs r ON r.id = c.run ";
constexpr const char* kCaseOrder = " ORDER BY r.machine, c.suite, c.name, c.backend, c.precision, r.id";

std::vector<StoredCase> read_cases(Statement& s) {
  std::vector<StoredCase> out;
  while (s.step("reading its cases")) {
    StoredCase c{s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6), s.text(7), s.text(8),
                 s.integer(9)};
    const bool converged = s.integer(17) != 0;
    const auto figure = [&](int value, int spread, std::string reference) -> std::optional<compare::RunFigure> {
      if (!s.real(value)) return std::nullopt;
      return compare::RunFigure{*s.real(value), s.real(spread).value_or(0), {}, std::move(reference), converged,
                                std::nullopt};
    };
    c.speedup = figure(10, 11, "fp32");
    c.pct_of_copy = figure(12, 13, s.text(14));
    c.seconds = figure(15, 16, "the base runs");
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::vector<StoredCase> Store::cases() const {
  Statement s(db_, path_, (std::string(kCaseColumns) + kCaseOrder).c_str());
  return read_cases(s);
}

std::vector<StoredCase> Store::cases(const std::string& machine, std::size_t runs) const {
  Statement s(db_, path_,
              (std::string(kCaseColumns) +
               "WHERE r.id IN (SELECT id FROM runs WHERE machine = ? ORDER BY id DESC LIMIT ?)" + kCaseOrder)
                  .c_str());
  s.bind(1, machine).bind(2, static_cast<std::int64_t>(runs));
  return read_cases(s);
}

std::vector<compare::Run> Store::last_runs(const std::string& machine, std::size_t count,
                                          std::optional<std::int64_t> except) const {
  Statement s(db_, path_, "SELECT id, source, document FROM runs WHERE machine = ? AND id != ? ORDER BY id DESC LIMIT ?");
  s.bind(1, machine).bind(2, except.value_or(-1)).bind(3, static_cast<std::int64_t>(count));
  std::vector<compare::Run> runs;
  while (s.step("reading its runs")) {
    const std::string source = fmt::format("{} (run {} of the history)", s.text(1), s.integer(0));
    runs.push_back({source, result_from_json(source, nlohmann::json::parse(s.text(2)))});
  }
  return {runs.rbegin(), runs.rend()};
}

std::optional<std::int64_t> Store::run_with_hash(const std::string& hash) const {
  Statement s(db_, path_, "SELECT id FROM runs WHERE hash = ?");
  s.bind(1, hash);
  if (!s.step("looking the document up")) return std::nullopt;
  return s.integer(0);
}

std::size_t Store::runs() const { return static_cast<std::size_t>(pragma(db_, path_, "SELECT count(*) FROM runs")); }

}  // namespace mpbench::history
