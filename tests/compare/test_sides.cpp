#include "compare/sides.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "documents.hpp"

#ifndef MPBENCH_COMPARE_FIXTURES
#define MPBENCH_COMPARE_FIXTURES "tests/cli/fixtures"
#endif

namespace mpbench::compare {
namespace {

using namespace testing;

// $MPBENCH_COMPARE_FIXTURES where the tests run away from their build (the device script).
const std::filesystem::path kFixtures = std::getenv("MPBENCH_COMPARE_FIXTURES") ? std::getenv("MPBENCH_COMPARE_FIXTURES")
                                                                                : MPBENCH_COMPARE_FIXTURES;

// Unique per process, so parallel test runs do not share files.
std::filesystem::path scratch_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("mpbench_sides_" + std::to_string(::getpid()) + "_" + name);
}

ResultDocument cpu_run(const std::string& model, bool bf16, const std::string& cpu_isa) {
  ResultDocument doc = gemm_run(1e-4);
  doc.run = {{"suites", {"gemm"}}, {"device", "cpu"}, {"cpu_isa", cpu_isa}};
  doc.env["cpu"] = {{"model", model}, {"flags", {{"avx2", true}, {"avx512_bf16", bf16}, {"amx_tile", false}}}};
  return doc;
}

// `from` as if run again a second later: another run of the same command.
void write_another_run_of(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::ifstream in(from);
  auto j = nlohmann::json::parse(in);
  j["created"] = j.value("created", "") + "+1s";
  std::ofstream(to) << j.dump(1);
}

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Machines, ACpuIsItsModelItsIsaFlagsAndItsIsaLimit) {
  EXPECT_EQ(machine_of(cpu_run("AMD EPYC 9454", true, "")), "CPU AMD EPYC 9454, ISA avx2 avx512_bf16, ISA limit none");
  EXPECT_EQ(machine_of(cpu_run("AMD EPYC 9454", false, "sse41")), "CPU AMD EPYC 9454, ISA avx2, ISA limit sse41");
}

TEST(Machines, AGpuIsItsNameAndCudaVersion) {
  auto doc = gemm_run(1e-4);
  EXPECT_EQ(machine_of(doc), "GPU NVIDIA H100 80GB HBM3, CUDA 12.4");
  doc.env["device"] = {{"name", "NVIDIA A100-SXM4-80GB"}};  // the GPU the run used, of several
  EXPECT_EQ(machine_of(doc), "GPU NVIDIA A100-SXM4-80GB, CUDA 12.4");
}

TEST(Sides, RepeatedRunsOfOneSelectionOnOneMachineMakeASide) {
  const auto side = side_of("base", {gemm_run(1e-4), gemm_run(1.1e-4), gemm_run(0.9e-4)});
  EXPECT_EQ(side.runs.size(), 3u);
  EXPECT_EQ(side.sources(), (std::vector<std::string>{"base0.json", "base1.json", "base2.json"}));
  EXPECT_EQ(side.case_keys().size(), 2u);
}

TEST(Sides, DocumentsOfDifferentSuitesAreRejected) {
  auto bandwidth = document({timed_case("copy/n=1024", "fp32", samples_around(1e-6, 0.01), "bandwidth")});
  bandwidth.run["suites"] = {"bandwidth"};
  const auto message = usage_error_of([&] { side_of("base", {gemm_run(1e-4), bandwidth}); });
  EXPECT_NE(message.find("base: documents of different suites on one side"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
}

TEST(Sides, DocumentsOfDifferentMachinesAreRejected) {
  for (const auto& other : {cpu_run("AMD EPYC 7763", true, ""), cpu_run("AMD EPYC 9454", false, ""),
                            cpu_run("AMD EPYC 9454", true, "avx2")}) {
    const auto message = usage_error_of([&] { side_of("new", {cpu_run("AMD EPYC 9454", true, ""), other}); });
    EXPECT_NE(message.find("new: documents of different machines on one side"), std::string::npos) << message;
    EXPECT_NE(message.find(machine_of(other)), std::string::npos) << message;
  }
  auto other_cuda = gemm_run(1e-4);
  other_cuda.env["cuda"]["runtime"] = "12.8";
  EXPECT_THROW(side_of("base", {gemm_run(1e-4), other_cuda}), UsageError);
}

TEST(Sides, ARunGivenTwiceOnASideIsRefused) {
  const auto run = gemm_run(1e-4);
  const auto message = usage_error_of([&] { make_side("base", {{"a.json", run}, {"b.json", gemm_run(1.1e-4)}, {"c.json", run}}); });
  EXPECT_NE(message.find("base: 'a.json' and 'c.json' hold the same run"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
  auto later = run;
  later.created = "2026-12-02T10:01:00Z";
  EXPECT_NO_THROW(make_side("base", {{"a.json", run}, {"b.json", later}})) << "the same figures at another time";
}

TEST(Sides, TooFewRunsAreRejectedWhenMoreAreAskedFor) {
  const auto side = side_of("new", {gemm_run(1e-4)});
  EXPECT_NO_THROW(require_runs(side, 1));
  const auto message = usage_error_of([&] { require_runs(side, 3); });
  EXPECT_NE(message.find("new: 1 run (new0.json), --min-runs asks for 3"), std::string::npos) << message;
}

TEST(SidesOnDisk, AFolderOfTwoSuitesIsRejectedAndOtherJsonIgnored) {
  const auto message = usage_error_of([] { load_side("base", {kFixtures / "folder_of_two_suites"}); });
  EXPECT_NE(message.find("documents of different suites"), std::string::npos) << message;
}

TEST(SidesOnDisk, FilesAndFoldersTogetherMakeOneSide) {
  const auto folder = scratch_path("runs");
  std::filesystem::create_directories(folder);
  write_another_run_of(kFixtures / "gemm_base.json", folder / "run1.json");
  std::filesystem::copy_file(kFixtures / "folder_of_two_suites" / "gbench_gemm.json", folder / "gbench.json");
  const auto side = load_side("base", {kFixtures / "gemm_base.json", folder});
  EXPECT_EQ(side.runs.size(), 2u);
  ASSERT_EQ(side.ignored_files.size(), 1u);
  EXPECT_NE(side.ignored_files[0].find("gbench.json"), std::string::npos);
  std::filesystem::remove_all(folder);
}

TEST(SidesOnDisk, TheSameFileTwiceOrACopyOfItIsRefused) {
  const auto folder = scratch_path("twice");
  std::filesystem::create_directories(folder);
  std::filesystem::copy_file(kFixtures / "gemm_base.json", folder / "run0.json");
  const auto twice = usage_error_of([&] { load_side("base", {folder / "run0.json", folder / "run0.json"}); });
  EXPECT_NE(twice.find("are the same file"), std::string::npos) << twice;
  const auto through_folder = usage_error_of([&] { load_side("base", {folder, folder / "." / "run0.json"}); });
  EXPECT_NE(through_folder.find("are the same file"), std::string::npos) << through_folder;
  std::filesystem::copy_file(kFixtures / "gemm_base.json", folder / "run1.json");
  const auto copy = usage_error_of([&] { load_side("new", {folder}); });
  EXPECT_NE(copy.find("new: '"), std::string::npos) << copy;
  EXPECT_NE(copy.find("run1.json' hold the same run (identical documents)"), std::string::npos) << copy;
  std::filesystem::remove_all(folder);
}

TEST(SidesOnDisk, UnusableInputIsAUsageError) {
  EXPECT_THROW(load_side("base", {kFixtures / "malformed.json"}), UsageError);
  EXPECT_THROW(load_side("base", {kFixtures / "does_not_exist.json"}), UsageError);
  const auto message = usage_error_of([] { load_side("base", {kFixtures / "other_schema.json"}); });
  EXPECT_NE(message.find("mpbench.result/2"), std::string::npos) << message;
}

TEST(SidesOnDisk, FolderWithoutResultsIsAUsageError) {
  const auto empty = scratch_path("empty_folder");
  std::filesystem::create_directories(empty);
  std::ofstream(empty / "gbench.json") << R"({"context": {}, "benchmarks": []})";
  const auto message = usage_error_of([&] { load_side("base", {empty}); });
  EXPECT_NE(message.find("holds no mpbench result document"), std::string::npos) << message;
  std::filesystem::remove_all(empty);
}

}  // namespace
}  // namespace mpbench::compare
