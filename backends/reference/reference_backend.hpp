#pragma once
// The oracle: host memory and obviously correct loops (GEMM accumulates in double). The CPU
// backend extends it with oneDNN and threads; tests compare every backend against this one.
#include <memory>

#include "core/backend.hpp"

namespace mpbench::reference {

class ReferenceBackend : public Backend {
 public:
  ReferenceBackend();
  const DeviceInfo& device() const override { return info_; }
  DeviceBuffer allocate(DType dtype, std::size_t count) override;
  void release(void* data) noexcept override;
  void fill_uniform(DeviceBuffer& buffer, std::uint64_t seed, float lo, float hi) override;
  void upload(DeviceBuffer& destination, const void* host, std::size_t bytes) override;
  void download(void* host, const DeviceBuffer& source, std::size_t bytes) override;
  void synchronize() override {}
  void flush_cache() override;
  std::unique_ptr<DeviceTimer> make_timer() override;
  const CapabilityTable& capabilities() const override;
  std::unique_ptr<PreparedOp> make_gemm(GemmPrecision precision, const GemmShape& shape,
                                        const DeviceBuffer& a, const DeviceBuffer& b,
                                        DeviceBuffer& c) override;
  void stream(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c,
              float scalar) override;
  std::optional<std::string> cast_unsupported(CastKind) const override { return std::nullopt; }
  void cast(CastKind kind, const CastArgs& args) override;
  void cast_transpose_amax(const CastTransposeArgs& args) override;
  void copy(DeviceBuffer& destination, const DeviceBuffer& source) override;
  std::unique_ptr<PreparedOp> make_host_transfer(TransferDirection, std::size_t,
                                                 std::string* why_not) override;
  nlohmann::json clocks() const override;
  nlohmann::json environment() const override;

 protected:
  // Element loops of stream and cast run on all cores when true (the CPU backend).
  explicit ReferenceBackend(bool parallel_loops);
  DeviceInfo info_;

 private:
  bool parallel_loops_;
  std::unique_ptr<unsigned char[]> flush_buffer_;
  std::size_t flush_bytes_ = 0;
};

// Value i of a buffer as fp32, whatever its dtype (host memory only).
float element_as_float(const DeviceBuffer& buffer, std::size_t i);


}  // namespace mpbench::reference
