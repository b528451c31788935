// The SQLite store's connection: one file in WAL mode with a busy timeout, so that CI jobs
// appending at once all land (each document in one immediate transaction); PRAGMA application_id
// marks it as mpbench's and user_version holds the schema version, migrated on open. A foreign,
// corrupted or newer file, or one that cannot be written, is a UsageError naming it; the file is
// then left as it was.
#include <fmt/format.h>
#include <sqlite3.h>

#include <filesystem>
#include <system_error>

#include "core/error.hpp"
#include "history/connection.hpp"

namespace mpbench::history {

namespace {

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

[[noreturn]] void fail(const std::string& path, sqlite3* db, const std::string& doing) {
  throw UsageError(fmt::format("history {}: {}: {}", path, doing, db ? sqlite3_errmsg(db) : "out of memory"));
}

void check(int rc, const std::string& path, sqlite3* db, const std::string& doing) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) fail(path, db, doing);
}

// A prepared statement, finalized when it goes.
class SqliteStatement final : public Statement {
 public:
  SqliteStatement(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    check(sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr), path, db, "preparing a query");
  }
  ~SqliteStatement() override { sqlite3_finalize(stmt_); }
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  Statement& bind(int i, const std::string& text) override {
    check(sqlite3_bind_text(stmt_, i, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT), path_, db_,
          "binding a value");
    return *this;
  }
  Statement& bind(int i, std::int64_t v) override {
    check(sqlite3_bind_int64(stmt_, i, v), path_, db_, "binding a value");
    return *this;
  }
  Statement& bind(int i, const std::optional<double>& v) override {
    check(v ? sqlite3_bind_double(stmt_, i, *v) : sqlite3_bind_null(stmt_, i), path_, db_, "binding a value");
    return *this;
  }
  bool step(const std::string& doing) override {
    const int rc = sqlite3_step(stmt_);
    check(rc, path_, db_, doing);
    return rc == SQLITE_ROW;
  }
  void reset() override {
    check(sqlite3_reset(stmt_), path_, db_, "reusing a query");
    check(sqlite3_clear_bindings(stmt_), path_, db_, "reusing a query");
  }
  std::string text(int column) const override {
    const auto* p = sqlite3_column_text(stmt_, column);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  std::int64_t integer(int column) const override { return sqlite3_column_int64(stmt_, column); }
  std::optional<double> real(int column) const override {
    if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(stmt_, column);
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

void execute(sqlite3* db, const std::string& path, const char* sql, const std::string& doing) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) == SQLITE_OK) return;
  const std::string what = message ? message : sqlite3_errmsg(db);
  sqlite3_free(message);
  throw UsageError(fmt::format("history {}: {}: {}", path, doing, what));
}

std::int64_t pragma(sqlite3* db, const std::string& path, const char* sql) {
  SqliteStatement s(db, path, sql);
  if (!s.step("reading its header")) fail(path, db, "reading its header");
  return s.integer(0);
}

// A new file gets the schema; mpbench's of this version is used as it is; anything else is refused.
void check_schema(sqlite3* db, const std::string& path, OpenMode mode) {
  const std::int64_t id = pragma(db, path, "PRAGMA application_id");
  const std::int64_t version = pragma(db, path, "PRAGMA user_version");
  if (id == 0 && pragma(db, path, "SELECT count(*) FROM sqlite_schema") == 0) {
    if (mode == OpenMode::read) throw UsageError(fmt::format("history {}: empty: no run was added", path));
    execute(db, path, "BEGIN IMMEDIATE", "creating its tables");
    execute(db, path, kSchema, "creating its tables");
    execute(db, path,
            fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {}", kApplicationId, kSchemaVersion).c_str(),
            "marking it as mpbench's");
    execute(db, path, "COMMIT", "creating its tables");
    return;
  }
  if (id != kApplicationId)
    throw UsageError(fmt::format("history {}: an SQLite file that is not an mpbench history (application_id {:#x}); "
                                 "give a new file name or an mpbench history",
                                 path, id));
  if (version > kSchemaVersion)
    throw UsageError(fmt::format("history {}: schema version {} was written by a newer mpbench; this one reads up "
                                 "to version {}",
                                 path, version, kSchemaVersion));
  // Versions below kSchemaVersion would be migrated here, in one transaction; version 1 is the first.
}

class SqliteConnection final : public Connection {
 public:
  SqliteConnection(const std::string& path, OpenMode mode) : path_(path) {
    std::error_code ec;
    if (mode == OpenMode::read && !std::filesystem::exists(path, ec))
      throw UsageError(fmt::format("history {}: no such file (mpbench history add creates it)", path));
    const int flags = mode == OpenMode::write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw UsageError(fmt::format("history {}: cannot open it: {}", path, why));
    }
    try {
      // SQLite opens a file it may not write for reading only, and says so at the first write.
      if (mode == OpenMode::write && sqlite3_db_readonly(db_, "main") == 1)
        throw UsageError(fmt::format("history {}: the file is read-only (its permissions or a read-only mount): "
                                     "nothing can be added to it; make it writable, or give another file",
                                     path));
      check(sqlite3_busy_timeout(db_, kBusyTimeoutMs), path, db_, "setting its busy timeout");
      check_schema(db_, path, mode);
      if (mode == OpenMode::write) execute(db_, path, "PRAGMA journal_mode = WAL", "switching it to WAL mode");
    } catch (...) {
      sqlite3_close(db_);
      throw;
    }
  }
  ~SqliteConnection() override { sqlite3_close(db_); }

  const std::string& name() const override { return path_; }
  std::unique_ptr<Statement> prepare(const std::string& sql) override {
    return std::make_unique<SqliteStatement>(db_, path_, sql.c_str());
  }
  void begin_write() override { execute(db_, path_, "BEGIN IMMEDIATE", "starting a transaction"); }
  void commit() override { execute(db_, path_, "COMMIT", "committing the run"); }
  void rollback() noexcept override { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<Connection> open_sqlite(const std::string& path, OpenMode mode) {
  return std::make_unique<SqliteConnection>(path, mode);
}

}  // namespace mpbench::history
