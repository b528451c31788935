// NCCL's connection lines, as its INFO log writes them (hand-written in the formats of NCCL 2.8 to
// 2.2x), read into each peer's transports.
#include <gtest/gtest.h>

#include "core/nccl_transport_log.hpp"

namespace mpbench {
namespace {

TEST(NcclTransportLog, ReadsEachPeerOfTheRankWithItsDistinctTransportsAndChannels) {
  const std::string log =
      "gpu-a:2210:2290 [0] NCCL INFO Channel 00/02 :    0   1   2   3\n"
      "gpu-a:2210:2290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "gpu-a:2210:2290 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "gpu-a:2210:2290 [0] NCCL INFO Channel 00/0 : 3[1] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
      "gpu-a:2210:2290 [0] NCCL INFO Channel 01/0 : 0[0] -> 3[1] [send] via NET/IB/0(1)/GDRDMA\n"
      "gpu-a:2210:2290 [0] NCCL INFO Connected all rings\n";
  const nlohmann::json peers = nccl_peer_transports(log, 0);
  ASSERT_EQ(peers.size(), 2u) << peers.dump();
  EXPECT_EQ(peers[0]["rank"], 1);
  ASSERT_EQ(peers[0]["transports"].size(), 1u);
  EXPECT_EQ(peers[0]["transports"][0]["via"], "P2P/CUMEM/read");
  EXPECT_EQ(peers[0]["channels"], 2);
  EXPECT_EQ(peers[1]["rank"], 3);
  ASSERT_EQ(peers[1]["transports"].size(), 2u);
  EXPECT_EQ(peers[1]["transports"][0]["via"], "NET/IB/0/GDRDMA");
  EXPECT_EQ(peers[1]["transports"][1]["via"], "NET/IB/0(1)/GDRDMA");
  EXPECT_EQ(peers[1]["transports"][0]["kind"], "network: InfiniBand (or RoCE)");
}

TEST(NcclTransportLog, IgnoresOtherRanksConnectionsAndLinesThatAreNoConnection) {
  const std::string log =
      "h:1:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via SHM/direct/direct\n"
      "h:1:2 [1] NCCL INFO Trees [0] 1/-1/-1->0->-1\n"
      "h:1:2 [1] NCCL INFO comm 0x55d rank 0 nRanks 4 nNodes 1 localRanks 4 localRank 0 MNNVL 0\n";
  EXPECT_TRUE(nccl_peer_transports(log, 0).empty());
  EXPECT_TRUE(nccl_peer_transports("", 0).empty());
  const nlohmann::json peers = nccl_peer_transports(log, 2);
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0]["rank"], 1);
  EXPECT_EQ(peers[0]["transports"][0]["kind"], "host shared memory");
}

TEST(NcclTransportLog, ReadsTheOlderFormatWithBusIdsAndNoConnectionIndex) {
  const nlohmann::json peers = nccl_peer_transports("n:9:9 [0] NCCL INFO Channel 00 : 0[1b000] -> 1[1c000] via P2P/IPC\n"
                                                    "n:9:9 [0] NCCL INFO Channel 01 : 1[1c000] -> 0[1b000] via NET/Socket/0\n",
                                                    0);
  ASSERT_EQ(peers.size(), 1u);
  ASSERT_EQ(peers[0]["transports"].size(), 2u);
  EXPECT_EQ(peers[0]["transports"][0]["via"], "P2P/IPC");
  EXPECT_EQ(peers[0]["transports"][0]["kind"], "GPU peer-to-peer (NVLink or PCIe: NCCL's line does not say which)");
  EXPECT_EQ(peers[0]["transports"][1]["kind"], "network: TCP sockets");
  EXPECT_EQ(peers[0]["channels"], 2);
}

TEST(NcclTransportLog, NamesTransportsItDoesNotKnowAsNcclDoes) {
  EXPECT_EQ(nccl_transport_kind("NET/AWS Libfabric/0"), "network: NCCL net plugin AWS Libfabric");
  EXPECT_EQ(nccl_transport_kind("NVLS"), "as NCCL names it: NVLS");
}

}  // namespace
}  // namespace mpbench
