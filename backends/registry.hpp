#pragma once
// Chooses the backend for --device and assembles the full environment of a run.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_options.hpp"
#include "core/backend.hpp"
#include "core/communicator.hpp"

namespace mpbench {

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string note;  // e.g. "no CUDA GPU found (...): --device auto falls back to the CPU"
};

// device: "auto", "cuda", "cuda:N" or "cpu"; a CPU backend is made with `cpu`. Throws UsageError
// for an unknown device or for "cuda" when no GPU is usable (saying why and suggesting --device cpu).
BackendChoice choose_backend(const std::string& device, const cpu::CpuOptions& cpu = {});
// Why the CUDA backend cannot run here; nullopt when it can.
std::optional<std::string> cuda_unavailable_reason();
bool built_with_cuda();
// Host facts plus every backend's libraries and the GPUs, whether or not a GPU is usable, with
// each device's capability table (the CPU's as `cpu` makes it: env.cpu.capabilities, and
// env.gpus[].capabilities).
nlohmann::json full_environment(const std::vector<std::string>& command_line, const cpu::CpuOptions& cpu = {});

// The job this process belongs to: MPI's world where a launcher started several processes or the
// run needs collectives (`communicates`; MPI then starts as a world of one without a launcher),
// else this process alone. Throws UsageError for several processes in a build without MPI, or
// when MPI's world is not the launcher's.
std::unique_ptr<ProcessGroup> join_job(const LaunchInfo& launch, bool communicates);
// The collectives of `backend`'s device over `group`'s ranks: MPI on the CPU, NCCL on a GPU; or
// nullptr and the reason where this build lacks the library.
std::unique_ptr<Communicator> make_communicator(Backend& backend, ProcessGroup& group, std::string* why_not);
// The communication libraries this binary has: {"mpi": {"library", "version", ...} or {"library":
// null, "reason"}, "nccl": {"version", "built_against"} or {"version": null, "reason"}}.
nlohmann::json communication_environment();

}  // namespace mpbench
