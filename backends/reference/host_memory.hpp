#pragma once
// Typed views of host buffers and element loops shared by the reference and CPU backends.
#include <cstddef>
#include <cstdint>

#include "backends/elementwise.hpp"
#include "core/backend.hpp"
#include "core/error.hpp"

namespace mpbench::host {

// Calls f(ptr) with the buffer's data as float*, elem::f16_bits* or elem::bf16_bits*.
template <typename F>
void with_typed(const DeviceBuffer& buffer, F&& f) {
  switch (buffer.dtype()) {
    case DType::f32: return f(static_cast<float*>(buffer.data()));
    case DType::f16: return f(static_cast<elem::f16_bits*>(buffer.data()));
    case DType::bf16: return f(static_cast<elem::bf16_bits*>(buffer.data()));
    default: throw UsageError("stream kernels take fp32, fp16 or bf16 buffers");
  }
}

// for (i = 0; i < n; ++i) body(i), on all cores when `parallel`.
template <typename Body>
void for_each_index(std::size_t n, bool parallel, Body&& body) {
#pragma omp parallel for schedule(static) if (parallel)
  for (std::size_t i = 0; i < n; ++i) body(i);
}

// destination[i] = f(source[i]) over typed views of the two buffers.
template <typename In, typename Out, typename F>
void map(const DeviceBuffer& source, DeviceBuffer& destination, bool parallel, F&& f) {
  const In* in = static_cast<const In*>(source.data());
  Out* out = static_cast<Out*>(destination.data());
  for_each_index(source.count(), parallel, [&](std::size_t i) { out[i] = f(in[i]); });
}

}  // namespace mpbench::host
