#pragma once
// Libraries mpbench only reports on (cuDNN, CUPTI, NCCL, cuBLAS, NVML) are opened at run time, so
// the binary starts without them and says "not found" instead of failing to load.
#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace mpbench::cuda {

// The first of `names` that loads, from the loader's search path or else from the CUDA toolkit's
// library directory of this build; nullptr when none does. Libraries stay loaded.
void* open_library(std::initializer_list<std::string> names);

template <typename Function>
Function* library_symbol(void* library, const char* name) {
  return library ? reinterpret_cast<Function*>(dlsym(library, name)) : nullptr;
}

}  // namespace mpbench::cuda
