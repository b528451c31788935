#pragma once
// Several processes working on one job: where a process stands in it (the launcher's variables),
// the host-side agreement between the processes (ProcessGroup) and the collectives on device
// buffers (Communicator). The engines are the libraries' own: MPI on CPUs, NCCL on GPUs
// (backends/cpu/mpi_communicator.hpp, backends/cuda/nccl_communicator.hpp); never a transport of
// mpbench's own.
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/dtype.hpp"

namespace mpbench {

// Where this process stands in the job, as its launcher said it.
struct LaunchInfo {
  std::string launcher = "none";  // "mpirun", "pmi", "slurm", "torchrun" or "none"
  int rank = 0, world_size = 1, local_rank = 0;
  std::string master_addr;  // torchrun's rendezvous host and port, where given
  int master_port = 0;
  nlohmann::json to_json() const;
};

// Reads an environment variable: nullptr when it is not set.
using EnvironmentLookup = std::function<const char*(const char*)>;

// The launcher's variables, first match wins: Open MPI's OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK, then
// torchrun's RANK/WORLD_SIZE/LOCAL_RANK (with MASTER_ADDR/MASTER_PORT), then Slurm's SLURM_PROCID/
// SLURM_NTASKS/SLURM_LOCALID, then PMI's PMI_RANK/PMI_SIZE (MPICH's Hydra; its local rank is
// MPI_LOCALRANKID where set). mpirun under Slurm sets both OMPI's and Slurm's: the process's own
// (OMPI's) count. None set: world size 1, rank 0. Throws UsageError for a value that is not a
// number, a rank outside [0, world size) or a world size below 1, naming the variable.
LaunchInfo detect_launch(const EnvironmentLookup& lookup);
LaunchInfo detect_launch();  // of this process's environment

// The processes of one job agreeing on host values: which rank failed a check, whether every rank
// was started alike, who runs where. Every call is collective: each rank makes it, in the same order.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void barrier() = 0;
  virtual double max(double value) = 0;
  // Every rank's `text`, in rank order, on every rank.
  virtual std::vector<std::string> all_gather(const std::string& text) = 0;
  // Rank `root`'s text, on every rank.
  virtual std::string broadcast(const std::string& text, int root) = 0;
  bool any(bool value) { return max(value ? 1.0 : 0.0) > 0; }
  // Ends every rank of the job with `exit_code`, now: what one rank cannot go on with must not
  // leave the others waiting in a collective. This process exits even should the library's abort
  // return.
  [[noreturn]] void abort(int exit_code);

 protected:
  virtual void abort_job(int exit_code) = 0;
};

// One process alone: world size 1, every agreement its own value.
std::unique_ptr<ProcessGroup> single_process_group();

enum class Collective { all_reduce, reduce_scatter, all_gather, broadcast };
std::string_view collective_name(Collective c);  // "all_reduce", ...
const std::vector<Collective>& collectives();
// nccl-tests' bus bandwidth factor: busbw = algbw * factor. all_reduce 2(n-1)/n, reduce_scatter
// and all_gather (n-1)/n, broadcast 1.
double bus_bandwidth_factor(Collective c, int world_size);

// A collective started without waiting (Communicator::start_all_reduce_sum): its buffers must be
// left alone, neither read nor written, until test() has said true or wait() has returned.
class CollectiveRequest {
 public:
  virtual ~CollectiveRequest() = default;
  // Lets the library progress the collective (MPI_Test; a CUDA event query); true once it is done.
  virtual bool test() = 0;
  // Returns when the collective is done (on the device: work queued after it on the backend's
  // stream runs after it).
  virtual void wait() = 0;
};

// Collectives on the backend's device buffers (host memory on the CPU, device memory on a GPU),
// in place of each rank's part. Reductions are sums. Counts are elements.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string library() const = 0;  // "MPI (Open MPI 4.1.4)", "NCCL 2.28.9"
  // Why `dtype` cannot travel in `c` here (library version, GPU generation), or nullopt.
  virtual std::optional<std::string> unsupported(Collective c, DType dtype) const = 0;
  // How the library reduces `dtype`: "native" or what it does instead, e.g. "user-defined MPI_Op:
  // fp32 accumulation per element, rounded to bf16".
  virtual std::string reduction(DType dtype) const = 0;
  // send and receive hold `count` elements each (receive may be send: in place).
  virtual void all_reduce_sum(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) = 0;
  // The same, started without waiting: NCCL on a communication stream of its own, after the work
  // queued so far on the backend's stream; MPI with MPI_Iallreduce, progressed by the request's
  // test() and wait(). Every rank starts its non-blocking collectives in the same order. The
  // default runs all_reduce_sum at once and returns a finished request.
  virtual std::unique_ptr<CollectiveRequest> start_all_reduce_sum(const DeviceBuffer& send, DeviceBuffer& receive,
                                                                   std::size_t count);
  // send holds size() * count elements; receive gets this rank's `count` of their sum.
  virtual void reduce_scatter_sum(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) = 0;
  // send holds `count`; receive gets size() * count, rank r's at r * count.
  virtual void all_gather(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) = 0;
  virtual void broadcast(DeviceBuffer& buffer, std::size_t count, int root) = 0;
  // Waits until this rank's collectives have finished on its device.
  virtual void synchronize() = 0;
};

}  // namespace mpbench
