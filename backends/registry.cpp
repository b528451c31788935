#include "backends/registry.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "backends/cpu/cpu_backend.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#if MPBENCH_HAVE_CUDA
#include "backends/cuda/cuda_backend.hpp"
#endif
#if MPBENCH_HAVE_MPI
#include "backends/cpu/mpi_communicator.hpp"
#endif
#if MPBENCH_HAVE_NCCL
#include "backends/cuda/nccl_communicator.hpp"
#endif

namespace mpbench {

bool built_with_cuda() { return MPBENCH_HAVE_CUDA; }

std::optional<std::string> cuda_unavailable_reason() {
#if MPBENCH_HAVE_CUDA
  return cuda::unavailable_reason();
#else
  return "mpbench was built without the CUDA backend (no CUDA toolkit at build time, or MPBENCH_WITH_CUDA=OFF)";
#endif
}

namespace {
std::unique_ptr<Backend> make_cuda(int index) {
#if MPBENCH_HAVE_CUDA
  return cuda::make_backend(index);
#else
  (void)index;
  return nullptr;
#endif
}

int parse_cuda_index(const std::string& device) {
  if (device == "cuda") return 0;
  const bool digits = device.size() > 5 && device.compare(0, 5, "cuda:") == 0 &&
                      std::all_of(device.begin() + 5, device.end(), [](char c) { return c >= '0' && c <= '9'; });
  try {
    if (digits) return std::stoi(device.substr(5));
  } catch (const std::out_of_range&) {
  }
  throw UsageError(fmt::format("bad device '{}': use cuda or cuda:N with N a GPU index", device));
}
}  // namespace

BackendChoice choose_backend(const std::string& device, const cpu::CpuOptions& cpu_options) {
  if (device == "cpu") return {cpu::make_backend(cpu_options), ""};
  if (device == "auto") {
    if (auto why = cuda_unavailable_reason())
      return {cpu::make_backend(cpu_options), fmt::format("{}: --device auto falls back to the CPU", *why)};
    // A GPU that is there but cannot be set up (no kernel image for it, no memory left) is not
    // usable either: auto says why and goes on where it can.
    const auto fall_back = [&cpu_options](const std::exception& e) {
      return BackendChoice{cpu::make_backend(cpu_options),
                           fmt::format("GPU 0 is not usable ({}): --device auto falls back to the CPU", e.what())};
    };
    try {
      return {make_cuda(0), ""};
    } catch (const UsageError& e) {  // under auto, only this build's kernel images not fitting GPU 0
      return fall_back(e);
    } catch (const BackendError& e) {
      return fall_back(e);
    } catch (const OutOfMemoryError& e) {
      return fall_back(e);
    }
  }
  if (device.rfind("cuda", 0) == 0) {
    const int index = parse_cuda_index(device);
    if (auto why = cuda_unavailable_reason())
      throw UsageError(fmt::format("--device {}: {}; use --device cpu or --device auto", device, *why));
    return {make_cuda(index), ""};
  }
  throw UsageError(fmt::format("unknown device '{}': use auto, cuda, cuda:N or cpu", device));
}

nlohmann::json full_environment(const std::vector<std::string>& command_line, const cpu::CpuOptions& cpu_options) {
  nlohmann::json env = host_environment(command_line);
  const nlohmann::json cpu_backend = cpu::make_backend(cpu_options)->environment();
  env["onednn"] = cpu_backend["onednn"];
  env["cpu"]["element_loops"] = cpu_backend["element_loops"];
  env["cpu"]["threads"] = cpu_backend["threads"];
  env["cpu"]["gemm_path_choice"] = cpu_backend["gemm_path_choice"];
  env["cpu"]["capabilities"] = cpu_backend["capabilities"];
#if MPBENCH_HAVE_CUDA
  const nlohmann::json cuda_env = cuda::environment();
  env["cuda"] = cuda_env.value("cuda", nlohmann::json::object());
  env["gpus"] = cuda_env.value("gpus", nlohmann::json::array());
  if (cuda_env.contains("gpu_status")) env["gpu_status"] = cuda_env["gpu_status"];
#else
  env["cuda"] = nlohmann::json::object();
  env["gpus"] = nlohmann::json::array();
#endif
  if (env["gpus"].empty() && !env.contains("gpu_status"))
    env["gpu_status"] = cuda_unavailable_reason().value_or("no GPU listed");
  const nlohmann::json communication = communication_environment();
  env["mpi"] = communication["mpi"];
  env["nccl"] = communication["nccl"];
  return env;
}

namespace {
constexpr const char* kNoMpi =
    "mpbench was built without MPI (install libopenmpi-dev and openmpi-bin, then build again)";
constexpr const char* kNoNccl =
    "mpbench was built without NCCL (no nccl.h and libnccl next to the CUDA toolkit at build time)";
}  // namespace

std::unique_ptr<ProcessGroup> join_job(const LaunchInfo& launch, bool communicates) {
#if MPBENCH_HAVE_MPI
  if (launch.world_size > 1 || communicates) return cpu::join_mpi_world(launch);
#else
  (void)communicates;
  if (launch.world_size > 1)
    throw UsageError(fmt::format("{} started {} processes, but {}", launch.launcher, launch.world_size, kNoMpi));
#endif
  return single_process_group();
}

std::unique_ptr<Communicator> make_communicator(Backend& backend, ProcessGroup& group, std::string* why_not) {
  (void)group;
  if (backend.device().backend == "cpu") {
#if MPBENCH_HAVE_MPI
    return cpu::make_mpi_communicator();
#else
    *why_not = kNoMpi;
    return nullptr;
#endif
  }
#if MPBENCH_HAVE_NCCL
  if (auto* gpu = dynamic_cast<cuda::CudaBackend*>(&backend)) return cuda::make_nccl_communicator(gpu->device_context(), group);
#endif
  *why_not = backend.device().backend == "cuda" ? kNoNccl : fmt::format("no collectives on the {} backend", backend.device().backend);
  return nullptr;
}

nlohmann::json communication_environment() {
  nlohmann::json env;
#if MPBENCH_HAVE_MPI
  env["mpi"] = cpu::mpi_environment();
#else
  env["mpi"] = {{"library", nullptr}, {"version", nullptr}, {"reason", kNoMpi}};
#endif
#if MPBENCH_HAVE_NCCL
  env["nccl"] = cuda::nccl_environment();
#else
  env["nccl"] = {{"version", nullptr}, {"reason", kNoNccl}};
#endif
  return env;
}

}  // namespace mpbench
