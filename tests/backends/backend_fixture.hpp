#pragma once
// Runs a test on every backend that can run here: the CPU always (as `run --device cpu` makes it,
// and "cpu-converted" with every low-precision GEMM forced onto the converted path), CUDA when a
// GPU is usable (otherwise the test is skipped with the reason). The reference backend is the oracle.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/reference/reference_backend.hpp"
#include "backends/registry.hpp"
#include "core/error.hpp"

namespace mpbench::testing {

class OnEveryBackend : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "cuda") {
      if (auto why = cuda_unavailable_reason()) GTEST_SKIP() << "no usable GPU: " << *why;
    }
    if (GetParam() == "cpu-converted") backend_ = choose_backend("cpu", {cpu::GemmPathChoice::converted}).backend;
    else backend_ = choose_backend(GetParam()).backend;
  }

  // Copies a buffer to the host as raw bytes.
  std::vector<unsigned char> bytes_of(const DeviceBuffer& buffer) {
    std::vector<unsigned char> out(buffer.bytes());
    backend_->download(out.data(), buffer, out.size());
    return out;
  }

  std::unique_ptr<Backend> backend_;
  reference::ReferenceBackend oracle_;
};

inline std::string backend_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }
// A parameter as a test name: gtest's names take letters, digits and underscores only.
inline std::string gtest_name(std::string text) {
  for (char& c : text)
    if (c == '-') c = '_';
  return text;
}

}  // namespace mpbench::testing
