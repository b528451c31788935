// The kernel-image reader on an object file nvcc wrote, on fatbinaries and ELF files built here
// byte by byte (then cut short and corrupted: every error a KernelImageError, never a read past
// the end, which the sanitizer build checks), and the native/JIT decision on compute capabilities
// of real GPUs against CUDA's documented compatibility rules.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/kernel_images.hpp"

namespace mpbench {
namespace {

struct Entry {
  std::uint16_t kind;  // 1 PTX, 2 SASS
  std::uint32_t arch;
  std::uint64_t flags;
  std::uint32_t header_bytes = 64;
  std::uint64_t payload_bytes = 24;
};

template <typename T>
void put(std::string& bytes, std::size_t at, T value) {
  if (bytes.size() < at + sizeof value) bytes.resize(at + sizeof value, '\0');
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

// One fatbinary as nvcc lays it out: a 16-byte header, then each entry's header and payload.
std::string fatbinary(const std::vector<Entry>& entries) {
  std::string body;
  for (const auto& e : entries) {
    std::string header(e.header_bytes, '\0');
    put<std::uint16_t>(header, 0, e.kind);
    put<std::uint16_t>(header, 2, 0x0101);
    put<std::uint32_t>(header, 4, e.header_bytes);
    put<std::uint64_t>(header, 8, e.payload_bytes);
    put<std::uint32_t>(header, 28, e.arch);
    put<std::uint64_t>(header, 40, e.flags);
    body += header + std::string(e.payload_bytes, '\x5a');
  }
  std::string out;
  put<std::uint32_t>(out, 0, 0xBA55ED50u);
  put<std::uint16_t>(out, 4, 1);
  put<std::uint16_t>(out, 6, 16);
  put<std::uint64_t>(out, 8, body.size());
  return out + body;
}

constexpr std::uint64_t kArch = 1u << 20, kFamily = 1u << 21;

std::vector<std::string> names_of(const KernelImages& images) {
  std::vector<std::string> out;
  for (const auto& i : images.distinct()) out.push_back(i.name());
  return out;
}

// An ELF64 file whose sections are: none, the section-name table, `.nv_fatbin` holding `section`.
std::string elf_with(const std::string& section, std::uint32_t fatbin_type = 1) {
  const std::string names = std::string("\0.shstrtab\0.nv_fatbin\0", 22);
  std::string file(64, '\0');
  file[0] = 0x7f, file[1] = 'E', file[2] = 'L', file[3] = 'F', file[4] = 2, file[5] = 1;
  const std::size_t names_at = file.size();
  file += names;
  const std::size_t fatbin_at = file.size();
  file += section;
  const std::size_t table_at = file.size();
  file += std::string(3 * 64, '\0');
  auto header = [&](int index, std::uint32_t name, std::uint32_t type, std::uint64_t offset, std::uint64_t size) {
    const std::size_t at = table_at + 64 * index;
    put<std::uint32_t>(file, at, name);
    put<std::uint32_t>(file, at + 4, type);
    put<std::uint64_t>(file, at + 0x18, offset);
    put<std::uint64_t>(file, at + 0x20, size);
  };
  header(1, 1, 3, names_at, names.size());
  header(2, 11, fatbin_type, fatbin_at, section.size());
  put<std::uint64_t>(file, 0x28, table_at);
  put<std::uint16_t>(file, 0x3A, 64);
  put<std::uint16_t>(file, 0x3C, 3);
  put<std::uint16_t>(file, 0x3E, 1);
  return file;
}

TEST(KernelImages, AnObjectNvccWroteListsTheImagesItWasAskedFor) {
#ifndef MPBENCH_KERNEL_IMAGES_FIXTURE
  GTEST_SKIP() << "built without CUDA: no nvcc-made fixture object to read";
#else
  const KernelImages images = read_kernel_images(MPBENCH_KERNEL_IMAGES_FIXTURE);
  ASSERT_EQ(images.fatbinaries.size(), 1u);
  EXPECT_EQ(names_of(images), (std::vector<std::string>{"sm_75", "sm_90a", "sm_100f", "compute_120"}));
  EXPECT_EQ(images.names(ImageKind::ptx), std::vector<std::string>{"compute_120"});
#endif
}

TEST(KernelImages, EveryKindAndVariantIsReadFromItsFlags) {
  std::mt19937_64 random(std::random_device{}());
  std::uniform_int_distribution<std::uint64_t> payload(0, 300);
  // Random payload sizes and header sizes as nvcc writes them (64, 80, 112), two fatbinaries back to back.
  const std::vector<Entry> first{{2, 75, 0x11, 64, payload(random)}, {2, 90, 0x11 | kArch, 64, payload(random)},
                                 {2, 100, 0x1000011 | kFamily, 112, payload(random)}};
  const std::vector<Entry> second{{1, 120, 0x8011, 80, payload(random)}, {2, 120, 0x1000011, 112, payload(random)}};
  std::string section = fatbinary(first);
  section.resize((section.size() + 7) / 8 * 8, '\0');
  section += fatbinary(second);
  section += std::string(8, '\0');  // the section's own padding
  const KernelImages images = parse_fatbinaries(section);
  ASSERT_EQ(images.fatbinaries.size(), 2u);
  EXPECT_EQ(images.fatbinaries[0].size(), 3u);
  EXPECT_EQ(names_of(images), (std::vector<std::string>{"sm_75", "sm_90a", "sm_100f", "sm_120", "compute_120"}));
  EXPECT_EQ(read_elf_kernel_images(elf_with(section)).distinct(), images.distinct());
}

TEST(KernelImages, AFileWithoutFatbinariesHasNoImages) {
  EXPECT_TRUE(read_elf_kernel_images(elf_with("")).fatbinaries.empty());
  EXPECT_TRUE(read_elf_kernel_images(elf_with(fatbinary({{2, 90, 0x11}}), 8)).fatbinaries.empty());  // NOBITS
  std::string no_sections = elf_with("");
  put<std::uint16_t>(no_sections, 0x3C, 0);
  EXPECT_TRUE(read_elf_kernel_images(no_sections).fatbinaries.empty());
}

TEST(KernelImages, EveryCutShortSectionIsAnError) {
  const std::string section = fatbinary({{2, 80, 0x11, 64, 40}, {1, 90, 0x8011, 80, 17}});
  for (std::size_t length = 1; length < section.size(); ++length)
    EXPECT_THROW(parse_fatbinaries(section.substr(0, length)), KernelImageError) << length;
  const std::string elf = elf_with(section);
  for (std::size_t length = 0; length < elf.size(); length += 7)
    EXPECT_THROW(read_elf_kernel_images(elf.substr(0, length)), KernelImageError) << length;
}

TEST(KernelImages, FieldsThatPointPastTheEndAreErrorsNotReads) {
  const std::string good = fatbinary({{2, 80, 0x11, 64, 40}});
  auto with = [&](std::size_t at, auto value) {
    std::string s = good;
    put(s, at, value);
    return s;
  };
  for (const std::string& bad : {with(0, std::uint32_t{0x12345678}),            // magic
                                 with(4, std::uint16_t{2}),                      // version
                                 with(6, std::uint16_t{0xffff}),                 // header size
                                 with(8, ~std::uint64_t{0}),                     // size of the entries
                                 with(16 + 4, std::uint32_t{0}),                 // an entry header of 0 bytes
                                 with(16 + 4, std::uint32_t{47}),                // shorter than its fields
                                 with(16 + 4, ~std::uint32_t{0}),                // past the fatbinary
                                 with(16 + 8, ~std::uint64_t{0}),                // payload past it (wraps)
                                 with(16 + 8, std::uint64_t{41}),                // payload one byte too long
                                 with(16 + 28, std::uint32_t{0}),                // no architecture
                                 with(16 + 40, std::uint64_t{0x11 | kArch | kFamily}),
                                 good + "garbage!"})
    EXPECT_THROW(parse_fatbinaries(bad), KernelImageError);
}

TEST(KernelImages, CorruptElfHeadersAreErrorsNotReads) {
  const std::string good = elf_with(fatbinary({{2, 80, 0x11}}));
  const std::size_t table = std::size_t(good.size() - 3 * 64);
  auto with = [&](std::size_t at, auto value) {
    std::string s = good;
    put(s, at, value);
    return s;
  };
  for (const std::string& bad : {with(0, std::uint8_t{0}), with(4, std::uint8_t{1}), with(5, std::uint8_t{2}),
                                 with(0x28, ~std::uint64_t{0}), with(0x28, std::uint64_t(good.size() - 64)),
                                 with(0x3A, std::uint16_t{8}), with(0x3E, std::uint16_t{3}),
                                 with(table + 64 * 2, ~std::uint32_t{0}),               // name past the table
                                 with(table + 64 * 2 + 0x18, ~std::uint64_t{0}),       // offset past the end
                                 with(table + 64 * 2 + 0x20, std::uint64_t(good.size())),
                                 with(table + 64 + 0x20, ~std::uint64_t{0})})           // name table too long
    EXPECT_THROW(read_elf_kernel_images(bad), KernelImageError);
}

TEST(KernelImages, RandomByteChangesNeverCrashTheReader) {
  std::mt19937_64 random(std::random_device{}());
  std::string section = fatbinary({{2, 80, 0x11, 64, 40}, {2, 90, 0x100011, 64, 8}, {1, 120, 0x8011, 80, 33}});
  section.resize((section.size() + 7) / 8 * 8, '\0');
  const std::string elf = elf_with(section + fatbinary({{2, 100, 0x1200011, 112, 16}}));
  int errors = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string mutated = elf;
    for (int k = 0; k < 1 + int(random() % 4); ++k) mutated[random() % mutated.size()] = char(random());
    try {
      for (const auto& image : read_elf_kernel_images(mutated).distinct()) EXPECT_GE(image.arch, 10);
    } catch (const KernelImageError&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);  // the mutations reached the checks
}

KernelImage sass(int arch, ImageVariant v = ImageVariant::plain) { return {ImageKind::sass, arch, v}; }
KernelImage ptx(int arch, ImageVariant v = ImageVariant::plain) { return {ImageKind::ptx, arch, v}; }

// The images this project's default build carries (CMakeLists.txt's CMAKE_CUDA_ARCHITECTURES).
const std::vector<KernelImage> kDefaultBuild{sass(75), sass(80), sass(89), sass(90), sass(100), sass(120), ptx(120)};

TEST(KernelLoad, EachGenerationOfTheDefaultBuildRunsNativelyAndANewerOneCompilesPtx) {
  struct Gpu {
    int major, minor;
    LoadPath path;
    const char* image;
  };
  // SASS runs on later minors of its own major (8.6 and 8.7 on sm_80; 10.3 on sm_100; 12.1 on
  // sm_120), never on another major; PTX is compiled for any later compute capability.
  for (const Gpu& gpu : {Gpu{7, 0, LoadPath::none, ""}, Gpu{7, 5, LoadPath::native, "sm_75"},
                         Gpu{8, 0, LoadPath::native, "sm_80"}, Gpu{8, 6, LoadPath::native, "sm_80"},
                         Gpu{8, 7, LoadPath::native, "sm_80"}, Gpu{8, 9, LoadPath::native, "sm_89"},
                         Gpu{9, 0, LoadPath::native, "sm_90"}, Gpu{10, 0, LoadPath::native, "sm_100"},
                         Gpu{10, 3, LoadPath::native, "sm_100"}, Gpu{11, 0, LoadPath::none, ""},
                         Gpu{12, 0, LoadPath::native, "sm_120"}, Gpu{12, 1, LoadPath::native, "sm_120"},
                         Gpu{13, 0, LoadPath::jit, "compute_120"}}) {
    const LoadDecision d = decide_load(gpu.major, gpu.minor, kDefaultBuild);
    EXPECT_EQ(d.path, gpu.path) << gpu.major << "." << gpu.minor << ": " << d.reason;
    EXPECT_EQ(d.image ? d.image->name() : "", gpu.image) << gpu.major << "." << gpu.minor;
    if (gpu.path != LoadPath::native) {
      EXPECT_NE(d.reason.find(fmt::format("-DCMAKE_CUDA_ARCHITECTURES={}{}", gpu.major, gpu.minor)), std::string::npos)
          << d.reason;
    }
  }
}

TEST(KernelLoad, ArchitectureAndFamilySpecificImagesRunWhereTheirSuffixSays) {
  EXPECT_EQ(decide_load(9, 0, {sass(90, ImageVariant::arch_specific)}).path, LoadPath::native);
  EXPECT_EQ(decide_load(10, 0, {sass(90, ImageVariant::arch_specific)}).path, LoadPath::none);
  EXPECT_EQ(decide_load(10, 0, {ptx(90, ImageVariant::arch_specific)}).path, LoadPath::none);
  EXPECT_EQ(decide_load(10, 3, {sass(100, ImageVariant::family)}).path, LoadPath::native);
  EXPECT_EQ(decide_load(12, 0, {sass(100, ImageVariant::family)}).path, LoadPath::none);
  EXPECT_EQ(decide_load(10, 3, {ptx(100, ImageVariant::family)}).path, LoadPath::jit);
  EXPECT_EQ(decide_load(12, 0, {ptx(100, ImageVariant::family)}).path, LoadPath::none);
  // The newest image that runs, the specific one among equals.
  const LoadDecision d = decide_load(9, 0, {sass(80), sass(90), sass(90, ImageVariant::arch_specific), ptx(90)});
  EXPECT_EQ(d.image->name(), "sm_90a");
}

TEST(KernelLoad, TheDriverVariablesChangeTheChoice) {
  const LoadDecision forced = decide_load(9, 0, {sass(90), ptx(90)}, {.force_ptx_jit = true});
  EXPECT_EQ(forced.path, LoadPath::jit);
  EXPECT_NE(forced.reason.find("CUDA_FORCE_PTX_JIT=1"), std::string::npos) << forced.reason;
  const LoadDecision disabled = decide_load(13, 0, {sass(90), ptx(120)}, {.disable_ptx_jit = true});
  EXPECT_EQ(disabled.path, LoadPath::none);
  EXPECT_NE(disabled.reason.find("CUDA_DISABLE_PTX_JIT=1"), std::string::npos) << disabled.reason;
}

TEST(KernelLoad, EveryTranslationUnitMustLoadSoTheWorstDecides) {
  KernelImages images{{{sass(90), ptx(90)}, {ptx(90)}}};
  EXPECT_EQ(decide_load(9, 0, images).path, LoadPath::jit);
  images.fatbinaries.push_back({sass(80)});
  EXPECT_EQ(decide_load(9, 0, images).path, LoadPath::none);
  const LoadDecision empty = decide_load(9, 0, KernelImages{});
  EXPECT_EQ(empty.path, LoadPath::none);
  EXPECT_EQ(empty.to_json()["compute_capability"], "9.0");
  EXPECT_TRUE(empty.to_json()["image"].is_null());
}

}  // namespace
}  // namespace mpbench
