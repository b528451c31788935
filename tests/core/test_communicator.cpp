// Launcher detection on hand-set environments, and the bandwidth factors of nccl-tests.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/communicator.hpp"
#include "core/error.hpp"

namespace mpbench {
namespace {

LaunchInfo launched(const std::map<std::string, std::string>& variables) {
  return detect_launch([&variables](const char* name) -> const char* {
    const auto it = variables.find(name);
    return it == variables.end() ? nullptr : it->second.c_str();
  });
}

TEST(LaunchDetection, NoLauncherIsOneProcess) {
  const LaunchInfo info = launched({{"HOME", "/root"}});
  EXPECT_EQ(info.launcher, "none");
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.local_rank, 0);
}

TEST(LaunchDetection, OpenMpi) {
  const LaunchInfo info = launched({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"},
                                    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  EXPECT_EQ(info.launcher, "mpirun");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
}

TEST(LaunchDetection, MpirunInsideASlurmAllocationIsMpirun) {
  // The step that started mpirun is one Slurm task; mpirun's ranks are the processes.
  const LaunchInfo info = launched({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_LOCALID", "0"},
                                    {"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "6"},
                                    {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}});
  EXPECT_EQ(info.launcher, "mpirun");
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, 6);
  EXPECT_EQ(info.local_rank, 2);
}

TEST(LaunchDetection, Slurm) {
  const LaunchInfo info = launched({{"SLURM_PROCID", "13"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "5"}});
  EXPECT_EQ(info.launcher, "slurm");
  EXPECT_EQ(info.rank, 13);
  EXPECT_EQ(info.world_size, 16);
  EXPECT_EQ(info.local_rank, 5);
}

TEST(LaunchDetection, TorchrunWithRendezvous) {
  const LaunchInfo info = launched({{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"},
                                    {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29500"},
                                    {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
  EXPECT_EQ(info.launcher, "torchrun");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.master_addr, "node7");
  EXPECT_EQ(info.master_port, 29500);
  EXPECT_EQ(info.to_json()["master_addr"], "node7");
}

TEST(LaunchDetection, PmiWithoutLocalRankIsOnePerNode) {
  const LaunchInfo info = launched({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}});
  EXPECT_EQ(info.launcher, "pmi");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 3);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(launched({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}, {"MPI_LOCALRANKID", "1"}}).local_rank, 1);
}

TEST(LaunchDetection, RefusesWhatCannotPlaceTheProcess) {
  const auto message = [](const std::map<std::string, std::string>& variables) {
    try {
      launched(variables);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({{"RANK", "x1"}, {"WORLD_SIZE", "2"}}).find("RANK='x1'"), std::string::npos);
  EXPECT_NE(message({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("not below WORLD_SIZE=2"), std::string::npos);
  EXPECT_NE(message({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "0"}}).find("at least 1"), std::string::npos);
  EXPECT_NE(message({{"OMPI_COMM_WORLD_RANK", "0"}}).find("not OMPI_COMM_WORLD_SIZE"), std::string::npos);
  EXPECT_NE(message({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}).find("RANK='-1'"), std::string::npos);
}

TEST(BusBandwidth, NcclTestsFactors) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::reduce_scatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_gather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 1), 0.0);
}

TEST(SingleProcessGroup, AgreesWithItself) {
  auto group = single_process_group();
  EXPECT_EQ(group->size(), 1);
  EXPECT_EQ(group->max(2.5), 2.5);
  EXPECT_TRUE(group->any(true));
  EXPECT_EQ(group->all_gather("a"), std::vector<std::string>{"a"});
  EXPECT_EQ(group->broadcast("b", 0), "b");
}

}  // namespace
}  // namespace mpbench
