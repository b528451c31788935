#include "history/change_points.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "compare/statistics.hpp"
#include "core/stats.hpp"

namespace mpbench::history {

namespace {

// The values of one segment as ranks into their sorted copy. A permutation only reorders the
// ranks, so the sorted values, and the trees over them, serve every permutation of the segment.
struct RankedSegment {
  std::vector<double> sorted;
  std::vector<std::size_t> ranks;  // ranks[i]: where value i stands in `sorted` (ties by position)
};

RankedSegment rank_segment(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  RankedSegment s{std::vector<double>(values.size()), std::vector<std::size_t>(values.size())};
  for (std::size_t r = 0; r < order.size(); ++r) {
    s.sorted[r] = values[order[r]];
    s.ranks[order[r]] = r;
  }
  return s;
}

// The values inserted so far, as counts and sums in Fenwick trees indexed by rank: the summed
// distance from any value to all of them in O(log m) instead of O(m). Tied values may fall on
// either side of each other, as their distance is zero.
class DistanceSums {
 public:
  explicit DistanceSums(const std::vector<double>& sorted)
      : sorted_(sorted), counts_(sorted.size() + 1), sums_(sorted.size() + 1) {}

  // Sum of |sorted[rank] - w| over the inserted values w.
  double distance_to(std::size_t rank) const {
    double count_below = 0, sum_below = 0;  // over the inserted ranks below `rank`
    for (std::size_t i = rank; i > 0; i &= i - 1) {
      count_below += counts_[i];
      sum_below += sums_[i];
    }
    const double v = sorted_[rank];
    return (v * count_below - sum_below) + (total_sum_ - sum_below) - v * (total_count_ - count_below);
  }

  void insert(std::size_t rank) {
    for (std::size_t i = rank + 1; i < counts_.size(); i += i & (~i + 1)) {
      counts_[i] += 1;
      sums_[i] += sorted_[rank];
    }
    total_count_ += 1;
    total_sum_ += sorted_[rank];
  }

 private:
  const std::vector<double>& sorted_;
  std::vector<double> counts_, sums_;
  double total_count_ = 0, total_sum_ = 0;
};

// Summed pairwise distances within each prefix of `ranks`: entry t is that of runs [0, t).
std::vector<double> within_distances(const std::vector<std::size_t>& ranks, const std::vector<double>& sorted) {
  std::vector<double> within(ranks.size() + 1, 0.0);
  DistanceSums inserted(sorted);
  for (std::size_t t = 0; t < ranks.size(); ++t) {
    within[t + 1] = within[t] + inserted.distance_to(ranks[t]);
    inserted.insert(ranks[t]);
  }
  return within;
}

// q at every split of the segment in the order `ranks` (see energy_statistics). The distances
// between the sides are the total less both sides' own, so one pass from the front and one from
// the back give every split.
std::vector<double> split_statistics(const std::vector<std::size_t>& ranks, const std::vector<double>& sorted,
                                     std::size_t min_segment) {
  const std::size_t m = ranks.size();
  if (m < 2 * min_segment) return {};
  const std::vector<double> prefix = within_distances(ranks, sorted);
  const std::vector<double> suffix = within_distances(std::vector(ranks.rbegin(), ranks.rend()), sorted);
  std::vector<double> q;
  for (std::size_t at = min_segment; at + min_segment <= m; ++at) {
    const double n_l = static_cast<double>(at), n_r = static_cast<double>(m - at);
    const double within_left = prefix[at], within_right = suffix[m - at];
    const double between = prefix[m] - within_left - within_right;
    const double divergence =
        2 * between / (n_l * n_r) - within_left / (n_l * (n_l - 1) / 2) - within_right / (n_r * (n_r - 1) / 2);
    q.push_back(n_l * n_r / (n_l + n_r) * divergence);
  }
  return q;
}

struct Split {
  std::size_t at = 0;  // the first run of the right side
  double q = 0;
};

// The split with the largest q; needs 2 * min_segment runs.
Split best_split(const std::vector<std::size_t>& ranks, const std::vector<double>& sorted, std::size_t min_segment) {
  const std::vector<double> q = split_statistics(ranks, sorted, min_segment);
  const auto largest = std::max_element(q.begin(), q.end());
  return {min_segment + static_cast<std::size_t>(largest - q.begin()), *largest};
}

// Fisher-Yates with the generator's raw words: std::shuffle and std::uniform_int_distribution
// differ between standard libraries, and a seed should replay the same answer everywhere. The
// modulo's bias is below m / 2^64.
void shuffle(std::vector<std::size_t>& ranks, std::mt19937_64& rng) {
  for (std::size_t i = ranks.size(); i > 1; --i) std::swap(ranks[i - 1], ranks[rng() % i]);
}

// The share of orderings of the segment (the observed one and `permutations` random ones) whose
// best split is at least as large as the observed: under no change every ordering is as likely.
double permutation_p_value(RankedSegment segment, double observed, const ChangePointOptions& options,
                           std::mt19937_64& rng) {
  int as_large = 0;
  for (int i = 0; i < options.permutations; ++i) {
    shuffle(segment.ranks, rng);
    if (best_split(segment.ranks, segment.sorted, options.min_segment).q >= observed) ++as_large;
  }
  return (1.0 + as_large) / (options.permutations + 1.0);
}

struct Found {
  std::size_t index;
  double p_value;
};

// Change points of logs[begin, end), appended in run order: the best split if significant, then
// the same search on both sides of it.
void bisect(const std::vector<double>& logs, std::size_t begin, std::size_t end, const ChangePointOptions& options,
            std::mt19937_64& rng, std::vector<Found>& found) {
  if (end - begin < 2 * options.min_segment) return;
  const RankedSegment segment = rank_segment(std::vector(logs.begin() + begin, logs.begin() + end));
  const Split split = best_split(segment.ranks, segment.sorted, options.min_segment);
  const double p_value = permutation_p_value(segment, split.q, options, rng);
  if (p_value > options.alpha) return;
  bisect(logs, begin, begin + split.at, options, rng, found);
  found.push_back({begin + split.at, p_value});
  bisect(logs, begin + split.at, end, options, rng, found);
}

void check(const std::vector<double>& values, const ChangePointOptions& options) {
  if (!(options.alpha > 0 && options.alpha < 1)) throw std::invalid_argument("change points: alpha must be in (0, 1)");
  if (options.permutations < 1) throw std::invalid_argument("change points: at least one permutation");
  // The smallest p-value is 1 / (permutations + 1): below it no split could ever be significant.
  if (options.alpha * (options.permutations + 1.0) < 1)
    throw std::invalid_argument("change points: alpha below 1 / (permutations + 1)");
  if (options.min_segment < 2) throw std::invalid_argument("change points: min_segment must be 2 or more");
  for (double v : values)
    if (!(v > 0 && std::isfinite(v))) throw std::invalid_argument("change points: values must be positive and finite");
}

// ln of each value relative to the median, so that the distances' running sums stay small and a
// constant series gives exact zeros.
std::vector<double> relative_logs(const std::vector<double>& values) {
  const double center = std::log(median_of(values));
  std::vector<double> logs;
  logs.reserve(values.size());
  for (double v : values) logs.push_back(std::log(v) - center);
  return logs;
}

ChangePoint describe(const std::vector<double>& values, std::size_t from, std::size_t index, std::size_t to,
                     double p_value, double alpha) {
  const std::vector<double> before(values.begin() + from, values.begin() + index);
  const std::vector<double> after(values.begin() + index, values.begin() + to);
  const compare::LogDifference d = compare::log_difference(before, after, alpha);
  ChangePoint c;
  c.index = index;
  c.before = median_of(before);
  c.after = median_of(after);
  c.relative_change = c.after / c.before - 1;
  c.low = std::expm1(d.low);
  c.high = std::expm1(d.high);
  c.p_value = p_value;
  return c;
}

}  // namespace

std::vector<double> energy_statistics(const std::vector<double>& series, std::size_t min_segment) {
  const RankedSegment segment = rank_segment(series);
  return split_statistics(segment.ranks, segment.sorted, std::max<std::size_t>(min_segment, 2));
}

std::vector<ChangePoint> find_change_points(const std::vector<double>& values, std::uint64_t seed,
                                            const ChangePointOptions& options) {
  check(values, options);
  if (values.empty()) return {};
  std::mt19937_64 rng(seed);
  std::vector<Found> found;
  bisect(relative_logs(values), 0, values.size(), options, rng, found);
  std::vector<ChangePoint> points;
  for (std::size_t i = 0; i < found.size(); ++i) {
    const std::size_t from = i == 0 ? 0 : found[i - 1].index;
    const std::size_t to = i + 1 == found.size() ? values.size() : found[i + 1].index;
    points.push_back(describe(values, from, found[i].index, to, found[i].p_value, options.alpha));
  }
  return points;
}

}  // namespace mpbench::history
