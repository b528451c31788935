# Compiles SOURCE to PTX with NVCC (include dir INCLUDE) and fails if the PTX fuses a multiply and
# an add (fma.rn.f32): run by ctest as core.UniformAtIsUnfusedOnTheDevice.
execute_process(COMMAND "${NVCC}" -std=c++20 -arch=sm_90 -ptx -I "${INCLUDE}" "${SOURCE}" -o "${PTX}"
                RESULT_VARIABLE compiled ERROR_VARIABLE errors)
if(NOT compiled EQUAL 0)
  message(FATAL_ERROR "nvcc failed on ${SOURCE}: ${errors}")
endif()
file(READ "${PTX}" ptx)
if(NOT ptx MATCHES "ld.param")
  message(FATAL_ERROR "${PTX} holds no kernel: nothing was checked")
endif()
if(ptx MATCHES "fma\\.rn\\.f32")
  message(FATAL_ERROR "${SOURCE}: nvcc fused uniform_at's multiply and add (fma.rn.f32 in ${PTX})")
endif()
message(STATUS "no fma.rn.f32 in ${PTX}")
