#pragma once
// Chooses the backend for --device and assembles the full environment of a run.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.hpp"

namespace mpbench {

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string note;  // e.g. "no CUDA GPU found (...): --device auto falls back to the CPU"
};

// device: "auto", "cuda", "cuda:N" or "cpu". Throws UsageError for an unknown device or for
// "cuda" when no GPU is usable (saying why and suggesting --device cpu).
BackendChoice choose_backend(const std::string& device);
// Why the CUDA backend cannot run here; nullopt when it can.
std::optional<std::string> cuda_unavailable_reason();
bool built_with_cuda();
// Host facts plus every backend's libraries and the GPUs, whether or not a GPU is usable.
nlohmann::json full_environment(const std::vector<std::string>& command_line);

}  // namespace mpbench
