#pragma once
// MPI on the CPU: the job's process group (MPI_COMM_WORLD) and collectives on host buffers. MPI
// has no 16-bit float type, so bf16 and fp16 travel as 16-bit words and are summed by a
// user-defined MPI_Op that adds each pair of elements in fp32 and rounds the sum to the format
// (amp/formats.hpp's conversions).
#include <memory>
#include <nlohmann/json.hpp>

#include "core/communicator.hpp"

namespace mpbench::cpu {

// Starts MPI (once per process) and returns MPI_COMM_WORLD as a group; MPI is finalized when the
// group goes. Throws UsageError when MPI's world size or rank differ from what the launcher said
// (`expected`): a launcher MPI does not know, e.g. torchrun, starts each process as a world of one.
std::unique_ptr<ProcessGroup> join_mpi_world(const LaunchInfo& expected);
// Collectives over the group's processes (a duplicate of MPI_COMM_WORLD).
std::unique_ptr<Communicator> make_mpi_communicator();
// {"library": "Open MPI", "version": "4.1.4", "standard": "3.1", "library_version": "..."}, read
// without starting MPI.
nlohmann::json mpi_environment();

// The user-defined reduction's element step, on the host: a + b in fp32, rounded to `dtype`'s
// 16-bit code (bf16 or fp16). Exposed for its test.
std::uint16_t sum_16bit(std::uint16_t a, std::uint16_t b, DType dtype);
// The reduction's loop: inout[i] = sum_16bit(in[i], inout[i], dtype) for i < n, on the vector
// loops where the CPU has them. Exposed for its test.
void sum_16bit_words(const std::uint16_t* in, std::uint16_t* inout, std::size_t n, DType dtype);

}  // namespace mpbench::cpu
