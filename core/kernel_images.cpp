#include "core/kernel_images.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>

namespace mpbench {

namespace {

// The layout of nvcc's fatbinaries, as CUDA 12 and 13 write them (cuobjdump lists the same
// images). A fatbinary: a 16-byte header (magic, version 1, header size, size of the entries that
// follow), then entries back to back, each a header (kind, header size, payload size, the
// architecture at byte 28, flags at byte 40) and its payload.
constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr std::uint64_t kFatbinHeaderBytes = 16;
constexpr std::uint64_t kEntryFieldsBytes = 48;  // the fields read, up to the end of the flags
constexpr std::uint16_t kEntryPtx = 1, kEntrySass = 2;
constexpr std::uint64_t kFlagArchSpecific = 1u << 20;  // sm_90a: this compute capability only
constexpr std::uint64_t kFlagFamily = 1u << 21;        // sm_100f: its family's later minors too

template <typename T>
T load_le(std::string_view bytes, std::uint64_t offset) {
  T value{};
  std::memcpy(&value, bytes.data() + offset, sizeof value);  // x86-64 and aarch64 Linux are little-endian
  return value;
}

// Reads `T` at `offset` of `bytes`, or says which field ran past the end.
template <typename T>
T field(std::string_view bytes, std::uint64_t offset, std::string_view what) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    throw KernelImageError(fmt::format("{} at byte {} runs past the end ({} bytes)", what, offset, bytes.size()));
  return load_le<T>(bytes, offset);
}

KernelImage image_of_entry(std::uint16_t kind, std::uint32_t arch, std::uint64_t flags, std::uint64_t at) {
  if (arch < 10 || arch > 1000)
    throw KernelImageError(fmt::format("fatbinary entry at byte {}: architecture {} is not a compute capability", at, arch));
  if ((flags & kFlagArchSpecific) && (flags & kFlagFamily))
    throw KernelImageError(fmt::format("fatbinary entry at byte {}: flagged both architecture- and family-specific", at));
  KernelImage image{kind == kEntryPtx ? ImageKind::ptx : ImageKind::sass, static_cast<int>(arch), ImageVariant::plain};
  if (flags & kFlagArchSpecific) image.variant = ImageVariant::arch_specific;
  if (flags & kFlagFamily) image.variant = ImageVariant::family;
  return image;
}

// The entries of the fatbinary whose header starts at `start`; returns the offset just past it.
std::uint64_t parse_fatbinary(std::string_view section, std::uint64_t start, std::vector<KernelImage>& images) {
  const std::uint16_t version = field<std::uint16_t>(section, start + 4, "fatbinary version");
  const std::uint16_t header_bytes = field<std::uint16_t>(section, start + 6, "fatbinary header size");
  const std::uint64_t entries_bytes = field<std::uint64_t>(section, start + 8, "fatbinary size");
  if (version != 1) throw KernelImageError(fmt::format("fatbinary at byte {}: version {}, not 1", start, version));
  if (header_bytes < kFatbinHeaderBytes || header_bytes > section.size() - start ||
      entries_bytes > section.size() - start - header_bytes)
    throw KernelImageError(fmt::format("fatbinary at byte {}: header of {} and entries of {} bytes run past the "
                                       "section's end ({} bytes)", start, header_bytes, entries_bytes, section.size()));
  const std::uint64_t end = start + header_bytes + entries_bytes;
  for (std::uint64_t at = start + header_bytes; at < end;) {
    const std::string_view entries = section.substr(0, end);
    const auto kind = field<std::uint16_t>(entries, at, "fatbinary entry kind");
    const auto entry_bytes = field<std::uint32_t>(entries, at + 4, "fatbinary entry header size");
    const auto payload_bytes = field<std::uint64_t>(entries, at + 8, "fatbinary entry payload size");
    if (entry_bytes < kEntryFieldsBytes || entry_bytes > end - at || payload_bytes > end - at - entry_bytes)
      throw KernelImageError(fmt::format("fatbinary entry at byte {}: header of {} and payload of {} bytes run past "
                                         "its fatbinary's end (byte {})", at, entry_bytes, payload_bytes, end));
    if (kind == kEntryPtx || kind == kEntrySass)
      images.push_back(image_of_entry(kind, load_le<std::uint32_t>(entries, at + 28),
                                      load_le<std::uint64_t>(entries, at + 40), at));
    at += entry_bytes + payload_bytes;
  }
  return end;
}

// A source of bytes by offset: the whole ELF file in memory, or the file read piece by piece.
using ReadAt = std::function<std::string(std::uint64_t offset, std::uint64_t size, std::string_view what)>;

// The ELF64 section named .nv_fatbin, or empty where the file has none.
std::optional<std::string> nv_fatbin_section(const ReadAt& read, std::uint64_t file_size) {
  const std::string header = read(0, 64, "the ELF header");
  static constexpr std::array<char, 4> kElfMagic{0x7f, 'E', 'L', 'F'};
  if (!std::equal(kElfMagic.begin(), kElfMagic.end(), header.begin())) throw KernelImageError("not an ELF file");
  if (header[4] != 2 || header[5] != 1) throw KernelImageError("not a 64-bit little-endian ELF file");
  const auto table_offset = load_le<std::uint64_t>(header, 0x28);
  const auto entry_bytes = load_le<std::uint16_t>(header, 0x3A);
  const auto count = load_le<std::uint16_t>(header, 0x3C);
  const auto names_index = load_le<std::uint16_t>(header, 0x3E);
  if (count == 0) return std::nullopt;  // no section table (or one past 65,279 sections, which nvcc never makes)
  if (entry_bytes < 64) throw KernelImageError(fmt::format("ELF section headers of {} bytes, not 64", entry_bytes));
  if (names_index >= count) throw KernelImageError(fmt::format("ELF section-name table {} of {} sections", names_index, count));
  if (table_offset > file_size || (file_size - table_offset) / entry_bytes < count)
    throw KernelImageError(fmt::format("ELF section table at byte {} runs past the end ({} bytes)", table_offset, file_size));
  const std::string table = read(table_offset, std::uint64_t(entry_bytes) * count, "the ELF section table");
  auto section = [&](std::uint64_t index, std::string_view what) {
    const std::uint64_t at = index * entry_bytes;
    const auto offset = load_le<std::uint64_t>(table, at + 0x18), size = load_le<std::uint64_t>(table, at + 0x20);
    if (load_le<std::uint32_t>(table, at + 4) == 8) return std::string();  // SHT_NOBITS: no bytes in the file
    if (offset > file_size || size > file_size - offset)
      throw KernelImageError(fmt::format("{} at byte {} with {} bytes runs past the end ({} bytes)", what, offset, size, file_size));
    return read(offset, size, what);
  };
  const std::string names = section(names_index, "the ELF section-name table");
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto name = load_le<std::uint32_t>(table, i * entry_bytes);
    if (name >= names.size()) throw KernelImageError(fmt::format("ELF section {} has its name past the name table", i));
    if (std::string_view(names.c_str() + name) == ".nv_fatbin") return section(i, "the .nv_fatbin section");
  }
  return std::nullopt;
}

KernelImages images_of_file(const ReadAt& read, std::uint64_t file_size) {
  const std::optional<std::string> section = nv_fatbin_section(read, file_size);
  return section ? parse_fatbinaries(*section) : KernelImages{};
}

bool all_zero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

// Whether the driver can load `image` on compute capability major.minor: SASS runs on its own
// major's later minors (an arch-specific one on its own compute capability only); PTX is compiled
// for any later compute capability (arch-specific: its own; family: its major's later minors).
bool runs_on(const KernelImage& image, int major, int minor) {
  const int image_major = image.arch / 10, image_minor = image.arch % 10;
  if (image.variant == ImageVariant::arch_specific) return image_major == major && image_minor == minor;
  if (image.kind == ImageKind::sass || image.variant == ImageVariant::family)
    return image_major == major && image_minor <= minor;
  return image_major < major || (image_major == major && image_minor <= minor);
}

// The image the driver picks among those that run: the newest architecture, the most specific.
std::optional<KernelImage> best_image(const std::vector<KernelImage>& images, ImageKind kind, int major, int minor) {
  std::optional<KernelImage> best;
  for (const auto& image : images)
    if (image.kind == kind && runs_on(image, major, minor) &&
        (!best || std::pair(image.arch, image.variant != ImageVariant::plain) > std::pair(best->arch, best->variant != ImageVariant::plain)))
      best = image;
  return best;
}

std::string list_of(const std::vector<KernelImage>& images) {
  std::string out;
  for (const auto& image : images) out += (out.empty() ? "" : ", ") + image.name();
  return out.empty() ? "none" : out;
}

int severity(LoadPath path) {
  switch (path) {
    case LoadPath::native: return 0;
    case LoadPath::jit: return 1;
    case LoadPath::unknown: return 2;
    case LoadPath::none: return 3;
  }
  return 3;
}

bool variable_is_one(const char* name) {
  const char* value = std::getenv(name);
  return value && std::string_view(value) == "1";
}

}  // namespace

std::string KernelImage::name() const {
  const char* suffix = variant == ImageVariant::arch_specific ? "a" : variant == ImageVariant::family ? "f" : "";
  return fmt::format("{}_{}{}", kind == ImageKind::sass ? "sm" : "compute", arch, suffix);
}

std::vector<KernelImage> KernelImages::distinct() const {
  std::vector<KernelImage> all;
  for (const auto& fatbinary : fatbinaries) all.insert(all.end(), fatbinary.begin(), fatbinary.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

std::vector<std::string> KernelImages::names(ImageKind kind) const {
  std::vector<std::string> out;
  for (const auto& image : distinct())
    if (image.kind == kind) out.push_back(image.name());
  return out;
}

KernelImages parse_fatbinaries(std::string_view section) {
  KernelImages out;
  for (std::uint64_t at = 0; at < section.size();) {
    if (all_zero(section.substr(at, 4)) && all_zero(section.substr(at))) break;  // the section's zero padding
    const auto magic = field<std::uint32_t>(section, at, "fatbinary magic");
    if (magic != kFatbinMagic)
      throw KernelImageError(fmt::format("fatbinary at byte {}: magic {:#010x}, not {:#010x}", at, magic, kFatbinMagic));
    out.fatbinaries.emplace_back();
    at = parse_fatbinary(section, at, out.fatbinaries.back());
    // The next one starts at an 8-byte boundary, zeros before it.
    const std::uint64_t padding = std::min<std::uint64_t>((8 - at % 8) % 8, section.size() - at);
    if (!all_zero(section.substr(at, padding)))
      throw KernelImageError(fmt::format("fatbinary section: bytes that are not padding at byte {}", at));
    at += padding;
  }
  return out;
}

KernelImages read_elf_kernel_images(std::string_view elf) {
  const ReadAt read = [elf](std::uint64_t offset, std::uint64_t size, std::string_view what) {
    if (offset > elf.size() || size > elf.size() - offset)
      throw KernelImageError(fmt::format("{} runs past the end ({} bytes)", what, elf.size()));
    return std::string(elf.substr(offset, size));
  };
  return images_of_file(read, elf.size());
}

KernelImages read_kernel_images(const std::filesystem::path& file) {
  std::error_code error;
  const std::uint64_t size = std::filesystem::file_size(file, error);
  if (error) throw KernelImageError(fmt::format("{}: {}", file.string(), error.message()));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw KernelImageError(fmt::format("{}: cannot open it", file.string()));
  const ReadAt read = [&](std::uint64_t offset, std::uint64_t bytes, std::string_view what) {
    constexpr std::uint64_t kMaxPiece = 1ull << 30;
    if (offset > size || bytes > size - offset)
      throw KernelImageError(fmt::format("{}: {} runs past the end ({} bytes)", file.string(), what, size));
    if (bytes > kMaxPiece) throw KernelImageError(fmt::format("{}: {} has {} bytes, past 1 GiB", file.string(), what, bytes));
    std::string out(bytes, '\0');
    in.seekg(static_cast<std::streamoff>(offset));
    if (!in.read(out.data(), static_cast<std::streamsize>(bytes)))
      throw KernelImageError(fmt::format("{}: reading {} failed", file.string(), what));
    return out;
  };
  try {
    return images_of_file(read, size);
  } catch (const KernelImageError& e) {
    const std::string message = e.what();
    if (message.starts_with(file.string())) throw;
    throw KernelImageError(fmt::format("{}: {}", file.string(), message));
  }
}

std::string_view load_path_name(LoadPath path) {
  switch (path) {
    case LoadPath::native: return "native";
    case LoadPath::jit: return "jit";
    case LoadPath::none: return "none";
    case LoadPath::unknown: return "unknown";
  }
  return "unknown";
}

LoadSettings LoadSettings::from_environment() {
  return {variable_is_one("CUDA_FORCE_PTX_JIT"), variable_is_one("CUDA_DISABLE_PTX_JIT")};
}

nlohmann::json LoadDecision::to_json() const {
  return {{"path", load_path_name(path)},
          {"image", image ? nlohmann::json(image->name()) : nlohmann::json()},
          {"compute_capability", fmt::format("{}.{}", major, minor)},
          {"reason", reason}};
}

LoadDecision decide_load(int major, int minor, const std::vector<KernelImage>& images, const LoadSettings& settings) {
  LoadDecision d{LoadPath::none, std::nullopt, major, minor, ""};
  const std::string cc = fmt::format("{}.{}", major, minor), rebuild =
      fmt::format("rebuild with -DCMAKE_CUDA_ARCHITECTURES={}{} to run natively", major, minor);
  if (!settings.force_ptx_jit) d.image = best_image(images, ImageKind::sass, major, minor);
  if (d.image) {
    d.path = LoadPath::native;
    d.reason = fmt::format("{} runs natively on compute capability {}", d.image->name(), cc);
    return d;
  }
  if (!settings.disable_ptx_jit) d.image = best_image(images, ImageKind::ptx, major, minor);
  if (d.image) {
    d.path = LoadPath::jit;
    d.reason = fmt::format("{}: the driver compiles {} PTX for compute capability {} when the kernels load (once, "
                           "then cached; its code can be slower than SASS built for {}); {}",
                           settings.force_ptx_jit ? "CUDA_FORCE_PTX_JIT=1 ignores the SASS images"
                                                  : fmt::format("no SASS image runs on {}", cc),
                           d.image->name(), cc, cc, rebuild);
    return d;
  }
  d.reason = fmt::format("no image the driver can load on compute capability {} (the binary has {}{}): kernel "
                         "launches fail; {}", cc, list_of(images),
                         settings.disable_ptx_jit ? ", and CUDA_DISABLE_PTX_JIT=1 forbids compiling PTX" : "", rebuild);
  return d;
}

LoadDecision decide_load(int major, int minor, const KernelImages& images, const LoadSettings& settings) {
  if (images.fatbinaries.empty())
    return {LoadPath::none, std::nullopt, major, minor, "the binary carries no GPU code (built without CUDA kernels)"};
  std::optional<LoadDecision> worst;
  for (const auto& fatbinary : images.fatbinaries) {
    LoadDecision d = decide_load(major, minor, fatbinary, settings);
    if (!worst || severity(d.path) > severity(worst->path)) worst = std::move(d);
  }
  return *worst;
}

}  // namespace mpbench
