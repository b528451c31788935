#pragma once
// The CUDA backend: cuBLASLt GEMMs and mpbench's own stream and cast kernels on one GPU.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/backend.hpp"

namespace mpbench::cuda {

// nullopt when a GPU is usable; otherwise why not, e.g. "no CUDA driver found (cudaGetDeviceCount: ...)".
std::optional<std::string> unavailable_reason();

// The backend on GPU `device_index`. Throws UsageError when there is no such GPU or when this
// build has no kernels for its architecture.
std::unique_ptr<Backend> make_backend(int device_index);

// {"cuda": {runtime, driver, cublas, cublaslt, cudnn, cupti, nccl}, "gpus": [...], "gpu_status": ...}.
// Works without a GPU or driver: the library versions are still listed, "gpus" is empty and
// "gpu_status" says why.
nlohmann::json environment();

}  // namespace mpbench::cuda
