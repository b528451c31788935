#pragma once
// The CPU backend: the CPU device layer's matmul (cpu_device.hpp: native or converted per the
// capability table) and the reference's element loops run on all cores, fp16/bf16 ones with
// AVX2+F16C where the CPU has them (environment() says which: "element_loops" is "avx2+f16c" or
// "scalar").
#include <memory>

#include "backends/cpu/cpu_device.hpp"
#include "backends/reference/reference_backend.hpp"

namespace mpbench::cpu {

class CpuBackend final : public reference::ReferenceBackend {
 public:
  explicit CpuBackend(CpuOptions options = {});

  // The device layer, shared with whatever else runs on this CPU (the Transformer's ops).
  const std::shared_ptr<CpuDevice>& device_layer() const { return device_; }

  const CapabilityTable& capabilities() const override { return device_->capabilities(); }
  std::unique_ptr<PreparedOp> make_gemm(GemmPrecision precision, const GemmShape& shape, const DeviceBuffer& a,
                                        const DeviceBuffer& b, DeviceBuffer& c) override;
  void stream(StreamKernel kernel, const DeviceBuffer& a, const DeviceBuffer& b, DeviceBuffer& c,
              float scalar) override;
  void cast(CastKind kind, const CastArgs& args) override;
  // 64 x 64 tiles (the tile's source rows and both outputs' lines stay in L1/L2), on all cores.
  void cast_transpose_amax(const CastTransposeArgs& args) override;
  nlohmann::json environment() const override { return device_->environment(); }

 private:
  std::shared_ptr<CpuDevice> device_;
};

std::unique_ptr<Backend> make_backend(CpuOptions options = {});

}  // namespace mpbench::cpu
