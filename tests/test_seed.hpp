#pragma once
// The seed of a test's fresh random inputs: from the system each run, or from MPB_TEST_SEED to
// reproduce a failure (the tests print the seed they used).
#include <cstdint>
#include <cstdlib>
#include <random>

namespace mpbench::testing_support {

inline std::uint32_t test_seed() {
  if (const char* s = std::getenv("MPB_TEST_SEED")) return static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  return std::random_device{}();
}

}  // namespace mpbench::testing_support
