#include "backends/cuda/nccl_communicator.hpp"

#include <fmt/format.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "backends/cuda/check.hpp"
#include "core/error.hpp"
#include "core/nccl_transport_log.hpp"

namespace mpbench::cuda {

namespace {

void check_nccl(ncclResult_t status, const char* call) {
  if (status == ncclSuccess) return;
  throw BackendError(fmt::format("{} failed: {} ({})", call, ncclGetErrorString(status), ncclGetLastError(nullptr)));
}

int runtime_version_code() {
  int code = 0;
  check_nccl(ncclGetVersion(&code), "ncclGetVersion");
  return code;
}

std::string version_text(int code) {
  // NCCL up to 2.8 encoded 1000 * major + 100 * minor + patch, from 2.9 10000 * major + 100 * minor + patch.
  if (code < 10000) return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return ncclFloat32;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case DType::e4m3: return ncclFloat8e4m3;
    case DType::e5m2: return ncclFloat8e5m2;
#endif
    default: throw UsageError(fmt::format("this build's nccl.h ({}) has no {} type", NCCL_VERSION_CODE, dtype_name(dtype)));
  }
}

// Where this process's NCCL log goes, when mpbench arranged it, and the communicator's place.
struct TransportLog {
  std::filesystem::path path;  // empty: not arranged
  bool readable = false;       // arranged, and the communicator has not ended
  std::string reason = "no NCCL communicator was made in this run";
  int rank = 0, size = 1, version_code = 0;
};
TransportLog& transport_log() {
  static TransportLog log;
  return log;
}

void set_environment(const char* name, const std::string& value) {
  if (setenv(name, value.c_str(), 1) != 0) throw BackendError(fmt::format("setenv {} failed", name));
}

// NCCL reads its log settings once, at its first call that logs (ncclGetUniqueId, ncclCommInitRank):
// this runs before them. The connection lines are INFO lines of the INIT subsystem.
void arrange_transport_log() {
  TransportLog& log = transport_log();
  if (!log.path.empty()) return;  // this process's earlier communicator set NCCL_DEBUG
  if (std::getenv("NCCL_DEBUG")) {
    log.reason = "NCCL_DEBUG is set: NCCL's log is the user's, mpbench neither redirects nor reads it";
    return;
  }
  const auto path = std::filesystem::temp_directory_path() / fmt::format("mpbench-nccl-{}.log", ::getpid());
  set_environment("NCCL_DEBUG", "INFO");
  set_environment("NCCL_DEBUG_SUBSYS", "INIT");
  set_environment("NCCL_DEBUG_FILE", path.string());
  log.path = path;
  log.readable = true;
}

// The log is read while the communicator lives (env.ranks); a file left behind would only be litter,
// so a failure to remove it is not an error.
void remove_transport_log() {
  TransportLog& log = transport_log();
  if (!log.readable) return;
  std::error_code ignored;
  std::filesystem::remove(log.path, ignored);
  log.readable = false;
  log.reason = "the NCCL communicator has ended and its log with it";
}

// A CUDA event, destroyed with its owner.
struct Event {
  cudaEvent_t event = nullptr;
  Event() { check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags"); }
  ~Event() {
    if (event) cudaEventDestroy(event);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

// An all-reduce queued on the communication stream: done when its event is; wait() also orders the
// backend's stream after it.
class NcclRequest final : public CollectiveRequest {
 public:
  explicit NcclRequest(std::shared_ptr<CudaDevice> device) : device_(std::move(device)) {}
  cudaEvent_t done_event() const { return done_.event; }
  bool test() override {
    const cudaError_t status = cudaEventQuery(done_.event);
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();  // not an error: clears it
      return false;
    }
    check(status, "cudaEventQuery");
    return true;
  }
  void wait() override {
    device_->activate();
    check(cudaStreamWaitEvent(device_->stream(), done_.event, 0), "cudaStreamWaitEvent");
    check(cudaEventSynchronize(done_.event), "cudaEventSynchronize");
  }

 private:
  std::shared_ptr<CudaDevice> device_;
  Event done_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<CudaDevice> device, ProcessGroup& group)
      : device_(std::move(device)), version_code_(runtime_version_code()) {
    device_->activate();
    arrange_transport_log();
    ncclUniqueId id{};
    if (group.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const std::string shared = group.broadcast(std::string(id.internal, sizeof id.internal), 0);
    std::copy(shared.begin(), shared.end(), id.internal);
    check_nccl(ncclCommInitRank(&comm_, group.size(), id, group.rank()), "ncclCommInitRank");
    rank_ = group.rank();
    size_ = group.size();
    TransportLog& log = transport_log();
    log.rank = rank_;
    log.size = size_;
    log.version_code = version_code_;
    if (log.readable) connect_for_the_log();
  }
  ~NcclCommunicator() override {
    ncclCommDestroy(comm_);
    if (comm_stream_) cudaStreamDestroy(comm_stream_);
    remove_transport_log();
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string library() const override { return "NCCL " + version_text(version_code_); }
  std::optional<std::string> unsupported(Collective, DType dtype) const override {
    return nccl_dtype_unsupported(dtype, version_code_, device_->info().compute_capability_major);
  }
  std::string reduction(DType) const override { return "native (NCCL's own sum for the type)"; }
  void all_reduce_sum(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) override {
    device_->activate();
    check_nccl(ncclAllReduce(send.data(), receive.data(), count, nccl_type(send.dtype()), ncclSum, comm_,
                             device_->stream()),
               "ncclAllReduce");
  }
  // On the communication stream, after what the backend's stream has queued so far (the gradients
  // the backward pass has just finished), so that the backward goes on meanwhile.
  std::unique_ptr<CollectiveRequest> start_all_reduce_sum(const DeviceBuffer& send, DeviceBuffer& receive,
                                                           std::size_t count) override {
    device_->activate();
    if (!comm_stream_) {
      check(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      ready_ = std::make_unique<Event>();
    }
    check(cudaEventRecord(ready_->event, device_->stream()), "cudaEventRecord");
    check(cudaStreamWaitEvent(comm_stream_, ready_->event, 0), "cudaStreamWaitEvent");
    check_nccl(ncclAllReduce(send.data(), receive.data(), count, nccl_type(send.dtype()), ncclSum, comm_, comm_stream_),
               "ncclAllReduce");
    auto request = std::make_unique<NcclRequest>(device_);
    check(cudaEventRecord(request->done_event(), comm_stream_), "cudaEventRecord");
    return request;
  }
  void reduce_scatter_sum(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) override {
    device_->activate();
    check_nccl(ncclReduceScatter(send.data(), receive.data(), count, nccl_type(send.dtype()), ncclSum, comm_,
                                 device_->stream()),
               "ncclReduceScatter");
  }
  void all_gather(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) override {
    device_->activate();
    check_nccl(ncclAllGather(send.data(), receive.data(), count, nccl_type(send.dtype()), comm_, device_->stream()),
               "ncclAllGather");
  }
  void broadcast(DeviceBuffer& buffer, std::size_t count, int root) override {
    device_->activate();
    check_nccl(ncclBroadcast(buffer.data(), buffer.data(), count, nccl_type(buffer.dtype()), root, comm_,
                             device_->stream()),
               "ncclBroadcast");
  }
  void synchronize() override {
    device_->synchronize();
    if (comm_stream_) check(cudaStreamSynchronize(comm_stream_), "cudaStreamSynchronize");
  }

 private:
  // One all-reduce of one float, so that NCCL connects (and logs) the channels of the algorithm it
  // picks for it; the others connect at their first call, after env.ranks is recorded.
  void connect_for_the_log() {
    float* one = nullptr;
    check(cudaMalloc(&one, sizeof(float)), "cudaMalloc");
    const ncclResult_t status = ncclAllReduce(one, one, 1, ncclFloat32, ncclSum, comm_, device_->stream());
    const cudaError_t synced = status == ncclSuccess ? cudaStreamSynchronize(device_->stream()) : cudaSuccess;
    check(cudaFree(one), "cudaFree");
    check_nccl(status, "ncclAllReduce");
    check(synced, "cudaStreamSynchronize");
  }

  std::shared_ptr<CudaDevice> device_;
  int version_code_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t comm_stream_ = nullptr;  // the non-blocking all-reduces', made at the first
  std::unique_ptr<Event> ready_;        // recorded on the backend's stream before each of them
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::optional<std::string> nccl_dtype_unsupported(DType dtype, int version_code, int cc_major) {
  const std::string loaded = version_text(version_code);
  switch (dtype) {
    case DType::f32:
    case DType::f16: return std::nullopt;
    case DType::bf16:
      if (version_code < 21000) return fmt::format("bf16 collectives need NCCL 2.10+, this is NCCL {}", loaded);
      return std::nullopt;
    case DType::e4m3:
    case DType::e5m2:
      if (NCCL_VERSION_CODE < NCCL_VERSION(2, 24, 0) || version_code < 22400)
        return fmt::format("fp8 collectives need NCCL 2.24+ (built against {}, loaded {})",
                           version_text(NCCL_VERSION_CODE), loaded);
      if (cc_major < 9) return fmt::format("fp8 collectives need an sm_90+ GPU (NCCL reduces fp8 on Hopper and newer)");
      return std::nullopt;
  }
  return "unknown type";
}

std::unique_ptr<Communicator> make_nccl_communicator(std::shared_ptr<CudaDevice> device, ProcessGroup& group) {
  return std::make_unique<NcclCommunicator>(std::move(device), group);
}

nlohmann::json nccl_interconnect() {
  const TransportLog& log = transport_log();
  if (!log.readable) return {{"peers", nullptr}, {"reason", log.reason}};
  std::ifstream in(log.path);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const nlohmann::json peers = nccl_peer_transports(text, log.rank);
  if (peers.empty() && log.size > 1)
    return {{"peers", nullptr},
            {"reason", fmt::format("NCCL's log {} names no connection of rank {} (NCCL read its log settings before "
                                   "mpbench set them, or logged none)", log.path.string(), log.rank)}};
  return {{"library", "NCCL " + version_text(log.version_code)},
          {"peers", peers},
          {"source", fmt::format("reported by NCCL: its INFO log (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT) in {}, the "
                                 "channels connected by the first all-reduce", log.path.string())}};
}

nlohmann::json nccl_environment() {
  int code = 0;
  const bool loaded = ncclGetVersion(&code) == ncclSuccess;
  return {{"version", loaded ? nlohmann::json(version_text(code)) : nlohmann::json(nullptr)},
          {"built_against", version_text(NCCL_VERSION_CODE)}};
}

}  // namespace mpbench::cuda
