#include "backends/reference/host_caches.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace mpbench::host {

namespace {

std::string first_word(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string text;
  in >> text;
  return text;
}

// "48K", "2048K", "32M" as bytes; 0 for anything else.
std::uint64_t parse_size(const std::string& text) {
  char* end = nullptr;
  const std::uint64_t value = std::strtoull(text.c_str(), &end, 10);
  const std::string unit(end ? end : "");
  if (unit.empty()) return value;
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return 0;
}

// How many CPUs a list such as "0-1", "0,4" or "0-3,8-11" names; at least 1.
int count_cpus(const std::string& list) {
  int count = 0;
  std::stringstream ranges(list);
  for (std::string range; std::getline(ranges, range, ',');) {
    if (range.empty()) continue;
    const auto dash = range.find('-');
    const int first = std::atoi(range.substr(0, dash).c_str());
    const int last = dash == std::string::npos ? first : std::atoi(range.substr(dash + 1).c_str());
    count += std::max(1, last - first + 1);
  }
  return std::max(1, count);
}

std::string level_name(const CacheLevel& c) { return fmt::format("L{}{}", c.level, c.type == "Data" ? "d" : ""); }

}  // namespace

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (std::uint64_t{1} << 20) && bytes % (std::uint64_t{1} << 20) == 0)
    return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (std::uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / 1048576.0);
  return fmt::format("{} KiB", bytes >> 10);
}

std::vector<CacheLevel> read_cache_levels(const std::filesystem::path& cpu_root) {
  std::vector<CacheLevel> levels;
  for (int index = 0; index < 16; ++index) {
    const auto dir = cpu_root / "cpu0" / "cache" / fmt::format("index{}", index);
    CacheLevel c;
    c.type = first_word(dir / "type");
    c.bytes = parse_size(first_word(dir / "size"));
    c.level = std::atoi(first_word(dir / "level").c_str());
    if (c.type.empty()) continue;  // no such index
    if (c.type == "Instruction" || c.bytes == 0 || c.level <= 0) continue;
    c.sharing_cpus = count_cpus(first_word(dir / "shared_cpu_list"));
    levels.push_back(c);
  }
  std::sort(levels.begin(), levels.end(), [](const CacheLevel& a, const CacheLevel& b) { return a.level < b.level; });
  return levels;
}

UsableCache usable_cache(const std::vector<CacheLevel>& levels, int threads, int online_cpus) {
  threads = std::max(1, threads);
  if (levels.empty()) return {std::uint64_t{32} << 20, "32 MiB assumed: the system lists no data cache sizes"};
  UsableCache out;
  std::vector<std::string> terms, notes;
  for (const CacheLevel& c : levels) {
    const int instances = std::min(threads, std::max(1, online_cpus / std::max(1, c.sharing_cpus)));
    const std::uint64_t plausible = kMostCachePerCpu * static_cast<std::uint64_t>(std::max(1, c.sharing_cpus));
    const std::uint64_t counted = std::min(c.bytes, plausible);
    out.bytes += counted * static_cast<std::uint64_t>(instances);
    terms.push_back(fmt::format("{} {} x {}", level_name(c), size_text(counted), instances));
    if (counted < c.bytes)
      notes.push_back(fmt::format("{} is reported as {} shared by {} logical CPU{}, more than the {} per logical CPU "
                                  "of any x86 CPU (a hypervisor's view of its host's cache): counted as {}",
                                  level_name(c), size_text(c.bytes), c.sharing_cpus, c.sharing_cpus == 1 ? "" : "s",
                                  size_text(kMostCachePerCpu), size_text(counted)));
  }
  out.basis = fmt::format("{} for {} thread{} on {} logical CPU{}", fmt::join(terms, " + "), threads,
                          threads == 1 ? "" : "s", online_cpus, online_cpus == 1 ? "" : "s");
  if (!notes.empty()) out.basis += fmt::format("; {}", fmt::join(notes, "; "));
  return out;
}

}  // namespace mpbench::host
