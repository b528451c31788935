#include "core/files.hpp"

#include <fmt/format.h>

#include <fstream>
#include <system_error>

#include "core/error.hpp"

namespace mpbench {

namespace fs = std::filesystem;

namespace {

std::string kind_of(fs::file_type type) {
  switch (type) {
    case fs::file_type::directory: return "a folder";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::block:
    case fs::file_type::character: return "a device";
    case fs::file_type::socket: return "a socket";
    default: return "not a regular file";
  }
}

}  // namespace

std::string read_regular_file(const fs::path& path, std::uint64_t max_bytes, std::string_view what) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || status.type() == fs::file_type::not_found)
    throw UsageError(fmt::format("{} '{}' is missing: check the path", what, path.string()));
  if (status.type() != fs::file_type::regular)
    throw UsageError(fmt::format("{} '{}' is {}: give a regular file", what, path.string(), kind_of(status.type())));
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw UsageError(fmt::format("cannot read {} '{}': {}", what, path.string(), ec.message()));
  if (size > max_bytes)
    throw UsageError(fmt::format("{} '{}' has {} bytes, more than the {} bytes mpbench reads", what, path.string(), size,
                                 max_bytes));
  std::ifstream in(path, std::ios::binary);
  std::string bytes(size, '\0');
  if (!in || !in.read(bytes.data(), static_cast<std::streamsize>(size)))
    throw UsageError(fmt::format("cannot read {} '{}': permission denied or a read error", what, path.string()));
  return bytes;
}

nlohmann::json parse_json_file_text(const std::string& text, const fs::path& path) {
  // The callback sees every value with its depth; refusing a deep one stops the parse before the
  // document is built, so a hostile nesting never reaches code that recurses over it.
  const auto bounded = [&path](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth >= kMaxJsonDepth)  // depth counts from 0 at the top level
      throw UsageError(fmt::format("'{}' nests JSON deeper than {} levels: not an mpbench file", path.string(),
                                   kMaxJsonDepth));
    return true;
  };
  // The parser takes a NUL for the end of the text: whatever follows one would go unread.
  if (const auto nul = text.find('\0'); nul != std::string::npos)
    throw UsageError(fmt::format("'{}' holds a NUL byte at byte {}: not JSON text", path.string(), nul));
  try {
    return nlohmann::json::parse(text, bounded);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("'{}' is not valid JSON (one value, nothing after it): {}", path.string(), e.what()));
  }
}

}  // namespace mpbench
