// The Chrome trace against the trace-event format's rules: required fields and their types per
// phase, microsecond units relative to the first timestamp, one track per stream and per thread,
// ranges on their own tracks, and flow arrows paired by id from launch to kernel.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>
#include <fstream>
#include <map>

#include "core/error.hpp"
#include "profiler/trace_export.hpp"
#include "records.hpp"
#include "tests/profiler/trace_event_format.hpp"

namespace mpbench::profiler {
namespace {

using namespace testing;
using nlohmann::json;

Trace small_trace() {
  Trace t;
  t.process_id = 4242;
  t.ranges = {range("forward", 1'000'000, 1'010'000, 1), range("layer0/ln_1", 1'002'000, 1'003'000)};
  t.api_calls = {launch(1'000'500, 1'000'700, 1), launch(1'002'100, 1'002'300, 2)};
  t.external_correlations = {{1, 1}};
  t.kernels = {kernel("nvjet_hsh_192x192", 1'001'500, 1'004'000, 1, 7),
               kernel("ampere_sgemm_128x64_tn", 1'004'000, 1'004'250, 2, 9, 1)};
  MemsetRecord memset;
  memset.bytes = 64;
  memset.time = {1'005'000, 1'005'100};
  memset.where = {0, 7, 3};
  t.memsets = {memset};
  return t;
}

std::vector<json> events_with_phase(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == ph) out.push_back(e);
  return out;
}

const json& event_named(const json& trace, const std::string& name) {
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["name"] == name) return e;
  throw std::runtime_error("no X event named " + name);
}

TEST(ChromeTrace, EveryEventHasTheFieldsItsPhaseRequires) {
  mpbench::testing::expect_trace_event_format(chrome_trace(small_trace()));
}

TEST(ChromeTrace, TimesAreMicrosecondsFromTheFirstTimestamp) {
  const json trace = chrome_trace(small_trace());
  const auto& k = event_named(trace, "nvjet_hsh_192x192");
  EXPECT_DOUBLE_EQ(k["ts"].get<double>(), 1.5);   // 1'001'500 ns - 1'000'000 ns
  EXPECT_DOUBLE_EQ(k["dur"].get<double>(), 2.5);  // 2500 ns
  EXPECT_DOUBLE_EQ(event_named(trace, "forward")["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(event_named(trace, "ampere_sgemm_128x64_tn")["dur"].get<double>(), 0.25);
  EXPECT_EQ(trace["otherData"]["baseTimeNanoseconds"], 1'000'000);
}

TEST(ChromeTrace, GpuWorkIsPlacedByDeviceAndStreamHostWorkByThread) {
  const json trace = chrome_trace(small_trace());
  const auto& k0 = event_named(trace, "nvjet_hsh_192x192");
  EXPECT_EQ(k0["pid"], 0);
  EXPECT_EQ(k0["tid"], 7);
  EXPECT_EQ(k0["cat"], "kernel");
  EXPECT_EQ(k0["args"]["category"], "gemm_tensor_core");
  EXPECT_EQ(k0["args"]["op"], "forward");
  const auto& k1 = event_named(trace, "ampere_sgemm_128x64_tn");
  EXPECT_EQ(k1["pid"], 1);
  EXPECT_EQ(k1["tid"], 9);
  EXPECT_EQ(k1["args"]["op"], "layer0/ln_1");
  EXPECT_EQ(event_named(trace, "Memset")["cat"], "gpu_memset");
  const auto& api = event_named(trace, "cudaLaunchKernel");
  EXPECT_EQ(api["pid"], 4242);
  EXPECT_EQ(api["tid"], 100);
  // Named tracks: a process per device and the host, a thread per stream.
  std::map<std::pair<int, std::uint64_t>, std::string> names;
  for (const auto& m : events_with_phase(trace, "M"))
    names[{m["pid"].get<int>(), m["tid"].get<std::uint64_t>()}] = m["args"]["name"];
  EXPECT_EQ((names[{0, 7}]), "stream 7");
  EXPECT_EQ((names[{1, 9}]), "stream 9");
  EXPECT_EQ((names[{4242, 100}]), "thread 100");
}

MarkerEvent marker(MarkerEvent::Kind kind, std::uint32_t id, std::uint64_t t, std::string name = "",
                   std::uint64_t thread = 100) {
  return {kind, id, t, thread, std::move(name)};
}

TEST(NvtxMarkers, StartsPairWithTheirEndsByIdInStartOrder) {
  using K = MarkerEvent::Kind;
  // Two nested push/pop ranges on one thread, one on another, a mark, and a range open at each
  // edge of the collection (an end without its start, a start without its end).
  const std::vector<MarkerEvent> markers = {
      marker(K::end, 1, 50),                          marker(K::start, 2, 100, "c_fc L0 forward"),
      marker(K::start, 3, 110, "cublasLtMatmul", 100), marker(K::start, 4, 120, "adamw optimizer", 200),
      marker(K::instant, 5, 130, "mark"),             marker(K::end, 3, 140),
      marker(K::end, 2, 150),                          marker(K::end, 4, 160),
      marker(K::start, 6, 170, "still open")};
  const std::vector<RangeRecord> ranges = ranges_from_markers(markers);
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].name, "c_fc L0 forward");
  EXPECT_EQ(ranges[0].time.start_ns, 100u);
  EXPECT_EQ(ranges[0].time.end_ns, 150u);
  EXPECT_EQ(ranges[1].name, "cublasLtMatmul");
  EXPECT_TRUE(ranges[0].time.contains(ranges[1].time));
  EXPECT_EQ(ranges[2].name, "adamw optimizer");
  EXPECT_EQ(ranges[2].thread, 200u);
  EXPECT_EQ(ranges[2].time.duration_ns(), 40u);
  for (const RangeRecord& r : ranges) EXPECT_EQ(r.external_id, 0u);
  // Delivered out of time order (two CUPTI buffers), the same ranges come out.
  std::vector<MarkerEvent> shuffled(markers.rbegin(), markers.rend());
  const std::vector<RangeRecord> again = ranges_from_markers(shuffled);
  ASSERT_EQ(again.size(), ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(again[i].name, ranges[i].name);
    EXPECT_EQ(again[i].time.end_ns, ranges[i].time.end_ns);
  }
}

TEST(ChromeTrace, NvtxRangesHaveTracksOfTheirOwn) {
  Trace t = small_trace();
  t.nvtx_ranges = {range("c_fc L0 forward", 1'001'000, 1'006'000), range("inner", 1'002'000, 1'003'000)};
  const json trace = chrome_trace(t);
  mpbench::testing::expect_trace_event_format(trace);
  const auto& outer = event_named(trace, "c_fc L0 forward");
  const auto& inner = event_named(trace, "inner");
  EXPECT_EQ(outer["cat"], "nvtx");
  EXPECT_EQ(outer["tid"], inner["tid"]);
  EXPECT_GE(outer["tid"].get<std::uint64_t>(), kNvtxTrackBase);
  EXPECT_NE(outer["tid"], event_named(trace, "forward")["tid"]) << "apart from the op ranges";
  EXPECT_DOUBLE_EQ(outer["ts"].get<double>(), 1.0);
  bool named = false;
  for (const auto& m : events_with_phase(trace, "M"))
    named |= m["tid"] == outer["tid"] && m["args"]["name"] == "NVTX (thread 100)";
  EXPECT_TRUE(named);
  // The NVTX ranges widen the trace's span like every record.
  t.nvtx_ranges.push_back(range("late", 2'000'000, 2'000'500));
  EXPECT_EQ(t.span()->end_ns, 2'000'500u);
}

TEST(ChromeTrace, RangesHaveTheirOwnTrackThatNests) {
  const json trace = chrome_trace(small_trace());
  const auto& outer = event_named(trace, "forward");
  const auto& inner = event_named(trace, "layer0/ln_1");
  EXPECT_EQ(outer["cat"], "user_annotation");
  EXPECT_EQ(outer["tid"], inner["tid"]);
  EXPECT_NE(outer["tid"], event_named(trace, "cudaLaunchKernel")["tid"]);
  EXPECT_GE(outer["tid"].get<std::uint64_t>(), kRangeTrackBase);
  EXPECT_EQ(outer["args"]["external id"], 1);
}

TEST(ChromeTrace, FlowsPairFromLaunchToKernel) {
  const json trace = chrome_trace(small_trace());
  const auto starts = events_with_phase(trace, "s");
  const auto finishes = events_with_phase(trace, "f");
  ASSERT_EQ(starts.size(), 2u);  // the memset has no launch record, so no arrow
  ASSERT_EQ(finishes.size(), 2u);
  std::map<std::uint64_t, json> start_by_id;
  for (const auto& s : starts) start_by_id[s["id"].get<std::uint64_t>()] = s;
  for (const auto& f : finishes) {
    const auto id = f["id"].get<std::uint64_t>();
    ASSERT_TRUE(start_by_id.contains(id)) << f;
    const auto& s = start_by_id[id];
    EXPECT_EQ(s["cat"], f["cat"]);
    EXPECT_EQ(s["name"], f["name"]);
    EXPECT_EQ(f["bp"], "e");
    EXPECT_LE(s["ts"].get<double>(), f["ts"].get<double>());
    EXPECT_EQ(s["pid"], 4242);
  }
  EXPECT_DOUBLE_EQ(start_by_id[1]["ts"].get<double>(), 0.5);
  EXPECT_EQ(event_named(trace, "nvjet_hsh_192x192")["ts"], finishes[0]["ts"]);
}

TEST(ChromeTrace, WrittenFileIsTheSameJson) {
  const auto path = std::filesystem::temp_directory_path() / ("mpbench-trace-" + std::to_string(::getpid()) + ".json");
  write_chrome_trace(path, small_trace());
  std::ifstream in(path);
  EXPECT_EQ(json::parse(in), chrome_trace(small_trace()));
  std::filesystem::remove(path);
  EXPECT_THROW(write_chrome_trace("/nonexistent-dir/x/trace.json", small_trace()), UsageError);
}

}  // namespace
}  // namespace mpbench::profiler
