#include "backends/cpu/mpi_transport.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <link.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "backends/cpu/mpi_communicator.hpp"
#include "core/error.hpp"

namespace mpbench::cpu {

namespace {

void check_mpi_t(int status, const char* call) {
  if (status != MPI_SUCCESS) throw BackendError(fmt::format("{} failed (MPI_T error {})", call, status));
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The BTL that ob1 sends to a peer on the same host through: Open MPI prefers its shared-memory
// BTL (the highest exclusivity) where it is loaded; vader up to 4.x, named sm from 5.0.
std::string same_host_btl(const OpenMpiComponents& loaded, const std::string& version) {
  if (has(loaded.btl, "vader")) return "vader";
  if (has(loaded.btl, "sm") && std::atoi(version.c_str()) >= 5) return "sm";
  return "";
}

// The BTLs that reach other hosts: every loaded one but self and the shared-memory ones.
std::vector<std::string> network_btls(const OpenMpiComponents& loaded) {
  std::vector<std::string> network;
  for (const std::string& b : loaded.btl)
    if (b != "self" && b != "vader" && b != "sm" && b != "smcuda") network.push_back(b);
  return network;
}

std::string btl_transport(const std::string& btl) {
  if (btl == "vader" || btl == "sm") return fmt::format("shared memory (btl {})", btl);
  if (btl == "tcp") return "TCP (btl tcp)";
  if (btl == "openib" || btl == "uct") return fmt::format("InfiniBand / RDMA (btl {})", btl);
  return fmt::format("btl {}", btl);
}

// One peer under ob1: shared memory on the same host where loaded, else what the network BTLs give.
nlohmann::json ob1_peer(bool same_host, const OpenMpiComponents& loaded, const std::string& version) {
  const std::string where = same_host ? "same host as this rank" : "another host";
  const std::string shared = same_host ? same_host_btl(loaded, version) : "";
  if (!shared.empty())
    return {{"transport", btl_transport(shared)},
            {"source", fmt::format("inferred: {}; pml ob1 with btl {} loaded, which Open MPI prefers for "
                                   "peers on one host", where, shared)}};
  const std::vector<std::string> network = network_btls(loaded);
  if (network.empty())
    return {{"transport", nullptr}, {"source", fmt::format("{}; no loaded btl reaches it", where)}};
  std::vector<std::string> named;
  for (const std::string& b : network) named.push_back(btl_transport(b));
  return {{"transport", fmt::format("{}", fmt::join(named, " + "))},
          {"source", fmt::format("inferred: {}; the btls loaded besides self and shared memory", where)}};
}

// What the PML that is not ob1 does per peer is its own choice, which Open MPI does not tell.
nlohmann::json other_pml_peer(const OpenMpiComponents& loaded) {
  const std::string pml = loaded.pml.empty() ? "" : loaded.pml.front();
  const std::string what = pml == "cm" && !loaded.mtl.empty() ? fmt::format("pml cm, mtl {}", loaded.mtl.front())
                                                              : fmt::format("pml {}", pml);
  return {{"transport", nullptr},
          {"source", pml.empty() ? "no Open MPI pml loaded in the process"
                                 : fmt::format("{} chooses shared memory or the network per peer itself; Open MPI "
                                               "does not say which", what)}};
}

std::vector<std::string> loaded_object_paths() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        if (info->dlpi_name && *info->dlpi_name) static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
        return 0;
      },
      &paths);
  return paths;
}

// A string control variable of Open MPI's (MPI_T), e.g. "btl": "^uct,openib,ofi".
nlohmann::json string_cvar(const char* name) {
  int index = 0;
  const int found = MPI_T_cvar_get_index(name, &index);
  if (found == MPI_T_ERR_INVALID_NAME) return nullptr;  // no such variable in this Open MPI
  check_mpi_t(found, "MPI_T_cvar_get_index");
  MPI_T_cvar_handle handle{};
  int count = 0;
  check_mpi_t(MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count), "MPI_T_cvar_handle_alloc");
  std::string value(static_cast<std::size_t>(std::max(count, 1)), '\0');
  const int read = MPI_T_cvar_read(handle, value.data());
  check_mpi_t(MPI_T_cvar_handle_free(&handle), "MPI_T_cvar_handle_free");
  check_mpi_t(read, "MPI_T_cvar_read");
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  return value;
}

// The selections asked for, as Open MPI's tool interface reads them.
nlohmann::json requested_selection() {
  int provided = 0;
  check_mpi_t(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), "MPI_T_init_thread");
  nlohmann::json requested = {{"pml", string_cvar("pml")}, {"btl", string_cvar("btl")},
                              {"source", "Open MPI's MPI_T control variables pml and btl"}};
  check_mpi_t(MPI_T_finalize(), "MPI_T_finalize");
  return requested;
}

}  // namespace

OpenMpiComponents open_mpi_components(const std::vector<std::string>& paths) {
  static const std::regex component(R"((?:^|/)mca_(pml|btl|mtl)_([A-Za-z0-9]+)\.so$)");
  OpenMpiComponents found;
  std::smatch m;
  for (const std::string& path : paths) {
    if (!std::regex_search(path, m, component)) continue;
    auto& list = m[1] == "pml" ? found.pml : m[1] == "btl" ? found.btl : found.mtl;
    if (!has(list, m[2].str())) list.push_back(m[2].str());
  }
  return found;
}

nlohmann::json open_mpi_peer_transports(int rank, const std::vector<std::string>& hosts,
                                        const OpenMpiComponents& loaded, const std::string& version) {
  const std::string& own = hosts.at(static_cast<std::size_t>(rank));
  const bool ob1 = loaded.pml.size() == 1 && loaded.pml.front() == "ob1";
  nlohmann::json peers = nlohmann::json::array();
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    if (static_cast<int>(r) == rank) continue;
    nlohmann::json peer = ob1 ? ob1_peer(hosts[r] == own, loaded, version) : other_pml_peer(loaded);
    peer["rank"] = r;
    peer["host"] = hosts[r];
    peers.push_back(std::move(peer));
  }
  return peers;
}

nlohmann::json mpi_interconnect(int rank, const std::vector<std::string>& hosts) {
  int started = 0;
  if (MPI_Initialized(&started) != MPI_SUCCESS || !started)
    return {{"library", nullptr}, {"reason", "MPI was not started in this run (one process without the collective suite)"}};
  const nlohmann::json env = mpi_environment();
  const std::string library = env.value("library", "");
  if (library != "Open MPI")
    return {{"library", library}, {"reason", "only Open MPI's components are read; this MPI's transports are not"}};
  const std::string version = env.value("version", "");
  const OpenMpiComponents loaded = open_mpi_components(loaded_object_paths());
  return {{"library", fmt::format("Open MPI {}", version)},
          {"pml", loaded.pml.size() == 1 ? nlohmann::json(loaded.pml.front()) : nlohmann::json(nullptr)},
          {"btls_loaded", loaded.btl},
          {"mtls_loaded", loaded.mtl},
          {"source", "Open MPI's mca_pml_*, mca_btl_*, mca_mtl_* components loaded in the process after MPI_Init "
                     "(Open MPI unloads the PMLs it did not select; a loaded btl may serve no peer)"},
          {"requested", requested_selection()},
          {"peers", open_mpi_peer_transports(rank, hosts, loaded, version)}};
}

}  // namespace mpbench::cpu
