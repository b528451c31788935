#pragma once
// Reading the files a user names (result documents, checkpoints, token files): regular files only,
// within a size bound, JSON without trailing text and within a nesting bound, each error naming
// the file and what is wrong with it. Writing them: outputs that would overwrite an input of the
// same command are refused, links are written through, folders are replaced as one unit.
#include <cstdint>
#include <filesystem>
#include <functional>
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
// The same with nlohmann's parser callback, which sees each value as it is completed and may drop
// it from the result (a reader that converts large arrays element by element).
nlohmann::json parse_json_file_text(const std::string& text, const std::filesystem::path& path,
                                    const nlohmann::json::parser_callback_t& callback);
// read_regular_file and parse_json_file_text with `callback` in one, the file read a chunk at a
// time as it is parsed: its text never whole in memory (half a GB for a document of a million
// cases). The same checks and errors; only to name a parse error's position and field is the
// text read again whole.
nlohmann::json parse_json_file(const std::filesystem::path& path, std::uint64_t max_bytes, std::string_view what,
                               const nlohmann::json::parser_callback_t& callback);

// What `path` names once its symbolic links are followed (a chain of them, each relative target
// read against its link's folder): a write there replaces the target's content and keeps the
// link. A path that is no link is returned as it is. UsageError for a loop of links.
std::filesystem::path followed_links(const std::filesystem::path& path);

// One path a command reads or writes, with the option that named it (for the error message).
struct NamedPath {
  std::string_view option;  // "--out", "BASE"
  std::filesystem::path path;
};

// UsageError (exit 2), before any work, when writing `output` would overwrite `input` (a file the
// command reads, or another of its outputs): the same file or folder (through links and hard
// links), an existing file inside the input folder, or a folder that holds the input. Paths that
// do not exist yet are compared by their resolved names.
void refuse_overwriting(const NamedPath& output, const NamedPath& input);

// Removes what processes killed between writing and renaming left beside `path`: the files or
// folders `path.tmp<pid>` of processes that no longer run.
void remove_stale_temporaries(const std::filesystem::path& path);

// Fills a new folder through `fill` (given the folder to write into, beside `folder`) and then
// puts it in place of `folder` in one rename (Linux renameat2's exchange, the old folder removed
// after it), so that a process killed at any point leaves either the whole old folder or the
// whole new one, never a mix. Folders that killed processes left beside it are removed first.
// UsageError naming the folder when it cannot be written.
void write_folder_atomically(const std::filesystem::path& folder,
                             const std::function<void(const std::filesystem::path&)>& fill);

}  // namespace mpbench
