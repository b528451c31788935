// `mpbench env` records the versions of the libraries it loaded, not of the headers it was built
// with: another cuBLAS of the same major version put first on LD_LIBRARY_PATH is what it reports.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "run_mpbench.hpp"

namespace mpbench::testing {
namespace {

#ifdef MPBENCH_FAKE_CUBLAS_DIR
TEST(LoadedLibraries, CublasVersionIsTheLoadedLibrarysNotTheHeaders) {
  const auto folder = std::filesystem::temp_directory_path() / ("mpbench-loaded-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  const char* before = std::getenv("LD_LIBRARY_PATH");
  const std::string saved = before ? before : "";
  ::setenv("LD_LIBRARY_PATH", (std::string(MPBENCH_FAKE_CUBLAS_DIR) + (before ? ":" + saved : "")).c_str(), 1);
  const Invocation env = run_mpbench({"env", "--json"}, folder);
  if (before) ::setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
  else ::unsetenv("LD_LIBRARY_PATH");
  std::filesystem::remove_all(folder);
  ASSERT_EQ(env.status, 0) << env.err;
  const auto j = nlohmann::json::parse(env.out);
  EXPECT_EQ(j["cuda"]["cublas"], std::to_string(MPBENCH_FAKE_CUBLAS_MAJOR) + ".0.77") << j["cuda"].dump();
}
#else
TEST(LoadedLibraries, CublasVersionIsTheLoadedLibrarysNotTheHeaders) {
  GTEST_SKIP() << "a build without CUDA records no cuBLAS version";
}
#endif

}  // namespace
}  // namespace mpbench::testing
