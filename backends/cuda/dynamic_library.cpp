#include "backends/cuda/dynamic_library.hpp"

namespace mpbench::cuda {

void* open_library(std::initializer_list<std::string> names) {
  for (const std::string& name : names) {
    if (void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
#ifdef MPBENCH_CUDA_LIBRARY_DIR
    const std::string in_toolkit = std::string(MPBENCH_CUDA_LIBRARY_DIR) + "/" + name;
    if (void* library = dlopen(in_toolkit.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
#endif
  }
  return nullptr;
}

}  // namespace mpbench::cuda
