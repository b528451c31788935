#pragma once
// Which GPU code a binary carries, and whether a GPU runs it natively or JIT-compiled. nvcc embeds
// its output in the ELF section .nv_fatbin: one fatbinary per translation unit, each with SASS
// images (cubins: machine code for one architecture) and PTX (which the driver compiles for the
// GPU when the kernels load). Reading it needs no GPU, so what a GPU would run is known, recorded
// and tested anywhere.
#include <compare>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mpbench {

enum class ImageKind { sass, ptx };

// plain: sm_90 (runs on 9.0 and later minors of major 9); arch_specific: sm_90a (9.0 only);
// family: sm_100f (the minors of major 10 from 0 up).
enum class ImageVariant { plain, arch_specific, family };

struct KernelImage {
  ImageKind kind = ImageKind::sass;
  int arch = 0;  // 10 * major + minor: 75, 90, 120
  ImageVariant variant = ImageVariant::plain;

  std::string name() const;  // "sm_90a", "compute_120"
  auto operator<=>(const KernelImage&) const = default;
};

// The images of each fatbinary, in file order.
struct KernelImages {
  std::vector<std::vector<KernelImage>> fatbinaries;

  // Every image of any fatbinary once, sorted (by kind, then architecture).
  std::vector<KernelImage> distinct() const;
  std::vector<std::string> names(ImageKind kind) const;  // of distinct()
};

// A file that is not what it claims to be: the message names what is wrong and where.
class KernelImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The contents of a .nv_fatbin section: fatbinaries one after the other, each 8-byte aligned.
KernelImages parse_fatbinaries(std::string_view section);
// An ELF64 little-endian file's images; none when it has no .nv_fatbin section (CPU-only code).
KernelImages read_elf_kernel_images(std::string_view elf);
// The file's images (read whole, up to 1 GiB). KernelImageError for an unreadable or malformed file.
KernelImages read_kernel_images(const std::filesystem::path& file);

// How the CUDA driver loads a binary's kernels on a GPU.
enum class LoadPath {
  native,   // a SASS image built for a compatible architecture
  jit,      // no such image: the driver compiles PTX when the kernels load
  none,     // no image the GPU can run: launches fail
  unknown,  // the binary's images could not be read
};
std::string_view load_path_name(LoadPath path);

// The driver's variables that change its choice.
struct LoadSettings {
  bool force_ptx_jit = false;    // CUDA_FORCE_PTX_JIT=1: SASS is ignored, PTX is always compiled
  bool disable_ptx_jit = false;  // CUDA_DISABLE_PTX_JIT=1: PTX is never compiled
  static LoadSettings from_environment();
};

struct LoadDecision {
  LoadPath path = LoadPath::unknown;
  std::optional<KernelImage> image;  // the SASS that runs, or the PTX compiled
  int major = 0, minor = 0;          // the GPU's compute capability
  std::string reason;                // one sentence, with what to do where it is not native

  // {"path", "image" (null without one), "compute_capability" ("8.6"), "reason"}
  nlohmann::json to_json() const;
};

// The choice for one fatbinary (one translation unit's kernels).
LoadDecision decide_load(int major, int minor, const std::vector<KernelImage>& images, const LoadSettings& settings = {});
// Over every fatbinary: the worst one (none, then jit, then native), since every kernel must load.
LoadDecision decide_load(int major, int minor, const KernelImages& images, const LoadSettings& settings = {});

}  // namespace mpbench
