#pragma once
// NCCL on the GPU: collectives on device buffers, on the device context's stream (so that the
// backend's timers and the Transformer's steps see them in order). The ranks find each other
// through the process group: rank 0 makes NCCL's unique id and broadcasts it.
#include <memory>
#include <nlohmann/json.hpp>

#include "backends/cuda/cuda_device.hpp"
#include "core/communicator.hpp"

namespace mpbench::cuda {

std::unique_ptr<Communicator> make_nccl_communicator(std::shared_ptr<CudaDevice> device, ProcessGroup& group);
// {"version": the library loaded ("2.28.9"), "built_against": nccl.h's}.
nlohmann::json nccl_environment();
// Why NCCL cannot move `dtype` (runtime version code as ncclGetVersion gives it, compute capability
// major.minor), or nullopt: bf16 needs NCCL 2.10+, fp8 NCCL 2.24+ and sm_90+ (as nccl-tests filters).
std::optional<std::string> nccl_dtype_unsupported(DType dtype, int version_code, int cc_major);

}  // namespace mpbench::cuda
