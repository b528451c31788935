#pragma once
// Every CUDA runtime and cuBLASLt call goes through these: a failure becomes a BackendError that
// names the call and the library's own error name and text.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string_view>

namespace mpbench::cuda {

void check(cudaError_t status, std::string_view call);
void check(cublasStatus_t status, std::string_view call);
// After a kernel launch: reports a bad launch configuration now, and any earlier asynchronous
// failure that is still pending, instead of at some later unrelated call.
void check_launch(std::string_view kernel);

}  // namespace mpbench::cuda
