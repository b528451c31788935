#pragma once
// What NCCL says about its connections in its INFO log (NCCL_DEBUG=INFO, subsystem INIT): one line
// per channel and direction, e.g.
//   "host:123:456 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read"
//   "host:123:456 [0] NCCL INFO Channel 01/0 : 1[1] -> 0[0] [receive] via NET/IB/0/GDRDMA"
// Pure text handling, so that the CPU tests cover it; backends/cuda/nccl_communicator.cpp arranges
// the log and reads it.
#include <nlohmann/json.hpp>
#include <string>

namespace mpbench {

// What one of NCCL's transport names ("P2P/CUMEM/read", "SHM/direct/direct", "NET/IB/3",
// "NET/Socket/0") says about the link: "GPU peer-to-peer (NVLink or PCIe: NCCL's line does not say
// which)", "host shared memory", "network: InfiniBand (or RoCE)", "network: TCP sockets", ...
std::string nccl_transport_kind(const std::string& transport);

// The peers `rank` connected to, as its log says, in rank order: [{"rank": 1, "transports":
// [{"via": "P2P/IPC/read", "kind": nccl_transport_kind's}], "channels": 4}], each distinct transport
// once (sends and receives, every channel), in the order logged; "channels" the distinct channel
// numbers. Lines of other ranks' connections or of no connection are ignored.
nlohmann::json nccl_peer_transports(const std::string& log, int rank);

}  // namespace mpbench
