#pragma once
// Reading the files a user names (result documents, checkpoints, token files): regular files only,
// within a size bound, JSON without trailing text and within a nesting bound, each error naming
// the file and what is wrong with it.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace mpbench {

// Deeper JSON is refused: mpbench's own documents nest a dozen levels.
inline constexpr int kMaxJsonDepth = 64;

// The bytes of the regular file `path`. UsageError, naming `what` and the path, for a missing file,
// a folder, a FIFO or device, an unreadable file, or one larger than `max_bytes`.
std::string read_regular_file(const std::filesystem::path& path, std::uint64_t max_bytes, std::string_view what);

// `text` as one JSON value: UsageError naming `path` for invalid JSON, text after the value (two
// documents in one file among them), a NUL byte anywhere, or nesting deeper than kMaxJsonDepth.
nlohmann::json parse_json_file_text(const std::string& text, const std::filesystem::path& path);

}  // namespace mpbench
