// env.ranks[*].interconnect: the transport between two ranks on one host as mpbench records it,
// against what Open MPI itself says in its verbose output (btl_base_verbose: "mca: bml: Using vader
// btl for send to [[job,1],1] on node ..."), by default and with OMPI_MCA_btl=self,tcp; and the
// inference from loaded components and hosts on its own, for what one host cannot show.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <utility>

#include "run_mpbench.hpp"
#if MPBENCH_HAVE_MPI
#include "backends/cpu/mpi_transport.hpp"
#endif

namespace mpbench::testing {
namespace {

// (sending process id, receiving rank) -> the BTL Open MPI's bml says it uses, from its stderr lines
// "[host:PID] mca: bml: Using BTL btl for send to [[JOB,1],RANK] on node HOST".
std::map<std::pair<long, int>, std::string> btls_open_mpi_said(const std::string& err) {
  static const std::regex line(R"(\[[^\]:]+:(\d+)\] mca: bml: Using (\w+) btl for send to \[\[\d+,\d+\],(\d+)\])");
  std::map<std::pair<long, int>, std::string> said;
  for (auto it = std::sregex_iterator(err.begin(), err.end(), line); it != std::sregex_iterator(); ++it)
    said[{std::stol((*it)[1].str()), std::stoi((*it)[3].str())}] = (*it)[2].str();
  return said;
}

class InterconnectUnderMpirun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(MPBENCH_MPIEXEC).empty() || !std::filesystem::exists(MPBENCH_MPIEXEC))
      GTEST_SKIP() << "no mpirun at build time (install openmpi-bin): the 2-rank interconnect tests need it";
    folder_ = std::filesystem::temp_directory_path() / ("mpbench-interconnect-" + std::to_string(::getpid()));
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override {
    if (!folder_.empty()) std::filesystem::remove_all(folder_);
  }
  // One quick collective case on 2 ranks with `environment` (VAR=VALUE ..., or none) and Open MPI's bml
  // verbose: the document's env.ranks, each rank's peer checked against what Open MPI said.
  nlohmann::json ranks_checked_against_open_mpi(const std::string& environment) const {
    const auto out = folder_ / "doc.json", err = folder_ / "err.txt";
    const std::string command = "timeout 300 " + shell_quote(MPBENCH_MPIEXEC) + " --oversubscribe --allow-run-as-root -np 2 env " +
                                environment + " OMPI_MCA_btl_base_verbose=1 " + shell_quote(mpbench_binary()) +
                                " run --suite collective --device cpu --quick --filter 'all_reduce/.*fp32' --out " +
                                shell_quote(out.string()) + " >/dev/null 2>" + shell_quote(err.string());
    const int raw = std::system(command.c_str());
    const std::string errors = read_all(err);
    EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << errors;
    if (!std::filesystem::exists(out)) return nullptr;
    const nlohmann::json ranks = nlohmann::json::parse(read_all(out))["env"]["ranks"];
    const auto said = btls_open_mpi_said(errors);
    for (const auto& r : ranks) {
      const nlohmann::json& mpi = r["interconnect"]["mpi"];
      EXPECT_EQ(mpi["pml"], "ob1") << mpi.dump();
      EXPECT_EQ(mpi["library"].get<std::string>().rfind("Open MPI ", 0), 0u) << mpi.dump();
      EXPECT_EQ(mpi["peers"].size(), 1u) << mpi.dump();
      for (const auto& peer : mpi["peers"]) {
        const auto btl = said.find({r["pid"].get<long>(), peer["rank"].get<int>()});
        if (btl == said.end()) {
          ADD_FAILURE() << "Open MPI said nothing of rank " << r["rank"] << " to " << peer["rank"] << ": " << errors;
          continue;
        }
        EXPECT_NE(peer["transport"].get<std::string>().find("(btl " + btl->second + ")"), std::string::npos)
            << peer.dump() << " but Open MPI said " << btl->second;
        EXPECT_EQ(peer["source"].get<std::string>().rfind("inferred: same host", 0), 0u) << peer.dump();
      }
      EXPECT_TRUE(r["interconnect"]["nccl"]["peers"].is_null());
      EXPECT_FALSE(r["interconnect"]["nccl"]["reason"].get<std::string>().empty());
    }
    return ranks;
  }
  std::filesystem::path folder_;
};

TEST_F(InterconnectUnderMpirun, TwoRanksOnOneHostTalkThroughSharedMemoryByDefault) {
  const nlohmann::json ranks = ranks_checked_against_open_mpi("");
  ASSERT_EQ(ranks.size(), 2u);
  for (const auto& r : ranks)
    EXPECT_EQ(r["interconnect"]["mpi"]["peers"][0]["transport"].get<std::string>().rfind("shared memory (btl ", 0), 0u)
        << r["interconnect"].dump();
}

TEST_F(InterconnectUnderMpirun, TwoRanksOnOneHostTalkThroughTcpWhenOnlyItIsAllowed) {
  const nlohmann::json ranks = ranks_checked_against_open_mpi("OMPI_MCA_btl=self,tcp");
  ASSERT_EQ(ranks.size(), 2u);
  for (const auto& r : ranks) {
    EXPECT_EQ(r["interconnect"]["mpi"]["peers"][0]["transport"], "TCP (btl tcp)") << r["interconnect"].dump();
    EXPECT_EQ(r["interconnect"]["mpi"]["requested"]["btl"], "self,tcp");
  }
}

#if MPBENCH_HAVE_MPI
TEST(OpenMpiTransportInference, FindsComponentsByTheirFileNames) {
  const cpu::OpenMpiComponents found = cpu::open_mpi_components(
      {"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so", "/x/mca_btl_vader.so", "/x/mca_btl_tcp.so",
       "/x/libmca_common_sm.so.40.30.0", "/x/mca_coll_tuned.so", "/x/mca_mtl_psm2.so", "/lib/libc.so.6"});
  EXPECT_EQ(found.pml, std::vector<std::string>{"ob1"});
  EXPECT_EQ(found.btl, (std::vector<std::string>{"vader", "tcp"}));
  EXPECT_EQ(found.mtl, std::vector<std::string>{"psm2"});
}

TEST(OpenMpiTransportInference, PeersOnOtherHostsGoThroughTheNetworkBtlsAndOtherPmlsAreNotGuessed) {
  const cpu::OpenMpiComponents ob1{{"ob1"}, {"tcp", "vader", "self", "sm"}, {}};
  const nlohmann::json peers = cpu::open_mpi_peer_transports(0, {"a", "a", "b"}, ob1, "4.1.4");
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_EQ(peers[0]["transport"], "shared memory (btl vader)");
  EXPECT_EQ(peers[1]["rank"], 2);
  EXPECT_EQ(peers[1]["transport"], "TCP (btl tcp)");
  EXPECT_EQ(peers[1]["source"].get<std::string>().rfind("inferred: another host", 0), 0u);
  // 4.x's btl sm is a stub that refuses to run: no shared memory without vader.
  const cpu::OpenMpiComponents stub{{"ob1"}, {"self", "sm"}, {}};
  EXPECT_TRUE(cpu::open_mpi_peer_transports(1, {"a", "a"}, stub, "4.1.4")[0]["transport"].is_null());
  EXPECT_EQ(cpu::open_mpi_peer_transports(1, {"a", "a"}, stub, "5.0.3")[0]["transport"], "shared memory (btl sm)");
  const cpu::OpenMpiComponents ucx{{"ucx"}, {}, {}};
  const nlohmann::json by_ucx = cpu::open_mpi_peer_transports(0, {"a", "b"}, ucx, "4.1.4");
  EXPECT_TRUE(by_ucx[0]["transport"].is_null());
  EXPECT_NE(by_ucx[0]["source"].get<std::string>().find("pml ucx"), std::string::npos);
}
#endif

}  // namespace
}  // namespace mpbench::testing
