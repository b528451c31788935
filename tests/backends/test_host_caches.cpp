// The host's caches as sysfs lists them, and how much of them a run's threads can fill: a VM's
// reported host L3 is cut to what its logical CPUs can hold, a real CPU's report is taken whole.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/reference/host_caches.hpp"
#include "backends/reference/reference_backend.hpp"

namespace mpbench {
namespace {

namespace fs = std::filesystem;
using host::CacheLevel;

constexpr std::uint64_t kKiB = 1024, kMiB = 1024 * 1024;

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("mpbench_caches_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void index(int i, const std::string& level, const std::string& type, const std::string& size,
             const std::string& shared) {
    const fs::path dir = root_ / "cpu0" / "cache" / ("index" + std::to_string(i));
    fs::create_directories(dir);
    for (const auto& [name, value] : {std::pair{"level", level}, std::pair{"type", type}, std::pair{"size", size},
                                      std::pair{"shared_cpu_list", shared}})
      std::ofstream(dir / name) << value << "\n";
  }
  fs::path root_;
};

TEST_F(FakeSysfs, ReadsDataAndUnifiedLevelsInOrder) {
  // This project's VM, as its sysfs reads.
  index(0, "1", "Data", "48K", "0");
  index(1, "1", "Instruction", "64K", "0");
  index(3, "3", "Unified", "491520K", "0-1");
  index(2, "2", "Unified", "2048K", "0");
  const auto levels = host::read_cache_levels(root_);
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].level, 1);
  EXPECT_EQ(levels[0].type, "Data");
  EXPECT_EQ(levels[0].bytes, 48 * kKiB);
  EXPECT_EQ(levels[1].bytes, 2 * kMiB);
  EXPECT_EQ(levels[1].sharing_cpus, 1);
  EXPECT_EQ(levels[2].bytes, 480 * kMiB);
  EXPECT_EQ(levels[2].sharing_cpus, 2);
}

TEST_F(FakeSysfs, CountsCpuListsWithRangesAndCommas) {
  index(0, "3", "Unified", "32M", "0-7,64-71");
  index(1, "2", "Unified", "1024K", "0,64");
  const auto levels = host::read_cache_levels(root_);
  ASSERT_EQ(levels.size(), 2u);
  EXPECT_EQ(levels[0].sharing_cpus, 2);
  EXPECT_EQ(levels[1].sharing_cpus, 16);
  EXPECT_EQ(levels[1].bytes, 32 * kMiB);
}

TEST_F(FakeSysfs, NoCacheFolderGivesNoLevels) { EXPECT_TRUE(host::read_cache_levels(root_).empty()); }

TEST(UsableCache, AVmsHostL3IsCutToWhatItsCpusCanHold) {
  const std::vector<CacheLevel> vm = {{1, "Data", 48 * kKiB, 1}, {2, "Unified", 2 * kMiB, 1},
                                      {3, "Unified", 480 * kMiB, 2}};
  const auto two = host::usable_cache(vm, 2, 2);
  EXPECT_EQ(two.bytes, 2 * 48 * kKiB + 2 * 2 * kMiB + 2 * host::kMostCachePerCpu);
  EXPECT_NE(two.basis.find("480 MiB"), std::string::npos) << two.basis;
  EXPECT_NE(two.basis.find("counted as 96 MiB"), std::string::npos) << two.basis;
  // One thread fills one core's private caches, and the shared L3 all the same.
  EXPECT_EQ(host::usable_cache(vm, 1, 2).bytes, 48 * kKiB + 2 * kMiB + 2 * host::kMostCachePerCpu);
}

TEST(UsableCache, ARealCpusReportIsTakenWhole) {
  // An EPYC of 64 cores (128 logical CPUs): 32 MiB of L3 per 8 cores, 1 MiB of L2 per core.
  const std::vector<CacheLevel> epyc = {{2, "Unified", 1 * kMiB, 2}, {3, "Unified", 32 * kMiB, 16}};
  const auto one = host::usable_cache(epyc, 1, 128);
  EXPECT_EQ(one.bytes, 1 * kMiB + 32 * kMiB);
  EXPECT_EQ(one.basis.find("counted as"), std::string::npos) << one.basis;
  // 16 threads may spread over 8 of the 8 L3s and 16 of the 64 L2s.
  EXPECT_EQ(host::usable_cache(epyc, 16, 128).bytes, 16 * kMiB + 8 * 32 * kMiB);
  EXPECT_EQ(host::usable_cache(epyc, 1000, 128).bytes, 64 * kMiB + 8 * 32 * kMiB);
}

TEST(UsableCache, NoLevelsAssumes32MiBAndSaysSo) {
  const auto none = host::usable_cache({}, 2, 2);
  EXPECT_EQ(none.bytes, 32 * kMiB);
  EXPECT_NE(none.basis.find("assumed"), std::string::npos);
}

TEST(UsableCache, TheBackendsRecordTheirs) {
  reference::ReferenceBackend reference;
  auto cpu = cpu::make_backend();
  const auto levels = host::read_cache_levels();
  const int cpus = cpu->device().multiprocessors;
  EXPECT_EQ(reference.device().usable_cache_bytes, host::usable_cache(levels, 1, cpus).bytes);
  EXPECT_GE(cpu->device().usable_cache_bytes, reference.device().usable_cache_bytes);
  EXPECT_FALSE(cpu->device().usable_cache_basis.empty());
  EXPECT_EQ(cpu->device().to_json()["usable_cache_bytes"], cpu->device().usable_cache_bytes);
}

}  // namespace
}  // namespace mpbench
