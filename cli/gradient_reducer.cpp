#include "cli/gradient_reducer.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace mpbench::cli {

namespace {

class CommunicatorReducer final : public workloads::GradientReducer {
 public:
  CommunicatorReducer(Backend& backend, Communicator& communicator, ProcessGroup& group, DType wire)
      : backend_(backend), communicator_(communicator), group_(group), wire_(wire) {}

  int rank() const override { return communicator_.rank(); }
  int world_size() const override { return communicator_.size(); }
  std::string library() const override {
    return fmt::format("{}; {}", communicator_.library(), communicator_.reduction(wire_));
  }
  std::string dtype() const override { return std::string(dtype_name(wire_)); }

  void sum(float* grads, std::size_t count) override {
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
  }
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
  Backend& backend_;
  Communicator& communicator_;
  ProcessGroup& group_;
  DType wire_;
  DeviceBuffer wire_buffer_;
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
