// Two documents of one GPU that differ only in their library versions and the GEMM algorithms
// those chose: the report names the versions first and puts each case's algorithms side by side.
#include "compare/algorithms.hpp"

#include <gtest/gtest.h>

#include "compare/render.hpp"
#include "compare/report.hpp"
#include "documents.hpp"

namespace mpbench::compare {
namespace {

using namespace testing;
using nlohmann::json;

// A record as the cuBLASLt wrapper writes it (backends/cuda/cublaslt_gemm.cpp), trimmed to what
// names the algorithm and a consequence of it (the workspace) that must not count as a change.
json cublaslt_algorithm(int algo_id, const std::string& tile, const std::string& stages, bool tensor_cores,
                        const std::string& compute_type, int workspace_bytes = 0) {
  return {{"library", "cuBLASLt"},     {"algo_id", algo_id},   {"tile", tile},
          {"stages", stages},          {"split_k", 1},         {"tensor_cores", tensor_cores},
          {"compute_type", compute_type}, {"workspace_bytes", workspace_bytes}};
}

struct Libraries {
  std::string runtime, cublas, cudnn, driver;
};

const Libraries kOld{"12.4", "12.4.5", "9.1.0", "550.54.15"};
const Libraries kNew{"12.8", "12.8.4", "9.7.1", "570.86.10"};

// fp32 and bf16 of one GEMM, the bf16 GEMM on the given algorithm, under these libraries.
ResultDocument gemm_document(const Libraries& libs, const json& bf16_algorithm, double bf16_seconds,
                             int fp32_workspace = 0) {
  ResultDocument d = document({timed_case("square_4096", "fp32", samples_around(1e-3, 0.01)),
                               timed_case("square_4096", "bf16", samples_around(bf16_seconds, 0.01))});
  d.env["gpus"][0]["driver_version"] = libs.driver;
  d.env["cuda"] = {{"runtime", libs.runtime}, {"driver", libs.runtime}, {"cublas", libs.cublas},
                   {"cublaslt", libs.cublas}, {"cudnn", libs.cudnn}};
  d.cases[0].details["algorithm"] =
      cublaslt_algorithm(1, "128x64", "32x5", false, "CUBLAS_COMPUTE_32F_PEDANTIC", fp32_workspace);
  d.cases[1].details["algorithm"] = bf16_algorithm;
  return d;
}

const json kOldBf16 = cublaslt_algorithm(66, "128x128", "64x3", true, "CUBLAS_COMPUTE_32F");
const json kNewBf16 = cublaslt_algorithm(71, "256x128", "64x4", true, "CUBLAS_COMPUTE_32F");

Report upgrade_report() {
  return compare(side_of("base", {gemm_document(kOld, kOldBf16, 2e-4)}),
                 side_of("new", {gemm_document(kNew, kNewBf16, 1.6e-4)}), Options{});
}

const CaseAlgorithms* find_case(const Report& r, const std::string& precision) {
  for (const auto& a : r.algorithms)
    if (a.key.precision == precision) return &a;
  return nullptr;
}

TEST(CompareAlgorithms, LibraryChangesAreTheChangedVersionFields) {
  const Report r = upgrade_report();
  std::vector<std::string> names;
  for (const auto& f : r.library_changes) names.push_back(f.field);
  EXPECT_EQ(names, (std::vector<std::string>{"NVIDIA driver", "CUDA driver", "CUDA runtime", "cuBLAS", "cuBLASLt",
                                              "cuDNN"}));
  EXPECT_EQ(r.library_changes[3].base, "12.4.5");
  EXPECT_EQ(r.library_changes[3].current, "12.8.4");
}

TEST(CompareAlgorithms, PairsEachCasesAlgorithmAndFlagsTheChangedOne) {
  const Report r = upgrade_report();
  ASSERT_EQ(r.algorithms.size(), 2u);
  EXPECT_EQ(r.algorithms_changed(), 1u);
  const auto* bf16 = find_case(r, "bf16");
  ASSERT_NE(bf16, nullptr);
  ASSERT_EQ(bf16->gemms.size(), 1u);
  EXPECT_TRUE(bf16->changed());
  EXPECT_FALSE(bf16->gemms[0].tensor_cores_changed()) << "both on Tensor Cores: another tile, not another unit";
  EXPECT_EQ(bf16->gemms[0].base->summary(), "algo 66, tile 128x128, stages 64x3, CUBLAS_COMPUTE_32F, Tensor Cores");
  EXPECT_EQ(bf16->gemms[0].current->summary(), "algo 71, tile 256x128, stages 64x4, CUBLAS_COMPUTE_32F, Tensor Cores");
  const auto* fp32 = find_case(r, "fp32");
  ASSERT_NE(fp32, nullptr);
  EXPECT_FALSE(fp32->changed());
}

TEST(CompareAlgorithms, TextNamesTheVersionsAtTheTopAndTheAlgorithmsSideBySide) {
  const std::string text = render_text(upgrade_report());
  const auto versions = text.find("library versions changed: NVIDIA driver 550.54.15 -> 570.86.10; CUDA driver "
                                  "12.4 -> 12.8; CUDA runtime 12.4 -> 12.8; cuBLAS 12.4.5 -> 12.8.4; cuBLASLt 12.4.5 "
                                  "-> 12.8.4; cuDNN 9.1.0 -> 9.7.1");
  ASSERT_NE(versions, std::string::npos) << text;
  EXPECT_LT(versions, text.find("environment changes:")) << text;
  EXPECT_LT(versions, text.find("improved  gemm/square_4096")) << "the versions come before the verdicts\n" << text;
  EXPECT_NE(text.find("GEMM algorithms (base -> new): 1 of 2 cases chose another"), std::string::npos) << text;
  const auto row = text.find("CHANGED  gemm/square_4096/cuda/bf16");
  ASSERT_NE(row, std::string::npos) << text;
  const std::string line = text.substr(row, text.find('\n', row) - row);
  EXPECT_NE(line.find("algo 66, tile 128x128"), std::string::npos) << line;
  EXPECT_LT(line.find("algo 66"), line.find("algo 71, tile 256x128")) << "base first, then new: " << line;
  EXPECT_EQ(text.find("CHANGED  gemm/square_4096/cuda/fp32"), std::string::npos) << text;
}

TEST(CompareAlgorithms, MarkdownAndJsonCarryTheSame) {
  const Report r = upgrade_report();
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("**Library versions changed:** NVIDIA driver 550.54.15 -> 570.86.10;"), std::string::npos) << md;
  EXPECT_NE(md.find("#### GEMM algorithms (base -> new): 1 of 2 cases chose another"), std::string::npos) << md;
  EXPECT_NE(md.find("| ⚠️ changed | gemm/square_4096/cuda/bf16 | GEMM | algo 66, tile 128x128, stages 64x3, "
                    "CUBLAS_COMPUTE_32F, Tensor Cores | algo 71, tile 256x128"),
            std::string::npos)
      << md;
  const json j = report_json(r);
  ASSERT_EQ(j["library_changes"].size(), 6u) << j.dump(2);
  EXPECT_EQ(j["library_changes"][3], (json{{"library", "cuBLAS"}, {"base", "12.4.5"}, {"new", "12.8.4"}}));
  EXPECT_EQ(j["algorithms_changed"], 1);
  const json* bf16 = nullptr;
  for (const auto& a : j["algorithms"])
    if (a["precision"] == "bf16") bf16 = &a;
  ASSERT_NE(bf16, nullptr) << j["algorithms"].dump(2);
  EXPECT_TRUE((*bf16)["changed"].get<bool>());
  EXPECT_EQ((*bf16)["gemms"][0]["base"]["algorithm"]["algo_id"], 66);
  EXPECT_EQ((*bf16)["gemms"][0]["new"]["algorithm"]["tile"], "256x128");
  EXPECT_FALSE((*bf16)["gemms"][0]["tensor_cores_changed"].get<bool>());
}

TEST(CompareAlgorithms, SameLibrariesAndAlgorithmsAddNothing) {
  // Another workspace size is a consequence of the same algorithm, not another one.
  const Report r = compare(side_of("base", {gemm_document(kOld, kOldBf16, 2e-4, 0)}),
                           side_of("new", {gemm_document(kOld, kOldBf16, 2e-4, 1 << 20)}), Options{});
  EXPECT_TRUE(r.library_changes.empty());
  EXPECT_EQ(r.algorithms_changed(), 0u);
  EXPECT_FALSE(r.show_algorithms());
  const std::string text = render_text(r);
  EXPECT_EQ(text.find("library versions changed"), std::string::npos) << text;
  EXPECT_EQ(text.find("GEMM algorithms"), std::string::npos) << text;
}

TEST(CompareAlgorithms, AnotherAlgorithmUnderTheSameVersionsIsStillShown) {
  const Report r = compare(side_of("base", {gemm_document(kOld, kOldBf16, 2e-4)}),
                           side_of("new", {gemm_document(kOld, kNewBf16, 2e-4)}), Options{});
  EXPECT_TRUE(r.library_changes.empty());
  EXPECT_TRUE(r.show_algorithms());
  EXPECT_NE(render_text(r).find("CHANGED  gemm/square_4096/cuda/bf16"), std::string::npos);
}

// A transformer case's GEMMs, as details.gemm_algorithms records them, on or off Tensor Cores.
json transformer_algorithms(bool attention_on_tensor_cores) {
  const auto entry = [](const std::string& gemm, const std::string& problem, bool batched, bool tc) {
    return json{{"gemm", gemm}, {"problem", problem}, {"batched", batched}, {"tensor_cores", tc},
                {"numerical_impl_flags", tc ? "0x2" : "0x1"}, {"compute_type", "CUBLAS_COMPUTE_32F"}};
  };
  return json::array({entry("qkv projection", "fp16 GEMM m=2304 n=512 k=768 batch=1", false, true),
                      entry("attention q.k^T", "fp16 GEMM m=128 n=128 k=64 batch=48", true, attention_on_tensor_cores)});
}

TEST(CompareAlgorithms, TransformerGemmsPairByProblemAndTellTensorCoresApart) {
  CaseResult base = timed_case("bert", "amp-fp16", samples_around(1e-2, 0.01), "transformer");
  CaseResult current = base;
  base.details["gemm_algorithms"] = transformer_algorithms(false);
  auto reordered = transformer_algorithms(true);
  std::swap(reordered[0], reordered[1]);  // the order plans were made in is not what pairs them
  current.details["gemm_algorithms"] = reordered;
  const auto changes = gemm_choice_changes(base, current);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_FALSE(changes[0].changed()) << changes[0].gemm;
  EXPECT_TRUE(changes[1].changed());
  EXPECT_TRUE(changes[1].tensor_cores_changed());
  EXPECT_EQ(changes[1].gemm, "attention q.k^T (fp16 GEMM m=128 n=128 k=64 batch=48)");
  EXPECT_EQ(changes[1].base->summary(), "CUBLAS_COMPUTE_32F, CUDA cores");
  EXPECT_EQ(changes[1].current->summary(), "CUBLAS_COMPUTE_32F, Tensor Cores");
}

TEST(CompareAlgorithms, TransformerGemmsOnTensorCoresInBothDifferByTheirConfiguration) {
  CaseResult base = timed_case("bert", "amp-fp16", samples_around(1e-2, 0.01), "transformer");
  CaseResult current = base;
  base.details["gemm_algorithms"] = transformer_algorithms(true);
  current.details["gemm_algorithms"] = transformer_algorithms(true);
  base.details["gemm_algorithms"][1].update({{"algo_id", 21}, {"tile", "64x64"}, {"stages", "32x3"}, {"split_k", 1}});
  current.details["gemm_algorithms"][1].update({{"algo_id", 21}, {"tile", "128x64"}, {"stages", "32x3"}, {"split_k", 1}});
  const auto changes = gemm_choice_changes(base, current);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_TRUE(changes[1].changed()) << "another tile";
  EXPECT_FALSE(changes[1].tensor_cores_changed());
  EXPECT_EQ(changes[1].current->summary(), "algo 21, tile 128x64, stages 32x3, CUBLAS_COMPUTE_32F, Tensor Cores");
}

TEST(CompareAlgorithms, AGemmOnOneSideOnlyIsAChange) {
  CaseResult base = timed_case("bert", "amp-fp16", samples_around(1e-2, 0.01), "transformer");
  CaseResult current = base;
  base.details["gemm_algorithms"] = transformer_algorithms(true);
  current.details["gemm_algorithms"] = json::array({transformer_algorithms(true)[0]});
  const auto changes = gemm_choice_changes(base, current);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_FALSE(changes[0].changed());
  EXPECT_TRUE(changes[1].changed());
  EXPECT_FALSE(changes[1].current.has_value());
}

TEST(CompareAlgorithms, OneDnnImplementationIsAnAlgorithmToo) {
  CaseResult base = timed_case("square_1024", "bf16", samples_around(1e-3, 0.01));
  CaseResult current = base;
  base.details["algorithm"] = {{"library", "oneDNN matmul"}, {"implementation", "gemm:jit"}, {"steps", "x"}};
  current.details["algorithm"] = {{"library", "oneDNN matmul"}, {"implementation", "brg_matmul:avx512_core_amx"},
                                  {"steps", "y"}};
  const auto changes = gemm_choice_changes(base, current);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].changed());
  EXPECT_EQ(changes[0].current->summary(), "brg_matmul:avx512_core_amx");
}

}  // namespace
}  // namespace mpbench::compare
