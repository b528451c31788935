#pragma once
// Reading the evidence rules use from a document's free-form parts (params, details, run, env),
// which may hold anything: a field that is missing or of another type reads as absent, so a
// malformed document can make a rule stay silent but never throw.
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mpbench::profiler {

// j[key], or null where j is not an object or lacks the key (operator[] on a const json is
// undefined behaviour then).
inline const nlohmann::json& member_or_null(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

// The string at j[key], or `otherwise`.
inline std::string string_or(const nlohmann::json& j, const char* key, const std::string& otherwise) {
  const nlohmann::json& v = member_or_null(j, key);
  return v.is_string() ? v.get<std::string>() : otherwise;
}

// The number at j[path[0]][path[1]]..., or nothing.
inline std::optional<double> number_at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &j;
  for (const char* key : path) {
    at = &member_or_null(*at, key);
    if (at->is_null()) return std::nullopt;
  }
  return at->is_number() ? std::optional<double>(at->get<double>()) : std::nullopt;
}

// Whether the environment's CPU flags (env.cpu.flags) say the CPU has `flag`.
inline bool has_cpu_flag(const nlohmann::json& env, const char* flag) {
  const nlohmann::json& v = member_or_null(member_or_null(member_or_null(env, "cpu"), "flags"), flag);
  return v.is_boolean() && v.get<bool>();
}

}  // namespace mpbench::profiler
