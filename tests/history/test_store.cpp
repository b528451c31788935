#include "history/store.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cli/run_mpbench.hpp"
#include "compare/documents.hpp"
#include "compare/report.hpp"
#include "core/error.hpp"
#include "history/series.hpp"
#include "history_runs.hpp"

namespace mpbench::history {
namespace {

using compare::testing::gemm_run;
using nlohmann::json;

class History : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              ("mpbench-history-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  // A gemm run (bf16 at `bf16_seconds` against fp32 at 1 ms) written as `name`; `minute` makes
  // documents of the same figures distinct runs.
  std::filesystem::path write_run(const std::string& name, double bf16_seconds, int minute = 0, int indent = -1) {
    return testing::write_gemm_run(folder_, name, bf16_seconds, minute, indent);
  }
  std::filesystem::path db() const { return folder_ / "history.sqlite"; }

  std::string bytes_of(const std::filesystem::path& p) const { return mpbench::testing::read_all(p); }

  std::filesystem::path folder_;
};

TEST_F(History, AddStoresEachCaseAndRecognisesADocumentByItsContent) {
  const auto first = write_run("a.json", 1e-4);
  Store store(db(), Store::Mode::write);
  const auto added = store.add({first});
  ASSERT_EQ(added.size(), 1u);
  EXPECT_FALSE(added[0].duplicate);
  EXPECT_EQ(added[0].cases, 2u);
  // The same document reformatted is the same document; another run is not.
  const auto again = store.add({write_run("a-indented.json", 1e-4, 0, 2), write_run("b.json", 1e-4, 1)});
  EXPECT_TRUE(again[0].duplicate);
  EXPECT_FALSE(again[1].duplicate);
  EXPECT_EQ(store.runs(), 2u);
  const auto cases = store.cases();
  ASSERT_EQ(cases.size(), 4u);
  // Each case's figures are compare's of that run: bf16 10x fp32, fp32 by its fastest time.
  const auto bf16 = std::find_if(cases.begin(), cases.end(), [](const StoredCase& c) { return c.precision == "bf16"; });
  ASSERT_TRUE(bf16->speedup.has_value());
  EXPECT_NEAR(bf16->speedup->value, 10.0, 1e-9);
  const auto fp32 = std::find_if(cases.begin(), cases.end(), [](const StoredCase& c) { return c.precision == "fp32"; });
  EXPECT_FALSE(fp32->speedup.has_value());
  EXPECT_NEAR(fp32->seconds->value, gemm_run(1e-4).cases[0].seconds->min, 1e-15);
  EXPECT_EQ(fp32->machine, compare::machine_of(gemm_run(1e-4)));
}

TEST_F(History, AMalformedDocumentStoresNothing) {
  const auto good = write_run("good.json", 1e-4);
  json bad = gemm_run(1e-4).to_json();
  bad["cases"][1]["metrics"]["seconds"]["median"] = "fast";
  const auto bad_path = folder_ / "bad.json";
  std::ofstream(bad_path) << bad.dump();
  Store store(db(), Store::Mode::write);
  try {
    store.add({good, bad_path});
    FAIL() << "a malformed document was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("median"), std::string::npos) << e.what();
  }
  EXPECT_EQ(store.runs(), 0u) << "the good document before it is not stored either";
}

// A file that is not an mpbench history of this version is refused, and left as it was.
TEST_F(History, ForeignCorruptedAndNewerFilesAreRefusedUnchanged) {
  const auto foreign = folder_ / "foreign.sqlite";
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "CREATE TABLE notes(text TEXT)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  const auto corrupted = folder_ / "corrupted.sqlite";
  std::mt19937_64 random(std::random_device{}());
  std::string noise(8192, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  std::ofstream(corrupted, std::ios::binary) << noise;
  const auto newer = folder_ / "newer.sqlite";
  {
    Store created(newer, Store::Mode::write);
  }
  ASSERT_EQ(sqlite3_open(newer.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  for (const auto& [path, says] : {std::pair{foreign, "not an mpbench history"}, std::pair{corrupted, "not a database"},
                                   std::pair{newer, "newer mpbench"}}) {
    const std::string before = bytes_of(path);
    for (Store::Mode mode : {Store::Mode::write, Store::Mode::read}) {
      try {
        Store store(path, mode);
        FAIL() << path << " was opened";
      } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(bytes_of(path), before) << path;
  }
  EXPECT_THROW(Store(folder_ / "missing.sqlite", Store::Mode::read), UsageError);
  EXPECT_FALSE(std::filesystem::exists(folder_ / "missing.sqlite")) << "reading creates nothing";
}

// A history the user may not write: `add` refuses it, naming the file and why, and it stays as it
// was; it can still be read. Root writes through file permissions, so where the test runs as root
// the store is opened by a child process as the unprivileged user nobody.
TEST_F(History, AReadOnlyFileIsRefusedUnchanged) {
  {
    Store store(db(), Store::Mode::write);
    store.add({write_run("a.json", 0.5e-3)});
  }
  ASSERT_EQ(::chmod(db().c_str(), 0444), 0);
  ASSERT_EQ(::chmod(folder_.c_str(), 0777), 0);  // SQLite's -shm beside a WAL database, even to read
  const std::string before = bytes_of(db());
  const auto extra = write_run("b.json", 0.6e-3);
  int message[2];
  ASSERT_EQ(::pipe(message), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(message[0]);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    std::string said = "opened";
    int status = 1;
    try {
      Store store(db(), Store::Mode::write);
      store.add({extra});
    } catch (const UsageError& e) {
      said = e.what();
      status = 0;
    }
    try {
      Store reading(db(), Store::Mode::read);
      if (reading.runs() != 1) status = 4;
    } catch (const UsageError&) {
      status = 5;
    }
    [[maybe_unused]] const auto written = ::write(message[1], said.data(), said.size());
    ::_exit(status);
  }
  ::close(message[1]);
  std::string said;
  char buffer[512];
  for (ssize_t n; (n = ::read(message[0], buffer, sizeof buffer)) > 0;) said.append(buffer, static_cast<std::size_t>(n));
  ::close(message[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the read-only file was written; 3: no unprivileged user; 4, 5: it could "
                                       "not be read then; said: "
                                    << said;
  EXPECT_NE(said.find(db().string()), std::string::npos) << said;
  EXPECT_NE(said.find("read-only"), std::string::npos) << said;
  EXPECT_EQ(bytes_of(db()), before);
}

// Two CI jobs appending at once: every run lands, none twice (WAL, a busy timeout, one immediate
// transaction per document).
TEST_F(History, TwoProcessesAppendingAtOnceLoseNothing) {
  constexpr int kEach = 200;
  std::vector<std::filesystem::path> mine, theirs;
  for (int i = 0; i < kEach; ++i) {
    mine.push_back(write_run(fmt::format("m{}.json", i), 1e-4 * (1 + i * 1e-3), i));
    theirs.push_back(write_run(fmt::format("t{}.json", i), 1e-4 * (1 + i * 1e-3), kEach + i));
  }
  testing::add_in_two_processes(db(), mine, theirs);
  if (HasFatalFailure()) return;
  const Store store(db(), Store::Mode::read);
  EXPECT_EQ(store.runs(), 2u * kEach);
  EXPECT_EQ(store.cases().size(), 2u * 2u * kEach);
}

// A new run is judged against the last runs of its series as compare judges one run against
// several: 10x within 0.3% noise, then 8x regresses and 10x is the same. (At 1% noise the window's
// interval, t(0.995, 7) x s x sqrt(1 + 1/8), reached the 5% band's edge for an unlucky draw of
// eight runs, and 10x read noisy: clean-clone CI.)
TEST_F(History, CheckJudgesANewRunAgainstItsSeries) {
  Store store(db(), Store::Mode::write);
  std::mt19937_64 random(std::random_device{}());
  std::normal_distribution<double> noise(0, 0.003);
  for (int i = 0; i < 8; ++i) store.add({write_run(fmt::format("r{}.json", i), 1e-4 * std::exp(noise(random)), i)});
  const auto series = series_of(store.cases(), "", std::nullopt);
  ASSERT_EQ(series.size(), 2u);
  const compare::Options options;
  auto verdict_of = [&](double bf16_seconds, std::optional<std::int64_t> stored_as = std::nullopt) {
    const auto checked = check_run(series, gemm_run(bf16_seconds), stored_as, 10, options);
    const auto bf16 = std::find_if(checked.begin(), checked.end(),
                                   [](const compare::Comparison& c) { return c.key.precision == "bf16"; });
    EXPECT_NE(bf16, checked.end());
    EXPECT_EQ(bf16->metric, compare::Metric::speedup);
    EXPECT_EQ(bf16->base_runs, 8u);
    return bf16->verdict;
  };
  EXPECT_EQ(verdict_of(1.25e-4), compare::Verdict::regressed);
  EXPECT_EQ(verdict_of(1e-4), compare::Verdict::same);
  // A run already in the history is not part of its own window.
  const auto cases = store.cases();
  const auto checked = check_run(series, gemm_run(1e-4), cases.back().run, 10, options);
  for (const auto& c : checked) EXPECT_EQ(c.base_runs, 7u) << c.key.label();
}

TEST_F(History, TheCommandLineAddsShowsChecksAndExports) {
  using mpbench::testing::run_mpbench;
  std::vector<std::string> add = {"history", "add", db().string()};
  for (int i = 0; i < 4; ++i) add.push_back(write_run(fmt::format("r{}.json", i), 1e-4 * (1 + 0.002 * i), i).string());
  auto r = run_mpbench(add, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("history " + db().string() + ": 4 runs"), std::string::npos) << r.out;
  r = run_mpbench({"history", "add", db().string(), add.back()}, folder_);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("already in the history"), std::string::npos) << r.out;
  r = run_mpbench({"history", "show", db().string(), "--filter", "bf16"}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("gemm/square_4096/cuda/bf16: speedup"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("/fp32:"), std::string::npos) << r.out;
  r = run_mpbench({"history", "check", db().string(), write_run("slow.json", 1.25e-4, 9).string()}, folder_);
  EXPECT_EQ(r.status, compare::kExitRegressed) << r.out << r.err;
  EXPECT_NE(r.out.find("regressed"), std::string::npos) << r.out;
  r = run_mpbench({"history", "export", db().string(), "--format", "csv"}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(mpbench::testing::count_lines(r.out), 1 + 4 * 2) << r.out;
  // A run alone in its series has nothing to be judged against.
  const auto alone = (folder_ / "alone.sqlite").string();
  ASSERT_EQ(run_mpbench({"history", "add", alone, add[3]}, folder_).status, 0);
  r = run_mpbench({"history", "check", alone, add[3]}, folder_);
  EXPECT_EQ(r.status, compare::kExitNothingCompared) << r.out << r.err;
  EXPECT_NE(r.out.find("nothing compared"), std::string::npos) << r.out;
  r = run_mpbench({"history", "show", (folder_ / "none.sqlite").string()}, folder_);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.err.find("no such file"), std::string::npos) << r.err;
}

// export --latest N: the whole documents of each machine's last N runs, machines apart, oldest
// first, as they were added; what report.py's hardware-selection plots read.
TEST_F(History, ExportLatestGivesEachMachinesLastRunsWhole) {
  using mpbench::testing::run_mpbench;
  const auto on_other_gpu = [&](const std::string& name, int minute) {
    const auto path = write_run(name, 2e-4, minute);
    json j = json::parse(bytes_of(path));
    j["env"]["device"]["name"] = "Other GPU";
    std::ofstream(path) << j.dump();
    return path.string();
  };
  std::vector<std::string> order;  // the add order: runs 1, 2, ... alternate between the machines
  for (int i = 0; i < 4; ++i) {
    order.push_back(write_run(fmt::format("a{}.json", i), 1e-4 * (1 + 0.01 * i), i).string());
    if (i != 2) order.push_back(on_other_gpu(fmt::format("o{}.json", i), 10 + i));
  }
  std::vector<std::string> add = {"history", "add", db().string()};
  add.insert(add.end(), order.begin(), order.end());
  ASSERT_EQ(run_mpbench(add, folder_).status, 0);
  const auto r = run_mpbench({"history", "export", db().string(), "--latest", "2"}, folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  const json documents = json::parse(r.out)["documents"];
  ASSERT_EQ(documents.size(), 4u) << r.out;
  const std::string first_machine = compare::machine_of(gemm_run(1e-4));
  // Machines in name order: "GPU ..." of gemm_run's device, then "GPU Other GPU, ...".
  ASSERT_LT(first_machine, documents[2]["machine"].get<std::string>());
  const std::vector<std::string> expected = {order[4], order[5], order[3], order[6]};  // a2 a3, o1 o3
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(documents[i]["source"], expected[i]) << i;
    EXPECT_EQ(documents[i]["document"], json::parse(bytes_of(expected[i]))) << i;
    EXPECT_EQ(documents[i]["run"].get<int>(),
              std::find(order.begin(), order.end(), expected[i]) - order.begin() + 1) << i;
  }
  EXPECT_EQ(documents[0]["machine"], first_machine);
  EXPECT_EQ(documents[1]["machine"], first_machine);
  // More than a machine has: all of its runs.
  EXPECT_EQ(json::parse(run_mpbench({"history", "export", db().string(), "--latest", "9"}, folder_).out)["documents"].size(),
            order.size());
  const auto csv = run_mpbench({"history", "export", db().string(), "--latest", "1", "--format", "csv"}, folder_);
  EXPECT_EQ(csv.status, 2);
  EXPECT_NE(csv.err.find("JSON only"), std::string::npos) << csv.err;
  EXPECT_EQ(run_mpbench({"history", "export", db().string(), "--latest", "0"}, folder_).status, 2);
}

// A 20% step in the speedup after ten runs of twenty (a permutation reaches so clean a split with
// probability 2 / C(20, 10), so the test's p-value is its smallest, 1/200): show and check name the
// change point between the runs either side of it; a series without a step gets none.
TEST_F(History, ShowAndCheckNameWhereASeriesChanged) {
  using mpbench::testing::run_mpbench;
  std::mt19937_64 random(std::random_device{}());
  std::normal_distribution<double> noise(0, 0.005);
  std::vector<std::string> add = {"history", "add", db().string()};
  for (int i = 0; i < 20; ++i)
    add.push_back(write_run(fmt::format("r{}.json", i), (i < 10 ? 1e-4 : 1.25e-4) * std::exp(noise(random)), i).string());
  ASSERT_EQ(run_mpbench(add, folder_).status, 0);
  const auto shown = run_mpbench({"history", "show", db().string()}, folder_);
  ASSERT_EQ(shown.status, 0) << shown.err;
  const auto bf16 = shown.out.find("gemm/square_4096/cuda/bf16");
  ASSERT_NE(bf16, std::string::npos) << shown.out;
  const auto point = shown.out.find("change point: ", bf16);
  ASSERT_NE(point, std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("between run 10 of 2026-12-01T10:09:00Z (abc) and run 11 of 2026-12-01T10:10:00Z (abc)", point),
            std::string::npos)
      << shown.out;
  const auto fp32 = shown.out.find("gemm/square_4096/cuda/fp32");
  EXPECT_EQ(shown.out.find("change point", fp32), std::string::npos) << "fp32's time did not change\n" << shown.out;
  const auto checked = run_mpbench({"history", "check", db().string(), add.back()}, folder_);
  EXPECT_NE(checked.out.find("change points over the last 200 runs of each series"), std::string::npos) << checked.out;
  EXPECT_NE(checked.out.find("between run 10 of"), std::string::npos) << checked.out;
  const auto exported = run_mpbench({"history", "export", db().string(), "--format", "json"}, folder_);
  ASSERT_EQ(exported.status, 0) << exported.err;
  const json j = json::parse(exported.out);
  EXPECT_EQ(j["cases"].size(), 40u);
  bool found = false;
  for (const auto& c : j["change_points"])
    found |= c["case"] == "gemm/square_4096/cuda/bf16" && c["run_before"] == 10 && c["run_after"] == 11 &&
             c["relative_change"].get<double>() < -0.15;
  EXPECT_TRUE(found) << j["change_points"].dump(1);
}

}  // namespace
}  // namespace mpbench::history
