#pragma once
// Activation tensors in host memory as Real arrays, for host ops whose loops work on Real: a real
// tensor is used in place; a half one is decoded into a copy, and an output copy is rounded back
// into the tensor when the op is done (each element rounded once, after the op's whole result).
#include <cstddef>
#include <vector>

#include "workloads/tensor.hpp"

namespace mpbench::workloads {

// The n elements of x as Real.
template <typename Real>
class RealInput {
 public:
  RealInput(ConstTensor<Real> x, std::size_t n) {
    if (x.is_real()) {
      values_ = x.real("RealInput");
      return;
    }
    copy_.resize(n);
    for (std::size_t i = 0; i < n; ++i) copy_[i] = load(x, i);
    values_ = copy_.data();
  }
  const Real* data() const { return values_; }

 private:
  std::vector<Real> copy_;
  const Real* values_ = nullptr;
};

// The n elements of x as Real, holding x's current values (ops add into their outputs); finish()
// stores them into x.
template <typename Real>
class RealOutput {
 public:
  RealOutput(Tensor<Real> x, std::size_t n) : tensor_(x) {
    if (x.is_real()) {
      values_ = x.real("RealOutput");
      return;
    }
    copy_.resize(n);
    for (std::size_t i = 0; i < n; ++i) copy_[i] = load<Real>(x, i);
    values_ = copy_.data();
  }
  Real* data() { return values_; }
  void finish() {
    for (std::size_t i = 0; i < copy_.size(); ++i) store(tensor_, i, copy_[i]);
  }

 private:
  Tensor<Real> tensor_;
  std::vector<Real> copy_;
  Real* values_ = nullptr;
};

}  // namespace mpbench::workloads
