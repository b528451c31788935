// A stand-in libcublas.so.<major> that answers cublasGetProperty with a patch level no release has
// (77), so that a test can tell the version of the library loaded through LD_LIBRARY_PATH from the
// one in the headers mpbench was built with.
#include <library_types.h>

extern "C" int cublasGetProperty(libraryPropertyType type, int* value) {
  switch (type) {
    case MAJOR_VERSION: *value = MPBENCH_FAKE_CUBLAS_MAJOR; return 0;
    case MINOR_VERSION: *value = 0; return 0;
    case PATCH_LEVEL: *value = 77; return 0;
  }
  return 7;  // CUBLAS_STATUS_INVALID_VALUE
}
