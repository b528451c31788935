#pragma once
// Views of activation buffers whose elements are either the ops' Real or 16-bit codes of fp16 or
// bf16: the activations a precision mode stores in a half type really take 2 bytes each. Ops read
// such elements as Real and round each value they write to the view's storage once, after the
// op's whole result for that element is known (an op that adds into its output rounds the sum).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "amp/format_info.hpp"
#include "amp/formats.hpp"
#include "core/error.hpp"
#include "core/hostdevice.hpp"

namespace mpbench::workloads {

enum class Storage : std::uint8_t { real, fp16, bf16 };

// "real", "fp16", "bf16".
std::string_view storage_name(Storage storage);
// The storage that holds values of `format` in 16 bits: fp16 and bf16; real for any other format.
Storage half_storage(num::Format format);
// The format values of `storage` are rounded to: fp16, bf16, or fp32 for real.
MPB_HD constexpr num::Format storage_format(Storage storage) {
  return storage == Storage::fp16 ? num::Format::fp16 : storage == Storage::bf16 ? num::Format::bf16 : num::Format::fp32;
}
// Bytes of one element: sizeof(Real) for real, 2 for the half types.
template <typename Real>
constexpr std::size_t element_bytes(Storage storage) {
  return storage == Storage::real ? sizeof(Real) : sizeof(std::uint16_t);
}

template <typename Real>
class Tensor {
 public:
  Tensor(Real* values) : data_(values), storage_(Storage::real) {}  // NOLINT: a plain buffer is a real tensor
  Tensor(void* data, Storage storage) : data_(data), storage_(storage) {}

  void* data() const { return data_; }
  Storage storage() const { return storage_; }
  bool is_real() const { return storage_ == Storage::real; }
  // The elements as Real: BackendError unless the storage is real (for ops that keep half storage
  // out of their kernels).
  Real* real(std::string_view op) const {
    if (!is_real()) throw BackendError(std::string(op) + ": this backend has no " + std::string(storage_name(storage_)) + " activation storage");
    return static_cast<Real*>(data_);
  }
  std::uint16_t* codes() const { return static_cast<std::uint16_t*>(data_); }
  // The view of the same buffer from element `index` on.
  Tensor at(std::size_t index) const {
    return {static_cast<std::byte*>(data_) + index * element_bytes<Real>(storage_), storage_};
  }

 private:
  void* data_;
  Storage storage_;
};

template <typename Real>
class ConstTensor {
 public:
  ConstTensor(const Real* values) : data_(values), storage_(Storage::real) {}  // NOLINT: as Tensor
  ConstTensor(Tensor<Real> tensor) : data_(tensor.data()), storage_(tensor.storage()) {}  // NOLINT: read-only view
  ConstTensor(const void* data, Storage storage) : data_(data), storage_(storage) {}

  const void* data() const { return data_; }
  Storage storage() const { return storage_; }
  bool is_real() const { return storage_ == Storage::real; }
  const Real* real(std::string_view op) const { return Tensor<Real>(const_cast<void*>(data_), storage_).real(op); }
  const std::uint16_t* codes() const { return static_cast<const std::uint16_t*>(data_); }
  ConstTensor at(std::size_t index) const {
    return {static_cast<const std::byte*>(data_) + index * element_bytes<Real>(storage_), storage_};
  }

 private:
  const void* data_;
  Storage storage_;
};

// The value of element i, as Real (host code).
template <typename Real>
Real load(ConstTensor<Real> x, std::size_t i) {
  switch (x.storage()) {
    case Storage::fp16: return static_cast<Real>(num::f16_bits_to_f32(x.codes()[i]));
    case Storage::bf16: return static_cast<Real>(num::bf16_bits_to_f32(x.codes()[i]));
    case Storage::real: break;
  }
  return static_cast<const Real*>(x.data())[i];
}

// Element i = value, rounded to the storage (round to nearest even through fp32, as storing a
// Real in a half type does; inf past fp16's range).
template <typename Real>
void store(Tensor<Real> x, std::size_t i, Real value) {
  switch (x.storage()) {
    case Storage::fp16: x.codes()[i] = num::f32_to_f16_bits(static_cast<float>(value)); return;
    case Storage::bf16: x.codes()[i] = num::f32_to_bf16_bits(static_cast<float>(value)); return;
    case Storage::real: break;
  }
  static_cast<Real*>(x.data())[i] = value;
}

}  // namespace mpbench::workloads
