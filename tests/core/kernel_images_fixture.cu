// A kernel for the kernel-image reader's test: CMake compiles it into an object file carrying
// sm_75, sm_90a, sm_100f SASS and compute_120 PTX (tests/core/CMakeLists.txt).
__global__ void double_each(float* x) { x[threadIdx.x] *= 2.0f; }
