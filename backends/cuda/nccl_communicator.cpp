#include "backends/cuda/nccl_communicator.hpp"

#include <fmt/format.h>
#include <nccl.h>

#include "backends/cuda/check.hpp"
#include "core/error.hpp"

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
    ncclUniqueId id{};
    if (group.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const std::string shared = group.broadcast(std::string(id.internal, sizeof id.internal), 0);
    std::copy(shared.begin(), shared.end(), id.internal);
    check_nccl(ncclCommInitRank(&comm_, group.size(), id, group.rank()), "ncclCommInitRank");
    rank_ = group.rank();
    size_ = group.size();
  }
  ~NcclCommunicator() override {
    ncclCommDestroy(comm_);
    if (comm_stream_) cudaStreamDestroy(comm_stream_);
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

nlohmann::json nccl_environment() {
  int code = 0;
  const bool loaded = ncclGetVersion(&code) == ncclSuccess;
  return {{"version", loaded ? nlohmann::json(version_text(code)) : nlohmann::json(nullptr)},
          {"built_against", version_text(NCCL_VERSION_CODE)}};
}

}  // namespace mpbench::cuda
