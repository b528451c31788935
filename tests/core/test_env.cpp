#include "core/env.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace mpbench {
namespace {

// Restores OMP_NUM_THREADS as the test process found it.
class OmpNumThreadsGuard {
 public:
  OmpNumThreadsGuard() {
    if (const char* v = std::getenv("OMP_NUM_THREADS")) saved_ = v;
  }
  ~OmpNumThreadsGuard() {
    if (saved_.empty()) unsetenv("OMP_NUM_THREADS");
    else setenv("OMP_NUM_THREADS", saved_.c_str(), 1);
  }

 private:
  std::string saved_;
};

TEST(HostEnvironment, RecordsOmpNumThreadsOrNullWhenUnset) {
  OmpNumThreadsGuard guard;
  setenv("OMP_NUM_THREADS", "3", 1);
  EXPECT_EQ(host_environment({})["cpu"]["omp_num_threads"], "3");
  unsetenv("OMP_NUM_THREADS");
  EXPECT_TRUE(host_environment({})["cpu"]["omp_num_threads"].is_null());
}

}  // namespace
}  // namespace mpbench
