// explain against result documents built from public threads in which users found mixed
// precision no faster, or slower (tests/profiler/fixtures/threads/, each naming its thread in
// run.thread): the thread's root cause must be named, with its evidence, as the limit of the
// mode's verdict; the noisy ones must get no cause at all.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "profiler/evidence.hpp"
#include "profiler/explain.hpp"
#include "profiler/rules.hpp"

namespace mpbench::profiler {
namespace {

using nlohmann::json;

const std::filesystem::path kFixtures = MPBENCH_THREAD_FIXTURES;

struct ThreadCase {
  const char* file;
  const char* rule;      // the root cause the thread found
  const char* evidence;  // a field of the finding's evidence that carries it
  json value;            // what that field must hold
};

// The causes as the threads' own diagnoses name them.
const std::vector<ThreadCase>& thread_cases() {
  static const std::vector<ThreadCase> cases = {
      {"tensorflow-models-7407_vocab-33708", "misaligned_vocabulary", "padded_vocab", 33708},
      {"opennmt-tf-211_vocab-33708-gemm", "gemm_not_on_tensor_cores", "misaligned", json::array({"n = 33708"})},
      {"huggingface-transformers-15026_small-batch-casts", "small_batch_casts", "batch", 1.0},
      {"mit-han-lab-torchsparse-69_amdahl", "tensor_core_share_small", "bound", 1.25},
      {"pytorch-57115_cudnn-8.0.5-wheel", "library_too_old", "upgrade_to", "8.1"},
      {"tensorflow-44191_gtx-1660-ti", "no_tensor_cores", "compute_capability", "7.5"},
      {"fairseq-1047_gtx-1080-ti", "no_tensor_cores", "compute_capability", "6.1"},
      {"tensorflow-15585_pseudo-fp16-sgemm", "pseudo_fp16_sgemm", "sgemm_kernels",
       json::array({"maxwell_fp16_sgemm_fp16_128x128_nn"})},
      {"pytorch-146508_cpu-without-bf16", "no_bf16_instructions", "effective_isa", "avx2"},
      {"pytorch-57806_a100-tf32-baseline", "baseline_not_pedantic", "math", "TF32 on Tensor Cores"},
      {"nanodet-506_a40-tf32-default", "baseline_not_pedantic", "compute_type", "CUBLAS_COMPUTE_32F_FAST_TF32"},
      {"huggingface-accelerate-1714_scaler-sync", "host_syncs", "host_syncs_per_step", 2.0},
      {"eleutherai-gpt-neox-660_fp32-gradients", "fp32_gradient_reduce", "grad_reduce", "fp32"},
      {"maskrcnn-benchmark-807_cudnn-7.0.4", "library_too_old", "upgrade_to", "7.4"},
      {"openseq2seq-203_cuda-9.0-batched-gemm", "library_too_old", "upgrade_to", "9.1"},
      {"nerfstudio-172_dataloader-bound", "input_wait", "data_s_per_step", 0.028},
      {"nvidia-apex-297_small-network", "host_bound_step", "kernel_speedup", 12.0 / 6.0},
      {"nvidia-apex-546_bmm-k-1", "gemm_algorithms_off_tensor_cores", "misaligned", json::array({"bmm has m = 100, k = 1"})},
  };
  return cases;
}

ResultDocument fixture(const std::string& name) { return load_result(kFixtures / (name + ".json")); }

std::vector<const Finding*> all_findings(const Explanation& e) {
  std::vector<const Finding*> out;
  for (const auto* list : {&e.modes, &e.verdict, &e.findings})
    for (const Finding& f : *list) out.push_back(&f);
  for (const CaseExplanation& c : e.cases)
    for (const Finding& f : c.findings) out.push_back(&f);
  return out;
}

bool evidence_matches(const json& got, const json& want) {
  if (want.is_number() && got.is_number()) return std::abs(got.get<double>() - want.get<double>()) < 1e-9;
  return got == want;
}

// The root cause fired with its evidence, and the mode's verdict names it as what limits the mode;
// `why` says what went wrong otherwise.
bool names_its_cause(const ThreadCase& t, std::string& why) {
  const Explanation e = explain(fixture(t.file));
  bool fired = false;
  for (const Finding* f : all_findings(e))
    fired |= f->rule == t.rule && evidence_matches(member_or_null(f->evidence, t.evidence), t.value);
  bool limit = false;
  for (const Finding& m : e.modes) limit |= m.evidence.value("limit", std::string()) == t.rule;
  if (!fired) why = std::string(t.rule) + " did not fire with " + t.evidence + " = " + t.value.dump() + ": " + e.to_json().dump();
  else if (!limit) why = "the mode verdict names another limit: " + e.to_json()["modes"].dump();
  return fired && limit;
}

// The target: the root cause named with its evidence in at least 14 of 15 documents. Each miss is
// reported; all of these name theirs today.
TEST(ThreadFixtures, TheRootCauseIsNamedWithItsEvidence) {
  ASSERT_GE(thread_cases().size(), 15u);
  std::size_t named = 0;
  for (const ThreadCase& t : thread_cases()) {
    std::string why;
    const bool ok = names_its_cause(t, why);
    named += ok;
    EXPECT_TRUE(ok) << t.file << ": " << why;
  }
  EXPECT_GE(named * 15, thread_cases().size() * 14) << named << " of " << thread_cases().size();
}

TEST(ThreadFixtures, EachNamesItsThreadAndEveryRuleItFiresIsInTheTable) {
  std::size_t documents = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kFixtures)) {
    const ResultDocument doc = load_result(entry.path());
    ++documents;
    EXPECT_FALSE(doc.run.value("thread", json::object()).value("url", std::string()).empty()) << entry.path();
    const Explanation e = explain(doc);  // all_findings points into it
    for (const Finding* f : all_findings(e)) EXPECT_TRUE(find_explain_rule(f->rule)) << f->rule;
  }
  EXPECT_EQ(documents, thread_cases().size() + 2) << "the cause fixtures and the two noisy ones";
}

// Times too noisy to read (0.80x, ±45% over 12 samples a side: its interval reaches across the
// band): no cause for the ratio, no limit in the verdict, the advice to rerun.
TEST(ThreadFixtures, NoisyDocumentsGetNoCause) {
  for (const char* name : {"noisy_fairseq-2424_warm-up"}) {
    const Explanation e = explain(fixture(name));
    ASSERT_FALSE(e.modes.empty()) << name;
    for (const Finding& m : e.modes) {
      EXPECT_FALSE(m.evidence.contains("limit")) << name << ": " << m.message;
      EXPECT_NE(m.message.find("too noisy"), std::string::npos) << m.message;
    }
    for (const CaseExplanation& c : e.cases) {
      if (!c.speedup || c.precision == e.baseline) continue;
      ASSERT_FALSE(c.findings.empty()) << c.id;
      bool noisy = false;
      for (const Finding& f : c.findings) {
        noisy |= f.rule == "too_noisy";
        for (const char* ratio_cause : {"slower_than_baseline", "below_datasheet_ratio", "host_bound_step"})
          EXPECT_NE(f.rule, ratio_cause) << c.id;
      }
      EXPECT_TRUE(noisy) << c.id;
    }
  }
}

// Spread is not noise: 0.71x at ±35% over 40 samples a side has a 99% interval wholly below the
// band (0.57x-0.87x), so it does not pay and its cause is named.
TEST(ThreadFixtures, AWideSpreadOverManySamplesIsDecided) {
  const Explanation e = explain(fixture("noisy_mpbench-amd-epyc-2core"));
  ASSERT_EQ(e.modes.size(), 1u);
  EXPECT_EQ(e.modes[0].evidence["reading"], "does not pay") << e.modes[0].message;
  EXPECT_NE(e.modes[0].message.find("99% interval 0.5"), std::string::npos) << e.modes[0].message;
  for (const CaseExplanation& c : e.cases) {
    if (!c.speedup || c.precision == e.baseline) continue;
    ASSERT_TRUE(c.interval) << c.id;
    EXPECT_LT(c.interval->high, 1 / 1.05) << c.id;
    bool slower = false;
    for (const Finding& f : c.findings) slower |= f.rule == "slower_than_baseline";
    EXPECT_TRUE(slower) << c.id;
  }
}

}  // namespace
}  // namespace mpbench::profiler
