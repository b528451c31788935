// The collective suite on two CPU ranks under mpirun: every collective in every dtype MPI reduces,
// checked by the suite against its serial reference, and ranks started alike or refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "run_mpbench.hpp"

namespace mpbench::testing {
namespace {

class CollectiveUnderMpirun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(MPBENCH_MPIEXEC).empty() || !std::filesystem::exists(MPBENCH_MPIEXEC))
      GTEST_SKIP() << "no mpirun at build time (install openmpi-bin): the 2-rank collective tests need it";
    folder_ = std::filesystem::temp_directory_path() / ("mpbench-collective-" + std::to_string(::getpid()));
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override {
    if (!folder_.empty()) std::filesystem::remove_all(folder_);
  }
  // mpirun as CI runs it: as root, two ranks on as few as two cores; under timeout, whose exit
  // status 124 is a job that hung.
  Invocation mpirun(const std::string& ranks) const {
    const std::string command = "timeout 300 " + shell_quote(MPBENCH_MPIEXEC) + " --oversubscribe --allow-run-as-root " +
                                ranks + " >" +
                                shell_quote((folder_ / "out.txt").string()) + " 2>" +
                                shell_quote((folder_ / "err.txt").string());
    const int raw = std::system(command.c_str());
    return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_all(folder_ / "out.txt"), read_all(folder_ / "err.txt")};
  }
  std::string rank_command(const std::vector<std::string>& args) const {
    std::string command = shell_quote(mpbench_binary());
    for (const auto& a : args) command.append(" ").append(shell_quote(a));
    return command;
  }
  std::filesystem::path folder_;
};

TEST_F(CollectiveUnderMpirun, EveryCollectiveInEveryDtypeMatchesTheSerialReference) {
  const auto out = folder_ / "collective.json";
  const Invocation r = mpirun("-np 2 " + rank_command({"run", "--suite", "collective", "--device", "cpu", "--quick",
                                                        "--out", out.string()}));
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(read_all(out));
  EXPECT_EQ(doc["run"]["world_size"], 2);
  ASSERT_EQ(doc["env"]["ranks"].size(), 2u);
  EXPECT_EQ(doc["env"]["ranks"][1]["rank"], 1);
  std::set<std::pair<std::string, std::string>> checked;
  for (const auto& c : doc["cases"]) {
    ASSERT_EQ(c["params"]["world_size"], 2) << c["name"];
    if (c["status"] == "skipped") {
      EXPECT_EQ(c["precision"].get<std::string>().rfind("fp8", 0), 0u) << c["name"] << " " << c["message"];
      continue;
    }
    ASSERT_EQ(c["status"], "ok") << c["name"] << " " << c["precision"] << ": " << c.value("message", "");
    EXPECT_LE(c["details"]["check"]["max_error_over_tolerance"].get<double>(), 1.0) << c["name"];
    EXPECT_GT(c["rates"]["busbw_gbps"].get<double>(), 0) << c["name"];
    checked.insert({c["params"]["collective"].get<std::string>(), c["precision"].get<std::string>()});
  }
  for (const char* collective : {"all_reduce", "reduce_scatter", "all_gather", "broadcast"})
    for (const char* dtype : {"fp32", "bf16", "fp16"})
      EXPECT_TRUE(checked.count({collective, dtype})) << collective << " " << dtype << " was not checked";
}

TEST_F(CollectiveUnderMpirun, RanksStartedWithOtherOptionsAreRefused) {
  const auto out = folder_ / "mismatch.json";
  const std::vector<std::string> base = {"run", "--suite", "collective", "--device", "cpu", "--quick", "--out", out.string()};
  std::vector<std::string> other = base;
  other.insert(other.end(), {"--precision", "fp32"});
  const Invocation r = mpirun("-np 1 " + rank_command(base) + " : -np 1 " + rank_command(other));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("rank 1 got other options than rank 0"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(CollectiveUnderMpirun, AKilledRankEndsTheJobAndRankZeroKeepsTheFinishedCases) {
  // Rank 1 runs mpbench as a child and kills it (SIGKILL: no handler, no goodbye) once rank 0 has
  // written its first finished case.
  const auto out = folder_ / "killed.json";
  const auto wrapper = folder_ / "kill_rank_1.sh";
  std::ofstream(wrapper) << "#!/bin/sh\n"
                            "if [ \"$OMPI_COMM_WORLD_RANK\" != 1 ]; then exec \"$@\"; fi\n"
                            "\"$@\" & pid=$!\n"
                            "while [ ! -s " << shell_quote(out.string()) << " ]; do sleep 0.1; done\n"
                            "kill -9 $pid\nwait $pid\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  const Invocation r = mpirun("-np 2 " + shell_quote(wrapper.string()) + " " +
                              rank_command({"run", "--suite", "collective", "--device", "cpu", "--precision", "fp32",
                                            "--out", out.string()}));
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_NE(r.status, 124) << "the rank left waited for the killed one: " << r.err;
  const nlohmann::json doc = nlohmann::json::parse(read_all(out));
  EXPECT_TRUE(doc["run"]["interrupted"].get<bool>());
  ASSERT_FALSE(doc["cases"].empty());
  EXPECT_EQ(doc["cases"][0]["status"], "ok") << doc["cases"][0].dump();
  EXPECT_LT(doc["cases"].size(), 24u) << "the full sweep's fp32 cases: the job was to be cut short";
}

}  // namespace
}  // namespace mpbench::testing
