#pragma once
// The layer the history's two stores differ in: a connection to the database and its statements.
// history/store.cpp holds everything else (the queries, how a document is checked and stored, how
// cases are read back) once, for both: history/sqlite_connection.cpp (one SQLite file) and
// history/postgres_connection.cpp (a PostgreSQL server through libpq, built where libpq is found).
//
// The SQL store.cpp writes is the dialect both speak: `?` placeholders (the PostgreSQL connection
// numbers them), INSERT ... ON CONFLICT DO NOTHING RETURNING, no engine's own functions. Each
// connection creates, checks and (once there is a second version) migrates its schema on open:
// the same tables and columns, in each engine's types.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace mpbench::history {

// A statement with its values: bind, then step through its rows; reset for the next values.
class Statement {
 public:
  virtual ~Statement() = default;
  // Values by position, from 1.
  virtual Statement& bind(int i, const std::string& text) = 0;
  virtual Statement& bind(int i, std::int64_t v) = 0;
  virtual Statement& bind(int i, const std::optional<double>& v) = 0;
  // Runs it at the first call; true while there is a row. `doing` names the step in errors.
  virtual bool step(const std::string& doing) = 0;
  // Ready for the next values.
  virtual void reset() = 0;
  // The current row's columns, from 0.
  virtual std::string text(int column) const = 0;
  virtual std::int64_t integer(int column) const = 0;
  virtual std::optional<double> real(int column) const = 0;
};

class Connection {
 public:
  virtual ~Connection() = default;
  // The database as errors name it: the file, or the URL with its password hidden.
  virtual const std::string& name() const = 0;
  virtual std::unique_ptr<Statement> prepare(const std::string& sql) = 0;
  // A transaction that writes: SQLite takes the file's write lock at once (BEGIN IMMEDIATE), so
  // writers queue rather than fail; PostgreSQL's rows lock themselves (a run's content hash is
  // unique, so a document two writers add at once is stored once).
  virtual void begin_write() = 0;
  virtual void commit() = 0;
  // Never throws: called while an error is on its way.
  virtual void rollback() noexcept = 0;
};

enum class OpenMode { read, write };

// A history file, created (with OpenMode::write) when missing.
std::unique_ptr<Connection> open_sqlite(const std::string& path, OpenMode mode);
// A postgresql:// (or postgres://) URL: its tables created (with OpenMode::write) when missing.
// Where mpbench was built without libpq, a UsageError saying so.
std::unique_ptr<Connection> open_postgres(const std::string& url, OpenMode mode);

// Whether `db` names a PostgreSQL server (postgresql:// or postgres://) rather than a file.
bool is_postgres_url(const std::string& db);
// The URL as messages show it: a password in it (user:password@, or password=) as ***.
std::string url_for_messages(const std::string& url);

inline constexpr int kSchemaVersion = 1;

// 'mpb1': marks a history as mpbench's (SQLite's application_id, a row in PostgreSQL).
inline constexpr std::int32_t kApplicationId = 0x6d706231;

}  // namespace mpbench::history
