#include "core/json_fields.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"

namespace mpbench {

JsonObject::JsonObject(const nlohmann::json& value, std::string where) : object_(&value), where_(std::move(where)) {
  if (!value.is_object()) throw UsageError(fmt::format("{}: must be an object, is {}", where_, value.type_name()));
}

std::string JsonObject::path_of(const char* key) const { return where_.empty() ? key : where_ + "." + key; }

void JsonObject::wrong(const char* key, const char* expected) const {
  if (!has(key)) throw UsageError(fmt::format("{}: missing; it must be {}", path_of(key), expected));
  throw UsageError(fmt::format("{}: must be {}, is {}", path_of(key), expected, (*object_)[key].type_name()));
}

const nlohmann::json& JsonObject::value(const char* key) const {
  if (!has(key)) wrong(key, "present");
  return (*object_)[key];
}

std::string JsonObject::text(const char* key) const {
  if (!has(key) || !(*object_)[key].is_string()) wrong(key, "a string");
  return (*object_)[key].get<std::string>();
}

std::string JsonObject::text_or(const char* key, const std::string& otherwise) const {
  return has(key) ? text(key) : otherwise;
}

double JsonObject::number(const char* key) const {
  if (!has(key) || !(*object_)[key].is_number()) wrong(key, "a number");
  const double x = (*object_)[key].get<double>();
  if (!std::isfinite(x)) wrong(key, "a finite number");
  return x;
}

JsonObject JsonObject::object(const char* key) const {
  if (!has(key) || !(*object_)[key].is_object()) wrong(key, "an object");
  return JsonObject((*object_)[key], path_of(key));
}

nlohmann::json JsonObject::object_or_empty(const char* key) const {
  return has_object(key) ? (*object_)[key] : nlohmann::json::object();
}

bool JsonObject::has_object(const char* key) const {
  if (!has(key)) return false;
  if (!(*object_)[key].is_object()) wrong(key, "an object");
  return true;
}

const nlohmann::json& JsonObject::array(const char* key) const {
  if (!has(key) || !(*object_)[key].is_array()) wrong(key, "an array");
  return (*object_)[key];
}

}  // namespace mpbench
