#pragma once
// One JSON object of a file a user gave, read field by field: every error is a UsageError naming
// where the field is ("cases[3].metrics.seconds.median") and what it should be, never the JSON
// library's own text.
#include <nlohmann/json.hpp>
#include <string>

namespace mpbench {

class JsonObject {
 public:
  // UsageError unless `value` is an object. `where` names it, e.g. "cases[3]".
  JsonObject(const nlohmann::json& value, std::string where);

  const std::string& where() const { return where_; }
  const nlohmann::json& json() const { return *object_; }
  std::string path_of(const char* key) const;  // "cases[3].key"
  bool has(const char* key) const { return object_->contains(key); }

  const nlohmann::json& value(const char* key) const;  // required, of any type
  std::string text(const char* key) const;             // a required string
  std::string text_or(const char* key, const std::string& otherwise) const;
  double number(const char* key) const;                // a required finite number
  JsonObject object(const char* key) const;            // a required object
  nlohmann::json object_or_empty(const char* key) const;  // an object when present, {} when absent
  bool has_object(const char* key) const;  // false when absent; UsageError when present and not an object
  const nlohmann::json& array(const char* key) const;  // a required array

 private:
  [[noreturn]] void wrong(const char* key, const char* expected) const;

  const nlohmann::json* object_;
  std::string where_;
};

}  // namespace mpbench
