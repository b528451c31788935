#pragma once
// Names of the cuBLASLt enum values an algorithm configuration reports ("128x256" for a tile),
// taken from the cuBLASLt header this build compiles against (see CMakeLists.txt).
#include <cstdint>
#include <string>

namespace mpbench::cuda {

std::string tile_name(std::uint32_t id);           // cublasLtMatmulTile_t: "128x256", "undefined"
std::string stages_name(std::uint32_t id);         // cublasLtMatmulStages_t: "64x4", "128xauto"
std::string cluster_shape_name(std::uint32_t id);  // cublasLtClusterShape_t: "2x1x1", "auto"

}  // namespace mpbench::cuda
