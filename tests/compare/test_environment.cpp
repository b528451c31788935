#include "compare/environment.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "compare/render.hpp"
#include "compare/report.hpp"
#include "documents.hpp"

namespace mpbench::compare {
namespace {

using namespace testing;

const EnvironmentField* field(const std::vector<EnvironmentField>& fields, const std::string& name) {
  const auto it = std::find_if(fields.begin(), fields.end(), [&](const EnvironmentField& f) { return f.field == name; });
  return it == fields.end() ? nullptr : &*it;
}

ResultDocument cpu_run(int threads, const nlohmann::json& omp_num_threads, const std::string& cpu_isa = "") {
  ResultDocument doc = gemm_run(1e-4);
  doc.run["cpu_isa"] = cpu_isa;
  doc.env["cpu"]["threads"] = threads;
  doc.env["cpu"]["omp_num_threads"] = omp_num_threads;
  return doc;
}

// Every case measured under this load average, before and after.
ResultDocument loaded(ResultDocument doc, double before, double after) {
  for (auto& c : doc.cases) {
    c.details["measurement"]["clocks_before"] = {{"load_average_1m", before}, {"cpu_mhz_mean", 2600.0}};
    c.details["measurement"]["clocks_after"] = {{"load_average_1m", after}, {"cpu_mhz_mean", 2600.0}};
  }
  return doc;
}

TEST(Environment, LibraryVersionsListEverySidesValues) {
  const auto fields = environment_fields(side_of("base", {document({}, "12.4.5"), gemm_run(1e-4)}),
                                         side_of("new", {gemm_run(1e-4), document({}, "12.5.2")}));
  const auto* cublas = field(fields, "cuBLAS");
  ASSERT_NE(cublas, nullptr);
  EXPECT_TRUE(cublas->changed());
  EXPECT_EQ(cublas->base, "12.4.5");
  EXPECT_EQ(cublas->current, "12.4.5, 12.5.2");
  const auto* gpu = field(fields, "GPU");
  ASSERT_NE(gpu, nullptr);
  EXPECT_FALSE(gpu->changed());
}

TEST(Environment, ThreadsAndOmpNumThreadsAreChanges) {
  const auto fields = environment_fields(side_of("base", {cpu_run(2, nullptr)}), side_of("new", {cpu_run(1, "1")}));
  ASSERT_NE(field(fields, "threads"), nullptr);
  EXPECT_TRUE(field(fields, "threads")->changed());
  EXPECT_EQ(field(fields, "threads")->current, "1");
  ASSERT_NE(field(fields, "OMP_NUM_THREADS"), nullptr);
  EXPECT_EQ(field(fields, "OMP_NUM_THREADS")->base, "unset");
  EXPECT_EQ(field(fields, "OMP_NUM_THREADS")->current, "1");
}

TEST(Environment, TheCpuIsaLimitAndTheGemmPathsAreChanges) {
  auto base = cpu_run(2, nullptr), current = cpu_run(2, nullptr, "sse41");
  base.cases[1].details["gemm_path"] = {{"precision", "bf16"}, {"path", "native"}};
  current.cases[1].details["gemm_path"] = {{"precision", "bf16"}, {"path", "converted"}};
  base.env["cpu"]["capabilities"] = {{"gemm", {{"bf16", {{"path", "native"}}}, {"fp16", {{"path", "converted"}}}}}};
  current.env["cpu"]["capabilities"] = {{"gemm", {{"bf16", {{"path", "converted"}}}, {"fp16", {{"path", "converted"}}}}}};
  current.env["backend"]["onednn"]["effective_isa"] = "sse41";
  base.env["backend"]["onednn"]["effective_isa"] = "avx512_core_bf16";
  const auto fields = environment_fields(side_of("base", {base}), side_of("new", {current}));
  for (const char* name : {"CPU ISA limit (--cpu-isa)", "GEMM paths run", "CPU GEMM capabilities", "oneDNN ISA"}) {
    ASSERT_NE(field(fields, name), nullptr) << name;
    EXPECT_TRUE(field(fields, name)->changed()) << name;
  }
  EXPECT_EQ(field(fields, "CPU ISA limit (--cpu-isa)")->base, "none");
  EXPECT_EQ(field(fields, "GEMM paths run")->current, "bf16 converted");
  EXPECT_EQ(field(fields, "CPU GEMM capabilities")->base, "bf16 native, fp16 converted");
}

TEST(Environment, TheLoadAverageIsAConditionShownAsARange) {
  const auto fields = environment_fields(side_of("base", {loaded(gemm_run(1e-4), 1.2, 1.6), loaded(gemm_run(1e-4), 2.0, 1.4)}),
                                         side_of("new", {loaded(gemm_run(1e-4), 11.0, 12.3)}));
  const auto* load = field(fields, "load average (1 min)");
  ASSERT_NE(load, nullptr);
  EXPECT_TRUE(load->condition);
  EXPECT_FALSE(load->changed()) << "conditions are shown, not counted as changes";
  EXPECT_EQ(load->base, "1.2-2.0");
  EXPECT_EQ(load->current, "11.0-12.3");
  EXPECT_EQ(field(fields, "CPU clock (MHz, mean of cores)")->base, "2600");
}

TEST(Environment, TheTextNamesAThreadChangeInsteadOfSayingUnchanged) {
  const auto r = compare(side_of("base", {cpu_run(2, nullptr)}), side_of("new", {cpu_run(1, nullptr)}), {});
  const auto text = render_text(r);
  EXPECT_EQ(text.find("environment: unchanged"), std::string::npos) << text;
  EXPECT_NE(text.find("threads"), std::string::npos) << text;
  const auto same = render_text(compare(side_of("base", {cpu_run(2, nullptr)}), side_of("new", {cpu_run(2, nullptr)}), {}));
  EXPECT_NE(same.find("environment: unchanged"), std::string::npos) << same;
}

}  // namespace
}  // namespace mpbench::compare
