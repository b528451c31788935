#pragma once
// How MPI moves this rank's messages to each other rank, as far as Open MPI tells: which of its
// point-to-point components (a PML; for ob1, BTLs) are loaded in the process after MPI_Init, what
// selection was asked for (its MPI_T control variables `pml` and `btl`: the user's OMPI_MCA_*, else
// the system's openmpi-mca-params.conf), and per peer the transport that follows from those and
// the peer's host. Open MPI does not say per peer which BTL it chose (only in its verbose output,
// btl_base_verbose, on stderr), so the per-peer transport is inferred, and says so.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mpbench::cpu {

// Open MPI's point-to-point components found in a process's loaded objects: the PMLs, BTLs and
// MTLs (mca_pml_ob1.so: "ob1"), in the order given.
struct OpenMpiComponents {
  std::vector<std::string> pml, btl, mtl;
};
// The components among `paths` (the file names of the process's loaded objects).
OpenMpiComponents open_mpi_components(const std::vector<std::string>& paths);

// Rank `rank`'s transport to each other rank, from the loaded components and every rank's host
// (hosts[r] is rank r's): [{"rank": 1, "transport": "shared memory (btl vader)", "source": "..."}].
// `version` is Open MPI's ("4.1.4"): its btl sm is shared memory from 5.0 only (4.x's is a stub).
nlohmann::json open_mpi_peer_transports(int rank, const std::vector<std::string>& hosts,
                                        const OpenMpiComponents& loaded, const std::string& version);

// This rank's MPI interconnect: {"library": "Open MPI 4.1.4", "pml": "ob1", "btls_loaded": [...],
// "requested": {"pml": ..., "btl": ...}, "peers": [...], "source": ...}, or {"library": null,
// "reason": ...} when MPI has not been started in this process. `hosts` as above.
nlohmann::json mpi_interconnect(int rank, const std::vector<std::string>& hosts);

}  // namespace mpbench::cpu
