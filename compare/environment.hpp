#pragma once
// What in the environment can change timings, side by side: the settings of the runs (GPU, driver,
// CUDA and library versions, the CPU with its ISA flags and limit, oneDNN's ISA, threads,
// OMP_NUM_THREADS, the GEMM paths) and the conditions measured while they ran (load average,
// clocks, temperature, from each case's details.measurement).
#include <string>
#include <vector>

#include "compare/sides.hpp"

namespace mpbench::compare {

struct EnvironmentField {
  std::string field, base, current;
  bool condition = false;  // measured while running: ranges that always move a little, never "changed"
  bool changed() const { return !condition && base != current; }
};

// Fields with a value on either side. A setting lists the distinct values of a side's runs; a
// condition the range "min-max" over every case of every run.
std::vector<EnvironmentField> environment_fields(const Side& base, const Side& current);

}  // namespace mpbench::compare
