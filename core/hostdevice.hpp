#pragma once
// Marks per-element functions that both the CPU code and the CUDA kernels compile.
#if defined(__CUDACC__)
#define MPB_HD __host__ __device__ __forceinline__
#else
#define MPB_HD inline
#endif
