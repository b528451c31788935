#include "core/nccl_transport_log.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

namespace mpbench {

namespace {

// NCCL 2.x's format: "Channel CC[/P] : FROM[DEV] -> TO[DEV] [[send]|[receive]] via TRANSPORT"; the
// part after '/' and the bracketed device (a CUDA index, or a bus id before NCCL 2.12) vary by version.
const std::regex& connection_line() {
  static const std::regex line(R"(Channel\s+(\d+)(?:/\d+)?\s*:\s*(\d+)\[[^\]]*\]\s*->\s*(\d+)\[[^\]]*\])"
                               R"((?:\s*\[(?:send|receive)\])?\s+via\s+(\S+))");
  return line;
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

struct Peer {
  std::vector<std::string> transports;  // in the order first seen
  std::set<std::string> channels;
};

// One connection line's peer and transport, where `rank` is one end of it.
void add_connection(std::map<int, Peer>& peers, int rank, const std::smatch& m) {
  const int from = std::stoi(m[2].str()), to = std::stoi(m[3].str());
  if ((from != rank && to != rank) || from == to) return;
  Peer& peer = peers[from == rank ? to : from];
  const std::string transport = m[4].str();
  if (std::find(peer.transports.begin(), peer.transports.end(), transport) == peer.transports.end())
    peer.transports.push_back(transport);
  peer.channels.insert(m[1].str());
}

}  // namespace

std::string nccl_transport_kind(const std::string& transport) {
  if (starts_with(transport, "P2P")) return "GPU peer-to-peer (NVLink or PCIe: NCCL's line does not say which)";
  if (starts_with(transport, "SHM")) return "host shared memory";
  if (starts_with(transport, "NET/IB")) return "network: InfiniBand (or RoCE)";
  if (starts_with(transport, "NET/Socket")) return "network: TCP sockets";
  if (starts_with(transport, "NET/")) return "network: NCCL net plugin " + transport.substr(4, transport.find('/', 4) - 4);
  if (starts_with(transport, "CollNet")) return "network: CollNet (in-network reduction)";
  return "as NCCL names it: " + transport;
}

nlohmann::json nccl_peer_transports(const std::string& log, int rank) {
  std::map<int, Peer> peers;
  std::istringstream lines(log);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line))
    if (std::regex_search(line, m, connection_line())) add_connection(peers, rank, m);
  nlohmann::json result = nlohmann::json::array();
  for (const auto& [other, peer] : peers) {
    nlohmann::json transports = nlohmann::json::array();
    for (const std::string& via : peer.transports) transports.push_back({{"via", via}, {"kind", nccl_transport_kind(via)}});
    result.push_back({{"rank", other}, {"transports", transports}, {"channels", peer.channels.size()}});
  }
  return result;
}

}  // namespace mpbench
