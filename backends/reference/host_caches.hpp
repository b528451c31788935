#pragma once
// The host's data caches as Linux describes them (/sys/devices/system/cpu/cpu0/cache), and how
// much of them the threads of a run can fill: what a cache flush must overwrite, and where the
// bandwidth sweep finds the cliff from cache to memory.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mpbench::host {

struct CacheLevel {
  int level = 0;
  std::string type;          // "Data" or "Unified" (instruction caches are left out)
  std::uint64_t bytes = 0;   // one instance
  int sharing_cpus = 1;      // logical CPUs that share one instance
};

// cpu0's data and unified caches under `cpu_root`; empty when it lists none.
std::vector<CacheLevel> read_cache_levels(const std::filesystem::path& cpu_root = "/sys/devices/system/cpu");

// The most cache one logical CPU has of its own share on any x86 CPU: AMD's EPYC 9184X, 768 MiB of
// L3 for 16 cores (96 MiB per two cores). A hypervisor may pass its host's whole L3 on to a VM of
// a few cores as if they shared it alone (480 MiB "shared" by 2 logical CPUs on one of this
// project's VMs, whose copy bandwidth fell to memory speed beyond 64 MiB).
inline constexpr std::uint64_t kMostCachePerCpu = std::uint64_t{48} << 20;

struct UsableCache {
  std::uint64_t bytes = 0;
  std::string basis;  // how it was counted, for the result document
};

// What `threads` threads on a host of `online_cpus` logical CPUs can hold: each level once per
// instance the threads may run on (at most one per thread), an instance counted as at most
// kMostCachePerCpu per logical CPU sharing it. No levels: 32 MiB, said so.
UsableCache usable_cache(const std::vector<CacheLevel>& levels, int threads, int online_cpus);

// "48 KiB", "2 MiB", "480 MiB".
std::string size_text(std::uint64_t bytes);

}  // namespace mpbench::host
