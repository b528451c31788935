// `mpbench compare` as main() runs it: arguments, files and exit statuses. The verdicts themselves
// are tested in tests/compare.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "compare/peer.hpp"
#include "compare/report.hpp"
#include "core/error.hpp"
#include "run_mpbench.hpp"

#ifndef MPBENCH_COMPARE_FIXTURES
#define MPBENCH_COMPARE_FIXTURES "tests/cli/fixtures"
#endif

namespace mpbench::compare {
namespace {

// $MPBENCH_COMPARE_FIXTURES where the tests run away from their build (the device script).
const std::filesystem::path kFixtures = std::getenv("MPBENCH_COMPARE_FIXTURES") ? std::getenv("MPBENCH_COMPARE_FIXTURES")
                                                                                : MPBENCH_COMPARE_FIXTURES;

// Unique per process, so parallel test runs do not share files.
std::filesystem::path scratch_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("mpbench_compare_" + std::to_string(::getpid()) + "_" + name);
}

// Runs `mpbench compare ARGS...` as main() does: UsageError becomes exit status 2.
int run_cli(std::vector<std::string> args, std::string* output = nullptr, std::string* error = nullptr) {
  CLI::App app{"mpbench"};
  int exit_code = -1;
  cli::add_compare_command(app, exit_code);
  args.insert(args.begin(), {"mpbench", "compare"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const UsageError& e) {
    exit_code = 2;
    if (error) *error = e.what();
  }
  const std::string captured = ::testing::internal::GetCapturedStdout();
  if (output) *output = captured;
  return exit_code;
}

std::string fixture(const char* name) { return (kFixtures / name).string(); }

nlohmann::json read(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

void write(const std::filesystem::path& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(1); }

// gemm_base.json with every time of `name`/`precision` scaled by `factor`.
nlohmann::json scaled(nlohmann::json doc, const std::string& name, const std::string& precision, double factor) {
  for (auto& c : doc["cases"]) {
    if (c["name"] != name || c["precision"] != precision) continue;
    auto& s = c["metrics"]["seconds"];
    for (const char* key : {"median", "min", "max", "mean", "stddev"}) s[key] = s[key].get<double>() * factor;
    for (auto& v : s["values"]) v = v.get<double>() * factor;
  }
  doc["speedups"] = nlohmann::json::array();  // computed again from the cases
  return doc;
}

// A folder of three runs of gemm_base.json whose square_2048 bf16 times are scaled by `factors`.
std::filesystem::path runs_folder(const std::string& name, std::initializer_list<double> factors) {
  const auto folder = scratch_path(name);
  std::filesystem::create_directories(folder);
  int i = 0;
  for (double f : factors)
    write(folder / ("run" + std::to_string(i++) + ".json"), scaled(read(fixture("gemm_base.json")), "square_2048", "bf16", f));
  return folder;
}

TEST(CompareCommand, ExitCodesForEveryOutcome) {
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_base.json")}), kExitNoRegression);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_regressed.json")}), kExitRegressed);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("malformed.json")}), 2);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("other_schema.json")}), 2);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("bandwidth_base.json")}), 2);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("missing.json")}), 2);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_base.json"), "--threshold", "5"}), 2);
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_base.json"), "--format", "html"}), 2);
  EXPECT_EQ(run_cli({fixture("gemm_base.json")}), 2) << "one side only";
}

// The sides are read at once; where both are unusable the base's error is said, whatever finishes
// first, and a new side that fails alone is named.
TEST(CompareCommand, BothSidesUnusableNameTheBase) {
  for (int i = 0; i < 20; ++i) {
    std::string error;
    EXPECT_EQ(run_cli({fixture("malformed.json"), fixture("missing.json")}, nullptr, &error), 2);
    EXPECT_NE(error.find("malformed.json"), std::string::npos) << error;
    EXPECT_EQ(run_cli({fixture("missing.json"), fixture("malformed.json")}, nullptr, &error), 2);
    EXPECT_NE(error.find("missing.json"), std::string::npos) << error;
  }
  std::string error;
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("malformed.json")}, nullptr, &error), 2);
  EXPECT_NE(error.find("malformed.json"), std::string::npos) << error;
}

// gemm_base.json as scripts/torch_baseline.py would write PyTorch's counterpart of it: backend
// torch, env.torch, every time of square_2048 bf16 scaled by `factor`.
nlohmann::json torch_counterpart(double factor) {
  auto doc = scaled(read(fixture("gemm_base.json")), "square_2048", "bf16", factor);
  for (auto& c : doc["cases"]) c["backend"] = "torch";
  doc["env"]["torch"] = {{"version", "2.5.1"}};
  return doc;
}

TEST(CompareCommand, MpbenchAgainstPyTorchInEitherOrderIsAPeerComparisonThatNeverExits1) {
  for (const double factor : {3.0, 1.0 / 3}) {  // PyTorch three times slower, then three times faster
    const auto path = scratch_path("torch.json");
    write(path, torch_counterpart(factor));
    for (const bool mpbench_first : {true, false}) {
      std::string out;
      const auto mpbench = fixture("gemm_base.json");
      const int status = mpbench_first ? run_cli({mpbench, path.string()}, &out) : run_cli({path.string(), mpbench}, &out);
      EXPECT_EQ(status, kExitPeerCompared) << out;
      EXPECT_NE(out.find("mpbench compare: mpbench against PyTorch"), std::string::npos) << out;
      EXPECT_NE(out.find("mpbench (cuda): 1 run"), std::string::npos) << out;
      EXPECT_NE(out.find("PyTorch 2.5.1 eager (cuda): 1 run"), std::string::npos) << out;
      const std::string verdict = factor > 1 ? "mpbench faster  gemm/square_2048/bf16" : "PyTorch faster  gemm/square_2048/bf16";
      EXPECT_NE(out.find(verdict), std::string::npos) << out;
      EXPECT_NE(out.find(factor > 1 ? "3.00x" : "0.33x"), std::string::npos) << out;
    }
    std::string json_out;
    EXPECT_EQ(run_cli({fixture("gemm_base.json"), path.string(), "--format", "json"}, &json_out), 0);
    const auto j = nlohmann::json::parse(json_out);
    EXPECT_EQ(j["kind"], "peer");
    EXPECT_EQ(j["exit_status"], 0);
    EXPECT_EQ(j["summary"]["compared"], 5);
    std::filesystem::remove(path);
  }
}

TEST(CompareCommand, MpbenchAgainstPyTorchWithNothingPairedExits3) {
  auto doc = torch_counterpart(1);
  for (auto& c : doc["cases"]) c["name"] = "other_" + c["name"].get<std::string>();
  const auto path = scratch_path("torch_unpaired.json");
  write(path, doc);
  std::string out;
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), path.string()}, &out), kExitNothingPaired) << out;
  EXPECT_NE(out.find("nothing compared: no case of mpbench's"), std::string::npos) << out;
  std::filesystem::remove(path);
}

TEST(CompareCommand, NothingComparedHasAnExitStatusOfItsOwn) {
  auto doc = read(fixture("gemm_base.json"));
  for (auto& c : doc["cases"]) {
    c["status"] = "skipped";
    c["message"] = "no GPU";
    c["metrics"] = nlohmann::json::object();
  }
  doc["speedups"] = nlohmann::json::array();
  const auto path = scratch_path("all_skipped.json");
  write(path, doc);
  std::string out;
  EXPECT_EQ(run_cli({path.string(), path.string()}, &out), kExitNothingCompared);
  EXPECT_NE(out.find("nothing compared: of the 5 cases in common, 5 skipped in both"), std::string::npos) << out;
  std::filesystem::remove(path);
}

TEST(CompareCommand, FixtureRegressionNamesTheCaseAndTheLibraryUpgrade) {
  std::string out;
  ASSERT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_regressed.json")}, &out), kExitRegressed);
  EXPECT_NE(out.find("regressed  gemm/square_2048/cuda/bf16  speedup over fp32"), std::string::npos) << out;
  EXPECT_NE(out.find("cuBLAS"), std::string::npos) << out;
  EXPECT_NE(out.find("result: REGRESSED (1 regressed"), std::string::npos) << out;
}

TEST(CompareCommand, FixtureWithChangedCasesListsThemAndPasses) {
  std::string out;
  ASSERT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_changed_cases.json"), "--format", "json"}, &out),
            kExitNoRegression);
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.at("added").size(), 1u);
  EXPECT_EQ(j.at("added").at(0).at("precision"), "fp8-e4m3");
  ASSERT_EQ(j.at("missing").size(), 1u);
  EXPECT_EQ(j.at("missing").at(0).at("precision"), "tf32");
}

TEST(CompareCommand, FoldersOfRepeatedRunsAreJudgedBetweenRuns) {
  const auto base = runs_folder("base_runs", {1.0, 1.01, 0.99});
  const auto slower = runs_folder("slower_runs", {1.25, 1.26, 1.24});
  const auto alike = runs_folder("alike_runs", {1.002, 0.998, 1.0});
  std::string out;
  ASSERT_EQ(run_cli({base.string(), slower.string(), "--format", "json"}, &out), kExitRegressed);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j.at("comparisons").at(0).at("name"), "square_2048");
  EXPECT_EQ(j.at("comparisons").at(0).at("test"), "between-runs");
  EXPECT_EQ(j.at("comparisons").at(0).at("runs").at("new"), 3);
  EXPECT_EQ(run_cli({base.string(), alike.string()}), kExitNoRegression);
  for (const auto& folder : {base, slower, alike}) std::filesystem::remove_all(folder);
}

TEST(CompareCommand, SidesCanListTheirDocuments) {
  const auto base = runs_folder("listed", {1.0, 1.01, 0.99});
  std::string out;
  EXPECT_EQ(run_cli({"--base", (base / "run0.json").string(), (base / "run1.json").string(), (base / "run2.json").string(),
                     "--new", fixture("gemm_regressed.json")},
                    &out),
            kExitRegressed);
  EXPECT_NE(out.find("base: 3 runs"), std::string::npos) << out;
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), "--new", fixture("gemm_base.json")}), 2) << "both forms at once";
  EXPECT_EQ(run_cli({"--base", fixture("gemm_base.json")}), 2) << "--base without --new";
  std::filesystem::remove_all(base);
}

TEST(CompareCommand, BadSidesAreOneLineErrors) {
  std::string error;
  EXPECT_EQ(run_cli({fixture("folder_of_two_suites"), fixture("gemm_base.json")}, nullptr, &error), 2);
  EXPECT_NE(error.find("documents of different suites on one side"), std::string::npos) << error;

  auto other_gpu = read(fixture("gemm_base.json"));
  other_gpu["env"]["gpus"][0]["name"] = "NVIDIA H100 80GB HBM3";
  const auto path = scratch_path("h100.json");
  write(path, other_gpu);
  EXPECT_EQ(run_cli({"--base", fixture("gemm_base.json"), path.string(), "--new", fixture("gemm_base.json")}, nullptr,
                    &error),
            2);
  EXPECT_NE(error.find("documents of different machines on one side"), std::string::npos) << error;
  std::filesystem::remove(path);

  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_base.json"), "--min-runs", "3"}, nullptr, &error), 2);
  EXPECT_NE(error.find("--min-runs asks for 3"), std::string::npos) << error;

  const auto empty = scratch_path("no_results");
  std::filesystem::create_directories(empty);
  EXPECT_EQ(run_cli({empty.string(), fixture("gemm_base.json")}, nullptr, &error), 2);
  EXPECT_NE(error.find("holds no mpbench result document"), std::string::npos) << error;
  std::filesystem::remove_all(empty);
}

TEST(CompareCommand, ARunGivenTwiceOnASideIsAOneLineError) {
  std::string error;
  EXPECT_EQ(run_cli({"--base", fixture("gemm_base.json"), fixture("gemm_base.json"), "--new", fixture("gemm_regressed.json")},
                    nullptr, &error),
            2);
  EXPECT_NE(error.find("base: '" + fixture("gemm_base.json") + "' and '" + fixture("gemm_base.json") +
                       "' are the same file"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);

  const auto folder = runs_folder("with_copy", {1.0, 1.01});
  std::filesystem::copy_file(folder / "run0.json", folder / "run0-copy.json");
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), folder.string()}, nullptr, &error), 2);
  EXPECT_NE(error.find("new: '"), std::string::npos) << error;
  EXPECT_NE(error.find("hold the same run (identical documents)"), std::string::npos) << error;
  std::filesystem::remove_all(folder);
}

TEST(CompareCommand, ThresholdAboveTheChangeLetsItPass) {
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_regressed.json"), "--threshold", "25%"}),
            kExitNoRegression);
}

TEST(CompareCommand, JsonOutputParsesAndCarriesTheVerdicts) {
  std::string out;
  ASSERT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_regressed.json"), "--format", "json"}, &out),
            kExitRegressed);
  const auto j = nlohmann::json::parse(out);
  EXPECT_TRUE(j.at("regressed").get<bool>());
  EXPECT_EQ(j.at("summary").at("regressed").get<int>(), 1);
  EXPECT_EQ(j.at("comparisons").at(0).at("verdict"), "regressed");
  EXPECT_EQ(j.at("comparisons").at(0).at("name"), "square_2048");
  EXPECT_NEAR(j.at("comparisons").at(0).at("change").get<double>(), -0.2, 1e-5);  // the fixture's minima have 6 digits
}

TEST(CompareCommand, MarkdownHasATableAndTheEnvironment) {
  std::string out;
  ASSERT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_regressed.json"), "--format", "markdown"}, &out),
            kExitRegressed);
  EXPECT_NE(out.find("| verdict | case | tracked figure |"), std::string::npos) << out;
  EXPECT_NE(out.find("|---|"), std::string::npos);
  EXPECT_NE(out.find("| 🔴 **regressed** | gemm/square_2048/cuda/bf16 |"), std::string::npos) << out;
  EXPECT_NE(out.find("**cuBLAS** (changed) | 12.4.5 | 12.5.2 |"), std::string::npos) << out;
}

TEST(CompareCommand, OutWritesTheRequestedFormatToAFile) {
  const auto path = scratch_path("out.md");
  std::filesystem::remove(path);
  std::string out;
  ASSERT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_base.json"), "--format", "markdown", "--out",
                     path.string()},
                    &out),
            kExitNoRegression);
  std::ifstream in(path);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(written.find("### mpbench compare: no regression"), std::string::npos) << written;
  EXPECT_NE(out.find("result: no regression"), std::string::npos) << out;
  std::filesystem::remove(path);
}

TEST(CompareCommand, AnEmptyOutIsRefusedNotTakenForStdout) {
  std::string out, error;
  EXPECT_EQ(run_cli({fixture("gemm_base.json"), fixture("gemm_regressed.json"), "--out", ""}, &out, &error), 2);
  EXPECT_NE(error.find("--out '' names no file"), std::string::npos) << error;
  EXPECT_EQ(out, "") << "refused before anything is printed";
}

// Runs `script` as root of its own user and mount namespace, where it may mount a tmpfs without
// being root: an exit status, or nothing where this machine gives no such namespace.
std::optional<int> in_own_namespace(const std::string& script) {
  const std::string command =
      "unshare --user --map-root-user --mount sh -c " + mpbench::testing::shell_quote(script) + " 2>/dev/null";
  const int raw = std::system(command.c_str());
  if (!WIFEXITED(raw) || WEXITSTATUS(raw) == 77) return std::nullopt;
  return WEXITSTATUS(raw);
}

// `mpbench compare` with its --out on a full file system: a 4 KiB tmpfs, filled up.
struct FullDiskRun {
  int status = -1;
  std::string out, err;
};
std::optional<FullDiskRun> compare_onto_full_disk(const std::filesystem::path& folder, const std::filesystem::path& tmpdir) {
  using mpbench::testing::shell_quote;
  const auto full = folder / "full", out = folder / "stdout.txt", err = folder / "stderr.txt";
  std::filesystem::create_directories(full);
  const std::string mount = "mount -t tmpfs -o size=4k tmpfs " + shell_quote(full.string()) + " || exit 77; ";
  if (in_own_namespace(mount + "exit 0") != 0) return std::nullopt;
  const auto status = in_own_namespace(
      mount + "head -c 1048576 /dev/zero > " + shell_quote((full / "fill").string()) + " 2>/dev/null; TMPDIR=" +
      shell_quote(tmpdir.string()) + " exec " + shell_quote(mpbench::testing::mpbench_binary()) + " compare " +
      shell_quote(fixture("gemm_base.json")) + " " + shell_quote(fixture("gemm_regressed.json")) +
      " --format markdown --out " + shell_quote((full / "compare.md").string()) + " >" + shell_quote(out.string()) +
      " 2>" + shell_quote(err.string()));
  if (!status) return std::nullopt;
  return FullDiskRun{*status, mpbench::testing::read_all(out), mpbench::testing::read_all(err)};
}

TEST(CompareCommand, AReportThatCannotBeWrittenIsKeptElsewhereAndSaidSo) {
  const auto folder = scratch_path("full_disk"), keep = folder / "keep";
  std::filesystem::create_directories(keep);
  const auto run = compare_onto_full_disk(folder, keep);
  if (!run) {
    std::filesystem::remove_all(folder);
    GTEST_SKIP() << "no user and mount namespace here to mount a small tmpfs in";
  }
  EXPECT_EQ(run->status, 2) << run->err;
  EXPECT_NE(run->out.find("result: REGRESSED"), std::string::npos) << "the text is printed first\n" << run->out;
  EXPECT_EQ(mpbench::testing::count_lines(run->err), 1) << run->err;
  EXPECT_NE(run->err.find("compare.md' failed (disk full?)"), std::string::npos) << run->err;
  const std::string said = "the report is kept in ";
  const auto at = run->err.find(said);
  ASSERT_NE(at, std::string::npos) << run->err;
  const std::filesystem::path kept = run->err.substr(at + said.size(), run->err.find('\n', at) - at - said.size());
  EXPECT_EQ(kept.parent_path(), keep);
  EXPECT_EQ(kept.extension(), ".md");
  EXPECT_NE(mpbench::testing::read_all(kept).find("### mpbench compare: regression"), std::string::npos);

  const auto nowhere = compare_onto_full_disk(folder, folder / "full");  // the temporary folder is full too
  ASSERT_TRUE(nowhere.has_value());
  EXPECT_EQ(nowhere->status, 2);
  EXPECT_NE(nowhere->err.find("nor could the report be kept in the temporary folder"), std::string::npos) << nowhere->err;
  EXPECT_NE(nowhere->out.find("result: REGRESSED"), std::string::npos) << nowhere->out;
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace mpbench::compare
