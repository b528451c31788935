// Breakdown arithmetic and launch gaps on a hand-worked timeline (nanoseconds):
//
//   stream 7: nvjet [1000,4000) | gap 1000 | sgemm [5000,6000) triad [6000,6500) | gap 1500 | memcpy [8000,9000)
//   stream 8: unknown [2000,3000) | gap 500 | unknown [3500,4000)
//   host ranges: step [0,10000), layer0/qkv [900,5100) ext 1, layer0/ln_1 [5900,6100)
#include <gtest/gtest.h>

#include <set>

#include "profiler/breakdown.hpp"
#include "records.hpp"

namespace mpbench::profiler {
namespace {

using namespace testing;

constexpr const char* kOwnTriad =
    "_ZN7mpbench4cuda7kernels12_GLOBAL__N_110zip_kernelILi4EfNS_4body5TriadEEEvmPKT0_S7_PS5_T1_";

Trace hand_worked() {
  Trace t;
  t.ranges = {range("step", 0, 10000), range("layer0/qkv", 900, 5100, 1), range("layer0/ln_1", 5900, 6100)};
  t.api_calls = {launch(950, 960, 1), launch(1000, 1010, 2), launch(5950, 5960, 3)};
  t.external_correlations = {{1, 1}, {1, 2}};
  t.kernels = {kernel("nvjet_hsh_192x192_64x3_2x1_v_bz_coopB_NTN", 1000, 4000, 1),
               kernel("ampere_sgemm_128x64_tn", 5000, 6000, 2), kernel(kOwnTriad, 6000, 6500, 3),
               kernel("some_unknown_kernel", 2000, 3000, 5, 8), kernel("some_unknown_kernel", 3500, 4000, 6, 8)};
  MemcpyRecord copy;
  copy.kind = CopyKind::device_to_host;
  copy.bytes = 1 << 20;
  copy.time = {8000, 9000};
  copy.where = {0, 7, 4};
  t.memcpys = {copy};
  return t;
}

TEST(Breakdown, HandWorkedTimeline) {
  const auto b = compute_breakdown(hand_worked());
  EXPECT_DOUBLE_EQ(b.region_s, 10000e-9);
  EXPECT_EQ(b.kernel_count, 5u);
  ASSERT_EQ(b.categories.size(), 5u);
  EXPECT_DOUBLE_EQ(b.categories.at("gemm_tensor_core"), 3000e-9);
  EXPECT_DOUBLE_EQ(b.categories.at("gemm_cuda_core"), 1000e-9);
  EXPECT_DOUBLE_EQ(b.categories.at("normalization"), 500e-9);  // own kernel, named by its range
  EXPECT_DOUBLE_EQ(b.categories.at("copy"), 1000e-9);
  EXPECT_DOUBLE_EQ(b.categories.at("other"), 1500e-9);
  ASSERT_EQ(b.ops.size(), 2u);
  EXPECT_DOUBLE_EQ(b.ops.at("layer0/qkv"), 4000e-9);
  EXPECT_DOUBLE_EQ(b.ops.at("layer0/ln_1"), 500e-9);
  EXPECT_DOUBLE_EQ(b.unattributed_s, 2500e-9);  // the two unknown kernels and the memcpy have no launch record
  EXPECT_DOUBLE_EQ(b.gaps_s, 3000e-9);
}

TEST(Breakdown, TopKernelsAreSummedByNameLongestFirst) {
  const auto b = compute_breakdown(hand_worked());
  ASSERT_EQ(b.top_kernels.size(), 4u);
  EXPECT_EQ(b.top_kernels[0].name, "nvjet_hsh_192x192_64x3_2x1_v_bz_coopB_NTN");
  EXPECT_EQ(b.top_kernels[0].tensor_cores, TensorCoreEvidence::named);
  EXPECT_EQ(b.top_kernels[1].name, "some_unknown_kernel");
  EXPECT_EQ(b.top_kernels[1].count, 2u);
  EXPECT_DOUBLE_EQ(b.top_kernels[1].total_s, 1500e-9);
  EXPECT_EQ(b.top_kernels[3].category, Category::normalization);
  BreakdownOptions two;
  two.top_kernels = 2;
  EXPECT_EQ(compute_breakdown(hand_worked(), two).top_kernels.size(), 2u);
}

TEST(Breakdown, ActivitiesAreClippedToTheRegion) {
  BreakdownOptions options;
  options.region = Interval{3500, 5500};
  const auto b = compute_breakdown(hand_worked(), options);
  EXPECT_DOUBLE_EQ(b.region_s, 2000e-9);
  EXPECT_EQ(b.kernel_count, 3u);  // nvjet, sgemm and the second unknown overlap the region
  EXPECT_DOUBLE_EQ(b.categories.at("gemm_tensor_core"), 500e-9);
  EXPECT_DOUBLE_EQ(b.categories.at("gemm_cuda_core"), 500e-9);
  EXPECT_DOUBLE_EQ(b.categories.at("other"), 500e-9);
  EXPECT_FALSE(b.categories.contains("copy"));
  EXPECT_DOUBLE_EQ(b.gaps_s, 1000e-9);
}

TEST(Breakdown, AShortKernelInsideALongOneEndsNoGap) {
  Trace t;
  t.kernels = {kernel("a", 0, 1000, 1), kernel("b", 100, 200, 2), kernel("c", 1500, 1600, 3)};
  EXPECT_DOUBLE_EQ(compute_breakdown(t).gaps_s, 500e-9);
}

TEST(Breakdown, EmptyTraceGivesZeros) {
  const auto b = compute_breakdown(Trace{});
  EXPECT_EQ(b.kernel_count, 0u);
  EXPECT_EQ(b.region_s, 0.0);
  EXPECT_TRUE(b.categories.empty());
}

TEST(Breakdown, JsonHasExactlyTheDocumentedFields) {
  const auto j = compute_breakdown(hand_worked()).to_json();
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"categories", "ops", "kernel_count", "top_kernels", "gaps_s", "region_s",
                                          "unattributed_s"}));
  EXPECT_DOUBLE_EQ(j["categories"]["gemm_tensor_core"].get<double>(), 3000e-9);
  EXPECT_EQ(j["kernel_count"], 5);
  EXPECT_EQ(j["top_kernels"][0]["category"], "gemm_tensor_core");
  EXPECT_EQ(j["top_kernels"][0]["tensor_cores"], "named");
  EXPECT_EQ(j["top_kernels"][1]["count"], 2);
}

TEST(Breakdown, CategoriesReadFromNestedOrFlatDocuments) {
  const auto nested = compute_breakdown(hand_worked()).to_json();
  EXPECT_DOUBLE_EQ(breakdown_categories(nested).at("copy"), 1000e-9);
  const nlohmann::json flat = {{"gemm_tensor_core", 0.5}, {"elementwise", 0.2}};
  EXPECT_DOUBLE_EQ(breakdown_categories(flat).at("elementwise"), 0.2);
  EXPECT_TRUE(breakdown_categories(nlohmann::json("nonsense")).empty());
}

}  // namespace
}  // namespace mpbench::profiler
