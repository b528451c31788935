#pragma once
// The trace-event format's rules for the events mpbench writes ("X" complete, "M" metadata, "s"/"f"
// flows): required fields and their types per phase, non-negative microsecond times.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace mpbench::testing {

inline void expect_trace_event_format(const nlohmann::json& trace) {
  ASSERT_TRUE(trace.is_object());
  ASSERT_TRUE(trace["traceEvents"].is_array());
  EXPECT_TRUE(trace["displayTimeUnit"] == "ms" || trace["displayTimeUnit"] == "ns");
  const std::set<std::string> phases{"X", "M", "s", "f"};
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e["ph"].is_string()) << e;
    EXPECT_TRUE(phases.contains(e["ph"].get<std::string>())) << e;
    EXPECT_TRUE(e["name"].is_string()) << e;
    EXPECT_TRUE(e["pid"].is_number_integer()) << e;
    EXPECT_TRUE(e["tid"].is_number_integer()) << e;
    if (e["ph"] == "M") {
      EXPECT_TRUE(e["args"]["name"].is_string()) << e;
      continue;
    }
    ASSERT_TRUE(e["ts"].is_number()) << e;
    EXPECT_GE(e["ts"].get<double>(), 0) << e;
    EXPECT_TRUE(e["cat"].is_string()) << e;
    if (e["ph"] == "X") {
      ASSERT_TRUE(e["dur"].is_number()) << e;
      EXPECT_GE(e["dur"].get<double>(), 0) << e;
    } else {
      EXPECT_TRUE(e.contains("id")) << e;
    }
  }
}

}  // namespace mpbench::testing
