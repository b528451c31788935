// Built instead of cudnn_attention.cpp when CMake found no cuDNN frontend headers.
#include "core/error.hpp"
#include "workloads/cuda/fused_attention.hpp"

namespace mpbench::workloads {

namespace {
constexpr const char* kReason =
    "this build has no fused attention: it was configured without the cuDNN frontend headers (scripts/setup.sh "
    "fetches them when nvcc is found; then reconfigure)";
}

std::optional<std::string> fused_attention_unavailable() { return kReason; }

std::unique_ptr<FusedAttention> make_fused_attention(cudaStream_t, WorkspaceProvider) { throw BackendError(kReason); }

}  // namespace mpbench::workloads
