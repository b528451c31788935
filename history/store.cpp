#include "history/store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "compare/sides.hpp"
#include "core/error.hpp"

namespace mpbench::history {

namespace {

std::string revision_of(const ResultDocument& doc) {
  const nlohmann::json::json_pointer p("/mpbench/git_revision");
  return doc.env.contains(p) && doc.env.at(p).is_string() ? doc.env.at(p).get<std::string>() : "";
}

struct Checked {
  std::filesystem::path path;
  nlohmann::json json;
  ResultDocument document;
};

// Stores the run and its cases in the transaction the caller began; false where a run of the same
// content hash is stored already (a writer beside this one may have stored it a moment ago: the
// hash is unique, and the insert then does nothing).
bool insert(Connection& db, const Checked& d, AddOutcome& outcome) {
  auto run = db.prepare(
      "INSERT INTO runs(hash, source, created, machine, revision, added, document) VALUES(?,?,?,?,?,?,?) "
      "ON CONFLICT(hash) DO NOTHING RETURNING id");
  const std::string machine = compare::machine_of(d.document);
  run->bind(1, content_hash(d.json)).bind(2, d.path.string()).bind(3, d.document.created).bind(4, machine);
  run->bind(5, revision_of(d.document)).bind(6, utc_timestamp_now()).bind(7, d.json.dump());
  if (!run->step("storing a run")) return false;
  const std::int64_t id = run->integer(0);
  while (run->step("storing a run")) {
  }
  auto row_statement = db.prepare(
      "INSERT INTO cases(run, suite, name, backend, precision, status, speedup, speedup_spread, "
      "pct_of_copy, pct_of_copy_spread, copy, seconds, seconds_spread, converged) "
      "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING");
  Statement& row = *row_statement;
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
  return true;
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

bool is_postgres_url(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

std::string url_for_messages(const std::string& url) {
  std::string shown = url;
  if (const auto scheme = shown.find("://"); scheme != std::string::npos) {
    const auto start = scheme + 3;
    const auto end = std::min(shown.find_first_of("/?", start), shown.size());
    const auto at = shown.rfind('@', end);
    if (at != std::string::npos && at >= start)
      if (const auto colon = shown.find(':', start); colon != std::string::npos && colon < at)
        shown.replace(colon + 1, at - colon - 1, "***");
  }
  for (auto p = shown.find("password="); p != std::string::npos; p = shown.find("password=", p + 1)) {
    const auto from = p + 9;
    const auto to = std::min(shown.find('&', from), shown.size());
    shown.replace(from, to - from, "***");
  }
  return shown;
}

#ifndef MPBENCH_HAVE_POSTGRESQL
std::unique_ptr<Connection> open_postgres(const std::string& url, OpenMode) {
  throw UsageError(fmt::format("history {}: this mpbench was built without PostgreSQL (no libpq found when it was "
                               "configured, or -DMPBENCH_WITH_POSTGRESQL=OFF: install libpq-dev, as "
                               "scripts/setup.sh does, and build again); "
                               "give a history file instead",
                               url_for_messages(url)));
}
#endif

Store::Store(const std::string& db, Mode mode)
    : db_(is_postgres_url(db) ? open_postgres(db, mode) : open_sqlite(db, mode)) {}

Store::~Store() = default;

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
    db_->begin_write();
    try {
      // Looked up first, so that a document added again takes no run number (a PostgreSQL
      // sequence would count the insert that then does nothing).
      auto seen = db_->prepare("SELECT count(*) FROM runs WHERE hash = ?");
      seen->bind(1, content_hash(d.json));
      seen->step("looking the document up");
      outcome.duplicate = seen->integer(0) > 0;
      seen.reset();
      if (!outcome.duplicate) outcome.duplicate = !insert(*db_, d, outcome);
      db_->commit();
    } catch (...) {
      db_->rollback();
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
                 s.integer(9), std::nullopt, std::nullopt, std::nullopt};
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
  auto s = db_->prepare(std::string(kCaseColumns) + kCaseOrder);
  return read_cases(*s);
}

std::vector<StoredCase> Store::cases(const std::string& machine, std::size_t runs) const {
  auto s = db_->prepare(std::string(kCaseColumns) +
                        "WHERE r.id IN (SELECT id FROM runs WHERE machine = ? ORDER BY id DESC LIMIT ?)" + kCaseOrder);
  s->bind(1, machine).bind(2, static_cast<std::int64_t>(runs));
  return read_cases(*s);
}

std::vector<compare::Run> Store::last_runs(const std::string& machine, std::size_t count,
                                          std::optional<std::int64_t> except) const {
  auto s = db_->prepare("SELECT id, source, document FROM runs WHERE machine = ? AND id != ? ORDER BY id DESC LIMIT ?");
  s->bind(1, machine).bind(2, except.value_or(-1)).bind(3, static_cast<std::int64_t>(count));
  std::vector<compare::Run> runs;
  while (s->step("reading its runs")) {
    const std::string source = fmt::format("{} (run {} of the history)", s->text(1), s->integer(0));
    runs.push_back({source, result_from_json(source, nlohmann::json::parse(s->text(2)))});
  }
  return {runs.rbegin(), runs.rend()};
}

std::vector<StoredDocument> Store::latest_documents(std::size_t count) const {
  // A window function, which SQLite (3.25 and later) and PostgreSQL both run: each run numbered
  // from the newest within its machine.
  auto s = db_->prepare(
      "SELECT id, machine, source, document FROM (SELECT id, machine, source, document, "
      "row_number() OVER (PARTITION BY machine ORDER BY id DESC) AS newest FROM runs) AS numbered "
      "WHERE newest <= ? ORDER BY machine, id");
  s->bind(1, static_cast<std::int64_t>(count));
  std::vector<StoredDocument> documents;
  while (s->step("reading its latest runs"))
    documents.push_back({s->integer(0), s->text(1), s->text(2), s->text(3)});
  return documents;
}

std::optional<std::int64_t> Store::run_with_hash(const std::string& hash) const {
  auto s = db_->prepare("SELECT id FROM runs WHERE hash = ?");
  s->bind(1, hash);
  if (!s->step("looking the document up")) return std::nullopt;
  return s->integer(0);
}

std::size_t Store::runs() const {
  auto s = db_->prepare("SELECT count(*) FROM runs");
  s->step("counting its runs");
  return static_cast<std::size_t>(s->integer(0));
}

}  // namespace mpbench::history
