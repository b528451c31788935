#pragma once
// `mpbench compare` of mpbench's runs against PyTorch's (documents of scripts/torch_baseline.py,
// backend torch or torch-compile): a peer comparison, not a regression verdict. The cases pair
// across backends by suite, name and precision; each pair is judged on both sides' fastest times
// as compare judges runs (compare/verdict.hpp: the same interval, noise tests and threshold), with
// PyTorch's time as the base and mpbench's as the new, and each side's own low-precision speedup
// over the baseline precision stands beside it.
#include <compare>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compare/options.hpp"
#include "compare/render.hpp"
#include "compare/sides.hpp"
#include "compare/verdict.hpp"

namespace mpbench::compare {

// Exit statuses of a peer comparison (2, unusable input, is every command's UsageError). Which
// side is faster is no failure: 0 whenever a pair was judged, 3 when none could be.
inline constexpr int kExitPeerCompared = 0;
inline constexpr int kExitNothingPaired = 3;

// Every run of the side is PyTorch's (is_torch_document; make_side keeps one tool per side).
bool is_torch_side(const Side& side);
// One side PyTorch's, the other mpbench's: compare pairs them instead of judging a regression.
bool is_peer_comparison(const Side& a, const Side& b);

struct PairKey {
  std::string suite, name, precision;
  auto operator<=>(const PairKey&) const = default;
  std::string label() const;  // suite/name/precision
};
// The same as views of a case's strings, to pair a million cases.
struct PairKeyView {
  std::string_view suite, name, precision;
  auto operator<=>(const PairKeyView&) const = default;
};

enum class PeerVerdict { mpbench_faster, torch_faster, on_par, noisy };
std::string_view peer_verdict_name(PeerVerdict v);  // "mpbench faster", "PyTorch faster", "on par", "noisy"

struct PeerComparison {
  PairKey key;
  std::string mpbench_backend, torch_backend;
  // base: PyTorch's fastest time, current: mpbench's. change < 0: mpbench took less time.
  Comparison timing;
  PeerVerdict verdict = PeerVerdict::on_par;
  // PyTorch's time over mpbench's (above 1: mpbench faster), with its interval.
  double ratio() const { return 1 / (1 + timing.change); }
  double ratio_low() const { return 1 / (1 + timing.change_high); }
  double ratio_high() const { return 1 / (1 + timing.change_low); }
  // Each side's own speedup over the baseline precision on the same case (geometric mean of its
  // runs); empty for the baseline itself or where a run lacks it.
  std::optional<double> mpbench_speedup, torch_speedup;
};

// A pair that is not ok on a side: its worst status there, with the message.
struct PeerNotOk {
  PairKey key;
  CaseStatus mpbench = CaseStatus::ok, torch = CaseStatus::ok;
  std::string mpbench_message, torch_message;
};

struct PeerSide {
  std::string label;    // "mpbench (cpu)", "PyTorch 2.5.1 eager (cpu)"
  std::string machine;  // hardware_of() its first run
  std::string threads;  // env.cpu.threads of its runs, "" where not recorded
  std::vector<std::string> sources;
};

struct PeerReport {
  PeerSide mpbench, torch;
  Options options;
  std::vector<PeerComparison> comparisons;  // in case order
  std::vector<PeerNotOk> not_ok;
  std::vector<PairKey> only_mpbench, only_torch;

  bool machines_differ() const { return mpbench.machine != torch.machine; }
  bool threads_differ() const { return !mpbench.threads.empty() && !torch.threads.empty() && mpbench.threads != torch.threads; }
  std::size_t count(PeerVerdict v) const;
  bool nothing_compared() const { return comparisons.empty(); }
  // Why no pair could be judged, e.g. "no case of one side pairs with the other's"; empty otherwise.
  std::string why_nothing_compared() const;
  int exit_code() const { return nothing_compared() ? kExitNothingPaired : kExitPeerCompared; }
};

// The sides in either order: one must be PyTorch's (is_peer_comparison). Throws UsageError where
// a side has fewer runs than options.min_runs.
PeerReport compare_peers(const Side& a, const Side& b, const Options& options);

std::string render_peer_text(const PeerReport& report);
std::string render_peer_markdown(const PeerReport& report);
nlohmann::json peer_report_json(const PeerReport& report);
std::string render_peer(const PeerReport& report, Format format);

}  // namespace mpbench::compare
