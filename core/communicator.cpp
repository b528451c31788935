#include "core/communicator.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"

namespace mpbench {

namespace {

// The variable's value as a whole number, or nullopt when it is not set.
std::optional<long> number(const EnvironmentLookup& lookup, const char* name) {
  const char* text = lookup(name);
  if (!text) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || errno == ERANGE || value < 0 || value > 1'000'000)
    throw UsageError(fmt::format("the launcher's {}='{}' is not a rank or process count", name, printable(text)));
  return value;
}

struct LauncherVariables {
  const char* launcher;
  const char *rank, *size, *local_rank;
};

// In the order they are tried: mpirun inside a Slurm allocation sets Slurm's variables too (of the
// step that started mpirun), and torchrun's workers inherit them from an srun that started
// torchrun, so the launcher closest to the process comes first.
constexpr LauncherVariables kLaunchers[] = {
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
};

LaunchInfo from_variables(const LauncherVariables& v, long rank, long size, const EnvironmentLookup& lookup) {
  if (size < 1) throw UsageError(fmt::format("the launcher's {}={} must be at least 1", v.size, size));
  if (rank >= size)
    throw UsageError(fmt::format("the launcher's {}={} is not below {}={}", v.rank, rank, v.size, size));
  LaunchInfo info;
  info.launcher = v.launcher;
  info.rank = static_cast<int>(rank);
  info.world_size = static_cast<int>(size);
  // A launcher that names no local rank (PMI outside Hydra) starts one process per node.
  info.local_rank = static_cast<int>(number(lookup, v.local_rank).value_or(0));
  if (info.launcher == "torchrun") {
    if (const char* addr = lookup("MASTER_ADDR")) info.master_addr = addr;
    info.master_port = static_cast<int>(number(lookup, "MASTER_PORT").value_or(0));
  }
  return info;
}

}  // namespace

nlohmann::json LaunchInfo::to_json() const {
  nlohmann::json j = {{"launcher", launcher}, {"rank", rank}, {"world_size", world_size}, {"local_rank", local_rank}};
  if (!master_addr.empty()) j["master_addr"] = master_addr;
  if (master_port) j["master_port"] = master_port;
  return j;
}

LaunchInfo detect_launch(const EnvironmentLookup& lookup) {
  for (const LauncherVariables& v : kLaunchers) {
    const std::optional<long> rank = number(lookup, v.rank), size = number(lookup, v.size);
    if (!rank && !size) continue;
    if (!rank || !size)
      throw UsageError(fmt::format("the launcher set {} but not {}: both are needed to place this process",
                                   rank ? v.rank : v.size, rank ? v.size : v.rank));
    return from_variables(v, *rank, *size, lookup);
  }
  return LaunchInfo{};
}

LaunchInfo detect_launch() {
  return detect_launch([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

namespace {

class SingleProcess final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void barrier() override {}
  double max(double value) override { return value; }
  std::vector<std::string> all_gather(const std::string& text) override { return {text}; }
  std::string broadcast(const std::string& text, int) override { return text; }

 protected:
  void abort_job(int) override {}
};

}  // namespace

void ProcessGroup::abort(int exit_code) {
  std::fflush(stderr);
  abort_job(exit_code);
  std::_Exit(exit_code);
}

std::unique_ptr<ProcessGroup> single_process_group() { return std::make_unique<SingleProcess>(); }

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_gather: return "all_gather";
    case Collective::broadcast: return "broadcast";
  }
  return "?";
}

const std::vector<Collective>& collectives() {
  static const std::vector<Collective> all = {Collective::all_reduce, Collective::reduce_scatter,
                                              Collective::all_gather, Collective::broadcast};
  return all;
}

namespace {
struct FinishedRequest final : CollectiveRequest {
  bool test() override { return true; }
  void wait() override {}
};
}  // namespace

std::unique_ptr<CollectiveRequest> Communicator::start_all_reduce_sum(const DeviceBuffer& send, DeviceBuffer& receive,
                                                                      std::size_t count) {
  all_reduce_sum(send, receive, count);
  return std::make_unique<FinishedRequest>();
}

double bus_bandwidth_factor(Collective c, int world_size) {
  const double n = world_size;
  switch (c) {
    case Collective::all_reduce: return 2.0 * (n - 1) / n;
    case Collective::reduce_scatter:
    case Collective::all_gather: return (n - 1) / n;
    case Collective::broadcast: return 1.0;
  }
  return 1.0;
}

}  // namespace mpbench
