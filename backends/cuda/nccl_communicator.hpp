#pragma once
// NCCL on the GPU: collectives on device buffers, on the device context's stream (so that the
// backend's timers and the Transformer's steps see them in order). The ranks find each other
// through the process group: rank 0 makes NCCL's unique id and broadcasts it.
#include <memory>
#include <nlohmann/json.hpp>

#include "backends/cuda/cuda_device.hpp"
#include "core/communicator.hpp"

namespace mpbench::cuda {

// Unless NCCL_DEBUG is set (NCCL's log is then the user's), turns NCCL's INFO log on for its INIT
// subsystem into a file of this process's before NCCL's first call, and connects the channels of a
// one-element all-reduce at once (NCCL 2.22+ connects them at a collective's first call), so that
// nccl_interconnect() can read the transports NCCL chose.
std::unique_ptr<Communicator> make_nccl_communicator(std::shared_ptr<CudaDevice> device, ProcessGroup& group);
// This process's NCCL connections as NCCL's log names them: {"library": "NCCL 2.28.9", "peers":
// core/nccl_transport_log.hpp's, "source": ...}, or {"peers": null, "reason": ...} where there is
// no communicator, the log is the user's, or it names no connection of this rank's.
nlohmann::json nccl_interconnect();
// {"version": the library loaded ("2.28.9"), "built_against": nccl.h's}.
nlohmann::json nccl_environment();
// Why NCCL cannot move `dtype` (runtime version code as ncclGetVersion gives it, compute capability
// major.minor), or nullopt: bf16 needs NCCL 2.10+, fp8 NCCL 2.24+ and sm_90+ (as nccl-tests filters).
std::optional<std::string> nccl_dtype_unsupported(DType dtype, int version_code, int cc_major);

}  // namespace mpbench::cuda
