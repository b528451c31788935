#include "core/files.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <new>
#include <system_error>
#include <utility>
#include <vector>

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

namespace {

// The size of the regular file `path`, checked as read_regular_file says.
std::uintmax_t checked_size(const fs::path& path, std::uint64_t max_bytes, std::string_view what) {
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
  return size;
}

[[noreturn]] void throw_unreadable(const fs::path& path, std::string_view what) {
  throw UsageError(fmt::format("cannot read {} '{}': permission denied or a read error", what, path.string()));
}

}  // namespace

std::string read_regular_file(const fs::path& path, std::uint64_t max_bytes, std::string_view what) {
  const std::uintmax_t size = checked_size(path, max_bytes, what);
  std::ifstream in(path, std::ios::binary);
  std::string bytes;
  try {
    bytes.resize(size);
  } catch (const std::bad_alloc&) {
    throw UsageError(fmt::format("{} '{}' has {} bytes, more than this process can hold in memory", what,
                                 path.string(), size));
  }
  if (!in || !in.read(bytes.data(), static_cast<std::streamsize>(size))) throw_unreadable(path, what);
  return bytes;
}

namespace {

// Where a parse is in the document, kept from the parser's events: the keys and array indexes
// down to the value being read, e.g. cases[3].metrics.seconds.
class JsonLocation {
 public:
  void on(nlohmann::json::parse_event_t event, const nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start: levels_.push_back({false, 0, ""}); break;
      case Event::array_start: levels_.push_back({true, 0, ""}); break;
      case Event::key: levels_.back().key = parsed.get<std::string>(); break;
      case Event::object_end:
      case Event::array_end:
        levels_.pop_back();
        finished_a_value();
        break;
      case Event::value: finished_a_value(); break;
    }
  }
  std::string field() const {
    std::string path;
    for (const Level& level : levels_) {
      if (level.array) path += fmt::format("[{}]", level.index);
      else if (!level.key.empty()) path += (path.empty() ? "" : ".") + level.key;
    }
    return path;
  }

 private:
  // The next element of an array has the next index.
  void finished_a_value() {
    if (!levels_.empty() && levels_.back().array) ++levels_.back().index;
  }
  struct Level {
    bool array;
    std::size_t index;
    std::string key;
  };
  std::vector<Level> levels_;
};

// Line and column (from 1) of byte `offset` of `text`.
std::pair<std::size_t, std::size_t> line_and_column(const std::string& text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const std::size_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
  const std::size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  const std::size_t column = line_start == std::string::npos || offset == 0 ? offset + 1 : offset - line_start;
  return {line, column};
}

// What is wrong at the parser's stop, in words: the library's text names its own grammar states.
std::string what_is_wrong(const std::string& text, std::size_t offset, bool value_complete) {
  if (value_complete) return "text after the document's one JSON value (two documents in one file?)";
  if (offset >= text.size()) return "the text ends inside the document (a file cut short?)";
  // The parser stops at the first character of a word it does not know, or a few after it.
  for (const char* word : {"NaN", "Infinity", "nan", "inf"}) {
    for (std::size_t back = 0; back <= std::min<std::size_t>(offset, 8); ++back)
      if (text.compare(offset - back, std::strlen(word), word) == 0)
        return fmt::format("'{}' is not a JSON number (JSON has no NaN or infinity: write null or a finite number)",
                           word);
  }
  return "not JSON here (a missing comma, quote or bracket, or a stray character)";
}

}  // namespace

namespace {

// The deepest nesting of arrays and objects in `text` (brackets inside strings left out), counted
// before parsing, so that the parse itself needs no callback on every value (which took more time
// than the parse).
int nesting_depth(const std::string& text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// The parse error of invalid `text`, in words: parsed again with a callback that follows where in
// the document the parser is, to name the field.
[[noreturn]] void throw_parse_error(const std::string& text, const fs::path& path) {
  JsonLocation location;
  bool value_complete = false;
  const auto follow = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    location.on(event, parsed);
    value_complete = depth == 0 && event != nlohmann::json::parse_event_t::object_start &&
                     event != nlohmann::json::parse_event_t::array_start && event != nlohmann::json::parse_event_t::key;
    return true;
  };
  try {
    [[maybe_unused]] const nlohmann::json parsed = nlohmann::json::parse(text, follow);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is one past the character the parser stopped at.
    const std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    const auto [line, column] = line_and_column(text, offset);
    const std::string field = location.field();
    throw UsageError(fmt::format("'{}' is not valid JSON at line {}, column {} (byte {}){}: {}", path.string(), line,
                                 column, offset, field.empty() ? "" : ", in field " + field,
                                 what_is_wrong(text, offset, value_complete)));
  }
  throw UsageError(fmt::format("'{}' is not valid JSON", path.string()));
}

// What every JSON file must be before it is parsed.
void check_json_text(const std::string& text, const fs::path& path) {
  // The parser takes a NUL for the end of the text: whatever follows one would go unread.
  if (const auto nul = text.find('\0'); nul != std::string::npos)
    throw UsageError(fmt::format("'{}' holds a NUL byte at byte {}: not JSON text", path.string(), nul));
  // Refused before the parse, so a hostile nesting never reaches code that recurses over it.
  if (nesting_depth(text) > kMaxJsonDepth)
    throw UsageError(fmt::format("'{}' nests JSON deeper than {} levels: not an mpbench file", path.string(),
                                 kMaxJsonDepth));
}

}  // namespace

nlohmann::json parse_json_file_text(const std::string& text, const fs::path& path) {
  check_json_text(text, path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    throw_parse_error(text, path);
  }
}

nlohmann::json parse_json_file_text(const std::string& text, const fs::path& path,
                                    const nlohmann::json::parser_callback_t& callback) {
  check_json_text(text, path);
  try {
    return nlohmann::json::parse(text, callback);
  } catch (const nlohmann::json::parse_error&) {
    throw_parse_error(text, path);
  }
}

namespace {

// Something check_json_text would refuse, met while reading a file a chunk at a time.
struct RefusedText {};

// A file read in chunks as the characters of an input iterator, for the JSON parser: the text is
// never whole in memory. Each chunk is looked through for a NUL byte when it is read, before the
// parser sees any of it (the parser takes a NUL for the end of the text).
class ChunkedFile {
 public:
  ChunkedFile(const fs::path& path, std::string_view what) : path_(path), what_(what), in_(path, std::ios::binary) {
    if (!in_) throw_unreadable(path_, what_);
  }

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    iterator() = default;
    explicit iterator(ChunkedFile* file) : file_(file->at_end() ? nullptr : file) {}
    const char& operator*() const { return file_->current(); }
    iterator& operator++() {
      if (!file_->advance()) file_ = nullptr;
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(const iterator& other) const { return file_ == other.file_; }

   private:
    ChunkedFile* file_ = nullptr;  // null at the end
  };

  iterator begin() { return iterator(this); }
  static iterator end() { return {}; }

 private:
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

  bool at_end() { return next_ == chunk_.size() && !read_chunk(); }
  const char& current() const { return chunk_[next_]; }
  bool advance() { return ++next_ < chunk_.size() || read_chunk(); }

  bool read_chunk() {
    chunk_.resize(kChunkBytes);
    in_.read(chunk_.data(), static_cast<std::streamsize>(chunk_.size()));
    if (in_.bad()) throw_unreadable(path_, what_);
    chunk_.resize(static_cast<std::size_t>(in_.gcount()));
    next_ = 0;
    if (std::memchr(chunk_.data(), '\0', chunk_.size())) throw RefusedText{};
    return !chunk_.empty();
  }

  const fs::path& path_;
  std::string_view what_;
  std::ifstream in_;
  std::string chunk_;
  std::size_t next_ = 0;
};

}  // namespace

nlohmann::json parse_json_file(const fs::path& path, std::uint64_t max_bytes, std::string_view what,
                               const nlohmann::json::parser_callback_t& callback) {
  checked_size(path, max_bytes, what);
  const auto within_depth = [&callback](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    // `depth` counts the values around this one: the document's own object or array is at 0.
    if ((event == Event::object_start || event == Event::array_start) && depth + 1 > kMaxJsonDepth) throw RefusedText{};
    return callback(depth, event, parsed);
  };
  try {
    ChunkedFile file(path, what);
    return nlohmann::json::parse(file.begin(), ChunkedFile::end(), within_depth);
  } catch (const RefusedText&) {
  } catch (const nlohmann::json::parse_error&) {
  }
  // The error in words, as parse_json_file_text says it: what the whole text shows.
  const std::string text = read_regular_file(path, max_bytes, what);
  check_json_text(text, path);
  throw_parse_error(text, path);
}

fs::path followed_links(const fs::path& path) {
  fs::path current = path;
  std::error_code ec;
  // Linux's own bound on a chain of links (MAXSYMLINKS).
  for (int links = 0; links < 40; ++links) {
    if (!fs::is_symlink(current, ec)) return current;
    const fs::path target = fs::read_symlink(current, ec);
    if (ec) throw UsageError(fmt::format("cannot follow the link '{}': {}", current.string(), ec.message()));
    current = target.is_absolute() ? target : current.parent_path() / target;
  }
  throw UsageError(fmt::format("'{}' is a loop of symbolic links: give a file's name", path.string()));
}

namespace {

// The path as the file system resolves it, for paths that need not exist yet.
fs::path resolved(const fs::path& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  const fs::path canonical = fs::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : canonical;
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return resolved(a) == resolved(b);
}

// Whether `inner` is `outer` or lies below it.
bool inside(const fs::path& inner, const fs::path& outer) {
  const fs::path relative = resolved(inner).lexically_relative(resolved(outer));
  return !relative.empty() && *relative.begin() != "..";
}

}  // namespace

void refuse_overwriting(const NamedPath& output, const NamedPath& input) {
  if (output.path.empty() || input.path.empty()) return;
  const auto refuse = [&](std::string_view how) {
    throw UsageError(fmt::format("{} '{}' {} {} '{}': writing it would destroy the other; give each its own path",
                                 output.option, output.path.string(), how, input.option, input.path.string()));
  };
  if (same_file(output.path, input.path)) refuse("is the same file as");
  std::error_code ec;
  // A new file in an input folder destroys nothing; an existing one may be what it reads.
  if (fs::is_directory(input.path, ec) && fs::exists(output.path, ec) && inside(output.path, input.path))
    refuse("lies inside");
  if (fs::is_directory(output.path, ec) && inside(input.path, output.path)) refuse("holds");
}

namespace {

// Whether the process of a `<name>.tmp<pid>` left beside a file or folder no longer runs.
bool left_by_a_dead_process(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  const std::string digits = name.substr(prefix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) return false;
  return ::kill(static_cast<pid_t>(std::stol(digits)), 0) != 0 && errno == ESRCH;
}

}  // namespace

void remove_stale_temporaries(const fs::path& path) {
  const fs::path folder = path.has_parent_path() ? path.parent_path() : ".";
  const std::string prefix = path.filename().string() + ".tmp";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (left_by_a_dead_process(entry.path().filename().string(), prefix)) fs::remove_all(entry.path(), ec);
}

namespace {

// Puts `fresh` where `folder` is, in one step where the file system can: the exchange leaves the
// old folder at `fresh`'s name, to be removed.
void swap_into_place(const fs::path& fresh, const fs::path& folder) {
  std::error_code ec;
  if (!fs::exists(folder, ec)) {
    fs::rename(fresh, folder, ec);
  } else if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, folder.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(fresh, ec);
    return;
  } else {
    // No exchange on this file system: the old folder moves aside first (a kill between the two
    // renames leaves both whole folders, under the temporary names).
    const fs::path old = fresh.string() + ".old";
    fs::rename(folder, old, ec);
    if (!ec) fs::rename(fresh, folder, ec);
    if (!ec) fs::remove_all(old, ec);
  }
  if (ec) {
    fs::remove_all(fresh, ec);
    throw UsageError(fmt::format("cannot put the new '{}' in place: {}", folder.string(), ec.message()));
  }
}

}  // namespace

void write_folder_atomically(const fs::path& folder, const std::function<void(const fs::path&)>& fill) {
  const fs::path target = followed_links(folder.has_filename() ? folder : folder.parent_path());
  std::error_code ec;
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec || !fs::is_directory(parent))
    throw UsageError(fmt::format("cannot create the folder '{}': {}", parent.string(),
                                 ec ? ec.message() : "a file of that name is in the way"));
  if (fs::exists(target, ec) && !fs::is_directory(target, ec))
    throw UsageError(fmt::format("cannot write the folder '{}': a file of that name is in the way", target.string()));
  remove_stale_temporaries(target);
  const fs::path fresh = target.string() + fmt::format(".tmp{}", ::getpid());
  fs::remove_all(fresh, ec);
  if (!fs::create_directory(fresh, ec) || ec)
    throw UsageError(fmt::format("cannot create '{}': {}", fresh.string(), ec.message()));
  try {
    fill(fresh);
  } catch (...) {
    fs::remove_all(fresh, ec);
    throw;
  }
  swap_into_place(fresh, target);
}

}  // namespace mpbench
