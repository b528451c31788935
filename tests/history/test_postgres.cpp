// The PostgreSQL store against a real server: Debian's PostgreSQL (/usr/lib/postgresql/*/bin),
// started for each test in a temporary folder as an unprivileged user (initdb refuses root: as root
// the server runs as nobody, on a folder it owns), reached through a Unix socket in that folder, and
// stopped in TearDown. Where no server can start (no PostgreSQL installed, no unprivileged user),
// the tests skip and say why.
#include <fmt/format.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/run_mpbench.hpp"
#include "compare/documents.hpp"
#include "compare/report.hpp"
#include "core/error.hpp"
#include "history/store.hpp"
#include "history_runs.hpp"

#ifdef MPBENCH_HAVE_POSTGRESQL
#include <libpq-fe.h>
#endif

namespace mpbench::history {
namespace {

using compare::testing::gemm_run;
using mpbench::testing::run_mpbench;
using nlohmann::json;

// Replaces every `from` in `text` with `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

#ifdef MPBENCH_HAVE_POSTGRESQL

constexpr uid_t kNobody = 65534;

// The newest Debian PostgreSQL's programs, or empty.
std::filesystem::path postgres_bin() {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
    if (std::filesystem::exists(e.path() / "bin" / "initdb") && std::filesystem::exists(e.path() / "bin" / "pg_ctl"))
      found.push_back(e.path() / "bin");
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::stoi(a.parent_path().filename().string()) < std::stoi(b.parent_path().filename().string());
  });
  return found.empty() ? std::filesystem::path() : found.back();
}

class Postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              fmt::format("mpbench-pg-{}-{}", ::getpid(), ++counter_);
    std::filesystem::remove_all(folder_);
    std::filesystem::create_directories(folder_);
    const auto bin = postgres_bin();
    if (bin.empty()) GTEST_SKIP() << "no PostgreSQL server programs in /usr/lib/postgresql/*/bin (Debian's postgresql)";
    if (::geteuid() == 0 && ::chown(folder_.c_str(), kNobody, kNobody) != 0)
      GTEST_SKIP() << "cannot give " << folder_ << " to user nobody for the server";
    const auto log = folder_ / "server.log";
    if (const int rc = as_server_user({(bin / "initdb").string(), "-D", (folder_ / "data").string(), "-U", "mpbench",
                                       "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"},
                                      folder_ / "initdb.log");
        rc != 0)
      GTEST_SKIP() << "initdb failed (" << rc << "): " << mpbench::testing::read_all(folder_ / "initdb.log");
    pg_ctl_ = bin / "pg_ctl";
    if (const int rc = as_server_user({pg_ctl_.string(), "-D", (folder_ / "data").string(), "-l", log.string(), "-w",
                                       "-t", "60", "-o",
                                       fmt::format("-k {} -c listen_addresses='' -F", folder_.string()), "start"},
                                      folder_ / "pg_ctl.log");
        rc != 0)
      GTEST_SKIP() << "the PostgreSQL server did not start (" << rc
                   << "): " << mpbench::testing::read_all(folder_ / "pg_ctl.log") << mpbench::testing::read_all(log);
    started_ = true;
    // A database for the history, as a team would make one.
    PGconn* admin = PQconnectdb(url("postgres").c_str());
    ASSERT_EQ(PQstatus(admin), CONNECTION_OK) << PQerrorMessage(admin);
    PGresult* r = PQexec(admin, "CREATE DATABASE history");
    ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQerrorMessage(admin);
    PQclear(r);
    PQfinish(admin);
  }

  void TearDown() override {
    if (started_)
      as_server_user({pg_ctl_.string(), "-D", (folder_ / "data").string(), "-m", "immediate", "-w", "stop"},
                     folder_ / "pg_ctl-stop.log");
    std::error_code ec;
    std::filesystem::remove_all(folder_, ec);
  }

  // Runs a server program as the folder's owner (nobody where the test runs as root); its exit status.
  int as_server_user(const std::vector<std::string>& argv, const std::filesystem::path& log) const {
    const pid_t child = ::fork();
    if (child < 0) return -1;
    if (child == 0) {
      const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out >= 0) {
        ::dup2(out, 1);
        ::dup2(out, 2);
      }
      if (::chdir(folder_.c_str()) != 0) ::_exit(126);
      if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0))
        ::_exit(125);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    int status = 0;
    if (::waitpid(child, &status, 0) != child) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // The URL of a database on this server: its Unix socket in the folder, a password in the URL
  // (trust authentication ignores it) so that messages can be seen to hide it.
  std::string url(const std::string& database = "history") const {
    return fmt::format("postgresql://mpbench:s3cret@/{}?host={}", database, folder_.string());
  }
  std::string shown_url() const { return replaced(url(), "s3cret", "***"); }

  std::filesystem::path write_run(const std::string& name, double bf16_seconds, int minute = 0, int indent = -1) {
    return testing::write_gemm_run(folder_, name, bf16_seconds, minute, indent);
  }

  static inline int counter_ = 0;
  std::filesystem::path folder_, pg_ctl_;
  bool started_ = false;
};

// The same documents give the same add, show, check and export in both stores.
TEST_F(Postgres, AddShowCheckAndExportAsTheSqliteStoreDoes) {
  const std::string sqlite = (folder_ / "history.sqlite").string();
  std::vector<std::string> documents;
  for (int i = 0; i < 12; ++i)
    documents.push_back(write_run(fmt::format("r{}.json", i), (i < 6 ? 1e-4 : 1.25e-4) * (1 + 0.001 * (i % 3)), i).string());
  const auto slow = write_run("slow.json", 1.5e-4, 30).string();
  const auto both = [&](std::vector<std::string> args) {
    std::vector<std::string> on_sqlite = args, on_postgres = args;
    on_sqlite.insert(on_sqlite.begin() + 2, sqlite);
    on_postgres.insert(on_postgres.begin() + 2, url());
    const auto a = run_mpbench(on_sqlite, folder_);
    const auto b = run_mpbench(on_postgres, folder_);
    EXPECT_EQ(a.status, b.status) << a.err << b.err;
    EXPECT_EQ(a.out, replaced(b.out, shown_url(), sqlite)) << "on SQLite:\n" << a.out << "\non PostgreSQL:\n" << b.out;
    EXPECT_EQ(b.out.find("s3cret"), std::string::npos) << b.out;
    return b;
  };
  std::vector<std::string> add = {"history", "add"};
  add.insert(add.end(), documents.begin(), documents.end());
  auto r = both(add);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("history " + shown_url() + ": 12 runs"), std::string::npos) << r.out;
  r = both({"history", "add", documents[3]});
  EXPECT_NE(r.out.find("already in the history"), std::string::npos) << r.out;
  r = both({"history", "show"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("change point: "), std::string::npos) << r.out;
  r = both({"history", "show", "--filter", "bf16", "--last", "4"});
  EXPECT_EQ(r.status, 0) << r.err;
  r = both({"history", "check", slow, "--last", "5"});
  EXPECT_EQ(r.status, compare::kExitRegressed) << r.out << r.err;
  both({"history", "check", documents.back(), "--format", "json"});
  r = both({"history", "export", "--format", "csv"});
  EXPECT_EQ(mpbench::testing::count_lines(r.out), 1 + 12 * 2) << r.out;
  r = both({"history", "export", "--format", "json"});
  EXPECT_EQ(json::parse(r.out)["cases"].size(), 24u);
  r = both({"history", "export", "--latest", "3"});
  EXPECT_EQ(json::parse(r.out)["documents"].size(), 3u);
}

TEST_F(Postgres, ADocumentAddedTwiceIsStoredOnce) {
  Store store(url(), Store::Mode::write);
  const auto first = store.add({write_run("a.json", 1e-4)});
  ASSERT_EQ(first.size(), 1u);
  EXPECT_FALSE(first[0].duplicate);
  EXPECT_EQ(first[0].cases, 2u);
  const auto again = store.add({write_run("a-indented.json", 1e-4, 0, 2), write_run("b.json", 1e-4, 1)});
  EXPECT_TRUE(again[0].duplicate);
  EXPECT_FALSE(again[1].duplicate);
  EXPECT_EQ(store.runs(), 2u);
  EXPECT_EQ(store.cases().size(), 4u);
  EXPECT_EQ(store.name(), shown_url());
}

// Two runners appending at once: every run lands, none twice, also the documents both add.
TEST_F(Postgres, TwoProcessesAppendingAtOnceLoseNothing) {
  constexpr int kEach = 50, kShared = 5;
  std::vector<std::filesystem::path> mine, theirs;
  for (int i = 0; i < kEach; ++i) {
    mine.push_back(write_run(fmt::format("m{}.json", i), 1e-4 * (1 + i * 1e-3), i));
    theirs.push_back(write_run(fmt::format("t{}.json", i), 1e-4 * (1 + i * 1e-3), kEach + i));
  }
  for (int i = 0; i < kShared; ++i) {
    const auto shared = write_run(fmt::format("s{}.json", i), 2e-4, 2 * kEach + i);
    mine.insert(mine.begin() + 10 * i, shared);
    theirs.insert(theirs.begin() + 10 * i, shared);
  }
  testing::add_in_two_processes(url(), mine, theirs);
  if (HasFatalFailure()) return;
  const Store store(url(), Store::Mode::read);
  EXPECT_EQ(store.runs(), 2u * kEach + kShared);
  EXPECT_EQ(store.cases().size(), 2u * (2u * kEach + kShared));
}

TEST_F(Postgres, AMalformedDocumentStoresNothing) {
  const auto good = write_run("good.json", 1e-4);
  json bad = gemm_run(1e-4).to_json();
  bad["cases"][1]["metrics"]["seconds"]["median"] = "fast";
  const auto bad_path = folder_ / "bad.json";
  std::ofstream(bad_path) << bad.dump();
  const auto r = run_mpbench({"history", "add", url(), good.string(), bad_path.string()}, folder_);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("median"), std::string::npos) << r.err;
  const Store store(url(), Store::Mode::read);
  EXPECT_EQ(store.runs(), 0u) << "the good document before it is not stored either";
}

// Tables of the same names that are not mpbench's are refused and left alone; a database without
// a history is not created by show.
TEST_F(Postgres, ForeignTablesAndAnEmptyDatabaseAreRefused) {
  auto r = run_mpbench({"history", "show", url()}, folder_);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no mpbench history in this database"), std::string::npos) << r.err;
  PGconn* other = PQconnectdb(url().c_str());
  ASSERT_EQ(PQstatus(other), CONNECTION_OK) << PQerrorMessage(other);
  PQclear(PQexec(other, "CREATE TABLE runs(note TEXT)"));
  r = run_mpbench({"history", "add", url(), write_run("a.json", 1e-4).string()}, folder_);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("not an mpbench history"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(shown_url()), std::string::npos) << r.err;
  PGresult* tables = PQexec(other, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'");
  EXPECT_STREQ(PQgetvalue(tables, 0, 0), "1") << "the foreign database was changed";
  PQclear(tables);
  PQfinish(other);
}

#endif  // MPBENCH_HAVE_POSTGRESQL

// An unreachable server or a URL libpq cannot read: exit 2, the URL named with its password hidden.
// Without libpq in the build: exit 2, saying so.
TEST(PostgresUrl, UnreachableServerAndBadUrlExit2NamingTheUrl) {
  const auto folder = std::filesystem::temp_directory_path() / fmt::format("mpbench-pg-url-{}", ::getpid());
  std::filesystem::create_directories(folder);
  for (const std::string url : {"postgresql://mpbench:hunter2@127.0.0.1:1/history",
                                "postgresql://mpbench:hunter2@[bad/history", "postgres://mpbench@127.0.0.1:notaport/h"}) {
    const auto r = run_mpbench({"history", "show", url}, folder);
    EXPECT_EQ(r.status, 2) << url << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(replaced(url, "hunter2", "***")), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("hunter2"), std::string::npos) << r.err;
#ifdef MPBENCH_HAVE_POSTGRESQL
    if (url.find("127.0.0.1:1/") != std::string::npos) {
      EXPECT_NE(r.err.find("cannot connect to the PostgreSQL server"), std::string::npos) << r.err;
    }
    if (url.find("[bad") != std::string::npos) {
      EXPECT_NE(r.err.find("not a PostgreSQL URL libpq can read"), std::string::npos) << r.err;
    }
#else
    EXPECT_NE(r.err.find("this mpbench was built without PostgreSQL"), std::string::npos) << r.err;
#endif
  }
  EXPECT_EQ(url_for_messages("postgresql://u:p%40ss@h/db?sslmode=require&password=x&a=b"),
            "postgresql://u:***@h/db?sslmode=require&password=***&a=b");
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace mpbench::history
