// mpbench against PyTorch: cases paired across backends, judged as compare judges runs, each
// side's own speedup beside it, and an exit status that never says "regressed".
#include "compare/peer.hpp"

#include <gtest/gtest.h>

#include <random>

#include "core/error.hpp"
#include "documents.hpp"

namespace mpbench::compare {
namespace {

using namespace testing;

CaseResult on_backend(CaseResult c, const std::string& backend) {
  c.backend = backend;
  return c;
}

// A random time from 0.2 to 2 ms, so that no test passes on one set of numbers only.
double random_seconds(std::mt19937& rng) { return std::uniform_real_distribution<double>(2e-4, 2e-3)(rng); }

// gemm square_1024 in fp32 and bf16 on `backend`, at these times, 1% spread.
ResultDocument gemm_doc(const std::string& backend, double fp32_s, double bf16_s) {
  auto d = document({on_backend(timed_case("square_1024", "fp32", samples_around(fp32_s, 0.01)), backend),
                     on_backend(timed_case("square_1024", "bf16", samples_around(bf16_s, 0.01)), backend)});
  d.run = {{"suites", {"gemm"}}, {"device", "cpu"}};
  d.env["gpus"] = nlohmann::json::array();
  d.env["cpu"] = {{"model", "AMD EPYC 7B13"}, {"flags", {{"avx2", true}, {"avx512_bf16", false}}}, {"threads", 2}};
  if (backend != "cpu") d.env["torch"] = {{"version", "2.5.1"}};
  d.compute_speedups("fp32");
  return d;
}

struct Sides {
  Side mpbench, torch;
};

// mpbench's fp32 at `fp32_s` and bf16 at half of it; PyTorch's fp32 the same, its bf16 ten times
// its fp32 (its scalar bf16 fallback on a CPU without bf16 instructions).
Sides fallback_sides(double fp32_s) {
  return {side_of("mpbench", {gemm_doc("cpu", fp32_s, fp32_s / 2)}),
          side_of("torch", {gemm_doc("torch", fp32_s, fp32_s * 10)})};
}

const PeerComparison& find(const PeerReport& r, const std::string& precision) {
  for (const auto& c : r.comparisons)
    if (c.key.precision == precision) return c;
  throw std::runtime_error("no comparison of " + precision);
}

TEST(Peer, OnlyOneSideOfPyTorchMakesAPeerComparison) {
  std::mt19937 rng(std::random_device{}());
  const double t = random_seconds(rng);
  const auto [mpbench, torch] = fallback_sides(t);
  EXPECT_TRUE(is_torch_side(torch));
  EXPECT_FALSE(is_torch_side(mpbench));
  EXPECT_TRUE(is_peer_comparison(mpbench, torch));
  EXPECT_TRUE(is_peer_comparison(torch, mpbench));
  EXPECT_FALSE(is_peer_comparison(mpbench, side_of("other", {gemm_doc("cpu", t, t)})));
  EXPECT_FALSE(is_peer_comparison(torch, side_of("other", {gemm_doc("torch-compile", t, t)})));
}

TEST(Peer, PairsAcrossBackendsAndJudgesMpbenchAgainstPyTorch) {
  std::mt19937 rng(std::random_device{}());
  const double t = random_seconds(rng);
  const auto [mpbench, torch] = fallback_sides(t);
  const auto r = compare_peers(mpbench, torch, {});
  ASSERT_EQ(r.comparisons.size(), 2u);
  const auto& bf16 = find(r, "bf16");
  EXPECT_EQ(bf16.mpbench_backend, "cpu");
  EXPECT_EQ(bf16.torch_backend, "torch");
  EXPECT_NEAR(bf16.ratio(), 20.0, 20.0 * 1e-9);  // PyTorch's 10 t over mpbench's t / 2
  EXPECT_LT(bf16.ratio_low(), bf16.ratio());
  EXPECT_GT(bf16.ratio_high(), bf16.ratio());
  EXPECT_EQ(bf16.verdict, PeerVerdict::mpbench_faster);
  ASSERT_TRUE(bf16.mpbench_speedup && bf16.torch_speedup);
  EXPECT_NEAR(*bf16.mpbench_speedup, 2.0, 1e-9);
  EXPECT_NEAR(*bf16.torch_speedup, 0.1, 1e-9);
  const auto& fp32 = find(r, "fp32");
  EXPECT_EQ(fp32.verdict, PeerVerdict::on_par);
  EXPECT_NEAR(fp32.ratio(), 1.0, 1e-9);
  EXPECT_FALSE(fp32.mpbench_speedup);  // the baseline has no speedup over itself
  EXPECT_EQ(r.exit_code(), kExitPeerCompared);
}

TEST(Peer, EitherOrderGivesTheSameReport) {
  std::mt19937 rng(std::random_device{}());
  const auto [mpbench, torch] = fallback_sides(random_seconds(rng));
  EXPECT_EQ(peer_report_json(compare_peers(mpbench, torch, {})), peer_report_json(compare_peers(torch, mpbench, {})));
}

TEST(Peer, PyTorchFasterIsNoFailure) {
  std::mt19937 rng(std::random_device{}());
  const double t = random_seconds(rng);
  const auto r = compare_peers(side_of("mpbench", {gemm_doc("cpu", 3 * t, 3 * t)}),
                               side_of("torch", {gemm_doc("torch", t, t)}), {});
  EXPECT_EQ(r.count(PeerVerdict::torch_faster), 2u);
  EXPECT_NEAR(find(r, "fp32").ratio(), 1.0 / 3, 1e-9);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(Peer, SamplesTooSpreadToTellAreNoisy) {
  std::mt19937 rng(std::random_device{}());
  const double t = random_seconds(rng);
  auto wide = gemm_doc("torch", t, t);
  for (auto& c : wide.cases) c.seconds = Statistics::of(samples_around(t * 1.1, 0.3));
  const auto r = compare_peers(side_of("mpbench", {gemm_doc("cpu", t, t)}), side_of("torch", {wide}), {});
  EXPECT_EQ(r.count(PeerVerdict::noisy), 2u);
}

TEST(Peer, NothingPairsIsExit3WithTheReason) {
  std::mt19937 rng(std::random_device{}());
  const double t = random_seconds(rng);
  auto other = gemm_doc("torch", t, t);
  for (auto& c : other.cases) c.name = "square_2048";
  const auto r = compare_peers(side_of("mpbench", {gemm_doc("cpu", t, t)}), side_of("torch", {other}), {});
  EXPECT_TRUE(r.nothing_compared());
  EXPECT_EQ(r.exit_code(), kExitNothingPaired);
  EXPECT_EQ(r.only_mpbench.size(), 2u);
  EXPECT_EQ(r.only_torch.size(), 2u);
  EXPECT_NE(r.why_nothing_compared().find("pairs with"), std::string::npos) << r.why_nothing_compared();
  EXPECT_NE(render_peer_text(r).find("nothing compared:"), std::string::npos);
}

TEST(Peer, PairsNotOkOnASideAreListedWithTheirMessages) {
  std::mt19937 rng(std::random_device{}());
  const double t = random_seconds(rng);
  auto torch = gemm_doc("torch", t, t);
  torch.cases[1].status = CaseStatus::skipped;
  torch.cases[1].message = "PyTorch has no such path";
  torch.cases[1].seconds.reset();
  const auto r = compare_peers(side_of("mpbench", {gemm_doc("cpu", t, t / 2)}), side_of("torch", {torch}), {});
  ASSERT_EQ(r.not_ok.size(), 1u);
  EXPECT_EQ(r.not_ok[0].key.precision, "bf16");
  EXPECT_EQ(r.not_ok[0].torch, CaseStatus::skipped);
  EXPECT_EQ(r.exit_code(), 0);  // fp32 still compared
  EXPECT_NE(render_peer_text(r).find("skipped: PyTorch has no such path"), std::string::npos) << render_peer_text(r);
}

TEST(Peer, SidesAreLabelledFromTheirEnvironment) {
  std::mt19937 rng(std::random_device{}());
  const auto [mpbench, torch] = fallback_sides(random_seconds(rng));
  const auto r = compare_peers(mpbench, torch, {});
  EXPECT_EQ(r.mpbench.label, "mpbench (cpu)");
  EXPECT_EQ(r.torch.label, "PyTorch 2.5.1 eager (cpu)");
  EXPECT_FALSE(r.machines_differ());
  EXPECT_FALSE(r.threads_differ());
  const auto text = render_peer_text(r);
  EXPECT_NE(text.find("mpbench (cpu): 1 run, threads 2 on CPU AMD EPYC 7B13, ISA avx2"), std::string::npos) << text;
  EXPECT_NE(text.find("PyTorch 2.5.1 eager (cpu): 1 run"), std::string::npos) << text;
  EXPECT_EQ(text.find("warning:"), std::string::npos) << text;
}

TEST(Peer, OtherHardwareOrThreadsAreWarnedOf) {
  std::mt19937 rng(std::random_device{}());
  const double t = random_seconds(rng);
  auto torch = gemm_doc("torch", t, t);
  torch.env["cpu"]["model"] = "Intel(R) Xeon(R) Platinum 8480+";
  torch.env["cpu"]["threads"] = 1;
  const auto r = compare_peers(side_of("mpbench", {gemm_doc("cpu", t, t)}), side_of("torch", {torch}), {});
  EXPECT_TRUE(r.machines_differ());
  EXPECT_TRUE(r.threads_differ());
  const auto text = render_peer_text(r);
  EXPECT_NE(text.find("warning: the sides ran on different hardware"), std::string::npos) << text;
  EXPECT_NE(text.find("different threads (mpbench 2, PyTorch 1)"), std::string::npos) << text;
}

TEST(Peer, TextMarkdownAndJsonCarryTheRatiosAndBothSpeedups) {
  std::mt19937 rng(std::random_device{}());
  const auto [mpbench, torch] = fallback_sides(random_seconds(rng));
  const auto r = compare_peers(mpbench, torch, {});
  const auto text = render_peer_text(r);
  EXPECT_NE(text.find("mpbench faster  gemm/square_1024/bf16"), std::string::npos) << text;
  EXPECT_NE(text.find("20.00x"), std::string::npos) << text;
  const auto line_start = text.find("gemm/square_1024/bf16");
  const auto line = text.substr(line_start, text.find('\n', line_start) - line_start);
  const auto mine = line.find("bf16 2.00x"), theirs = line.find("bf16 0.10x");
  EXPECT_TRUE(mine != std::string::npos && theirs != std::string::npos && mine < theirs)
      << "each side's speedup over fp32, mpbench's first\n" << text;
  const auto md = render_peer_markdown(r);
  EXPECT_NE(md.find("| verdict | case | mpbench | PyTorch | mpbench vs PyTorch | interval | noise | runs | mpbench "
                    "over fp32 | PyTorch over fp32 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| mpbench faster | gemm/square_1024/bf16 |"), std::string::npos) << md;
  const auto j = peer_report_json(r);
  EXPECT_EQ(j["kind"], "peer");
  EXPECT_EQ(j["exit_status"], 0);
  EXPECT_EQ(j["summary"]["mpbench_faster"], 1);
  bool found = false;
  for (const auto& c : j["comparisons"])
    if (c["precision"] == "bf16") {
      found = true;
      EXPECT_NEAR(c["ratio"].get<double>(), 20.0, 1e-6);
      EXPECT_NEAR(c["speedups"]["torch"].get<double>(), 0.1, 1e-9);
      EXPECT_EQ(c["verdict"], "mpbench faster");
    }
  EXPECT_TRUE(found);
}

TEST(Peer, ASideMixingMpbenchAndPyTorchIsRefused) {
  std::mt19937 rng(std::random_device{}());
  const double t = random_seconds(rng);
  try {
    side_of("base", {gemm_doc("cpu", t, t), gemm_doc("torch", t, t)});
    ADD_FAILURE() << "a side of both tools was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("a side holds runs of one tool"), std::string::npos) << e.what();
  }
}

TEST(Peer, MinRunsAppliesToBothSides) {
  std::mt19937 rng(std::random_device{}());
  const auto [mpbench, torch] = fallback_sides(random_seconds(rng));
  Options o;
  o.min_runs = 2;
  EXPECT_THROW(compare_peers(mpbench, torch, o), UsageError);
}

}  // namespace
}  // namespace mpbench::compare
