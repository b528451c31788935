#include "cli/gradient_reducer.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace mpbench::cli {

namespace {

using Clock = std::chrono::steady_clock;

// The test hook of a slow reduction (docs/testing.md): MPBENCH_TEST_BUCKET_DELAY_MS=D makes each
// sum (a bucket, or the single one) done no earlier than D ms after it started, as a slower
// interconnect would; the buckets' delays run while the backward goes on.
Clock::duration test_delay() {
  const char* text = std::getenv("MPBENCH_TEST_BUCKET_DELAY_MS");
  if (!text || !*text) return Clock::duration::zero();
  char* end = nullptr;
  const double ms = std::strtod(text, &end);
  if (*end != '\0' || !(ms >= 0) || ms > 1e6)
    throw UsageError(fmt::format("MPBENCH_TEST_BUCKET_DELAY_MS='{}' is not a delay in ms", printable(text)));
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

class CommunicatorReducer final : public workloads::GradientReducer {
 public:
  CommunicatorReducer(Backend& backend, Communicator& communicator, ProcessGroup& group, DType wire)
      : backend_(backend), communicator_(communicator), group_(group), wire_(wire), delay_(test_delay()) {}

  int rank() const override { return communicator_.rank(); }
  int world_size() const override { return communicator_.size(); }
  std::string library() const override {
    return fmt::format("{}; {}", communicator_.library(), communicator_.reduction(wire_));
  }
  std::string dtype() const override { return std::string(dtype_name(wire_)); }

  void sum(float* grads, std::size_t count) override {
    const Clock::time_point ready_at = Clock::now() + delay_;
    DeviceBuffer gradients(nullptr, grads, DType::f32, count);  // the trainer's memory, not owned
    if (wire_ == DType::f32) {
      communicator_.all_reduce_sum(gradients, gradients, count);
    } else {
      if (wire_buffer_.count() != count) wire_buffer_ = backend_.allocate(wire_, count);
      const bool bf16 = wire_ == DType::bf16;
      backend_.cast(bf16 ? CastKind::f32_to_bf16 : CastKind::f32_to_f16, {&gradients, &wire_buffer_});
      communicator_.all_reduce_sum(wire_buffer_, wire_buffer_, count);
      backend_.cast(bf16 ? CastKind::bf16_to_f32 : CastKind::f16_to_f32, {&wire_buffer_, &gradients});
    }
    communicator_.synchronize();
    backend_.synchronize();
    std::this_thread::sleep_until(ready_at);
  }
  // A bucket: cast to the wire type in a buffer of its own (kept for the next steps' same bucket),
  // its all-reduce started (MPI_Iallreduce; NCCL on the communication stream), cast back once done.
  std::size_t start_sum(float* grads, std::size_t count) override {
    const std::size_t number = buckets_.size();
    Bucket& b = buckets_.emplace_back();
    b.grads = grads, b.count = count, b.ready_at = Clock::now() + delay_;
    DeviceBuffer gradients(nullptr, grads, DType::f32, count);
    if (wire_ == DType::f32) {
      b.request = communicator_.start_all_reduce_sum(gradients, gradients, count);
    } else {
      if (wires_.size() <= number) wires_.resize(number + 1);
      DeviceBuffer& wire = wires_[number];
      if (wire.count() != count) wire = backend_.allocate(wire_, count);
      backend_.cast(wire_ == DType::bf16 ? CastKind::f32_to_bf16 : CastKind::f32_to_f16, {&gradients, &wire});
      b.request = communicator_.start_all_reduce_sum(wire, wire, count);
    }
    return number;
  }
  bool test(std::size_t number) override {
    Bucket& b = bucket(number);
    if (b.finished) return true;
    if (!b.reduced) b.reduced = b.request->test();
    if (!b.reduced || Clock::now() < b.ready_at) return false;
    cast_back(number);
    return true;
  }
  void wait(std::size_t number) override {
    Bucket& b = bucket(number);
    if (!b.finished) {
      if (!b.reduced) b.request->wait();
      b.reduced = true;
      cast_back(number);
      std::this_thread::sleep_until(b.ready_at);
    }
    communicator_.synchronize();
    backend_.synchronize();
  }
  void forget_sums() override { buckets_.clear(); }
  double sum(double value) override {
    // The ranks' values in rank order, added in that order on every rank: the same sum everywhere.
    double total = 0;
    for (const std::string& text : group_.all_gather(fmt::format("{:a}", value))) total += std::stod(text);
    return total;
  }
  double max(double value) override { return group_.max(value); }
  // One 8-byte all-reduce (MPI_Allreduce on the host, through the ProcessGroup) when every rank
  // goes on; where one does not, its reason follows from the lowest such rank (a broadcast).
  void agree_going(const std::string& failure) override {
    const int size = group_.size();
    const double word = failure.empty() ? 0.0 : static_cast<double>(size - group_.rank());
    const double lowest = group_.max(word);
    if (lowest == 0.0) return;
    const int failed = size - static_cast<int>(lowest);
    throw workloads::RankFailed(failed, group_.broadcast(failure, failed));
  }

 private:
  struct Bucket {
    float* grads = nullptr;
    std::size_t count = 0;
    std::unique_ptr<CollectiveRequest> request;
    Clock::time_point ready_at;
    bool reduced = false, finished = false;  // the all-reduce done; the sum back in grads
  };
  Bucket& bucket(std::size_t number) {
    if (number >= buckets_.size()) throw std::logic_error(fmt::format("no gradient bucket {} was started", number));
    return buckets_[number];
  }
  void cast_back(std::size_t number) {
    Bucket& b = buckets_[number];
    if (wire_ != DType::f32) {
      DeviceBuffer gradients(nullptr, b.grads, DType::f32, b.count);
      backend_.cast(wire_ == DType::bf16 ? CastKind::bf16_to_f32 : CastKind::f16_to_f32, {&wires_[number], &gradients});
    }
    b.finished = true;
  }

  Backend& backend_;
  Communicator& communicator_;
  ProcessGroup& group_;
  DType wire_;
  DeviceBuffer wire_buffer_;
  Clock::duration delay_;
  std::vector<Bucket> buckets_;   // this step's, in start order
  std::vector<DeviceBuffer> wires_;  // bucket b's wire-type copy (bf16, fp16)
};

}  // namespace

DType grad_reduce_dtype(const std::string& name) {
  if (name != "fp32" && name != "bf16" && name != "fp16")
    throw UsageError(fmt::format("bad --grad-reduce '{}': use fp32, bf16 or fp16", printable(name)));
  return parse_dtype(name);
}

std::unique_ptr<workloads::GradientReducer> make_gradient_reducer(Backend& backend, Communicator& communicator,
                                                                  ProcessGroup& group, const std::string& dtype) {
  return std::make_unique<CommunicatorReducer>(backend, communicator, group, grad_reduce_dtype(dtype));
}

}  // namespace mpbench::cli
