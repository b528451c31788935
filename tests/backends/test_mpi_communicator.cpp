// The MPI communicator's user-defined sum of 16-bit formats, element by element: the pair added in
// fp32 and rounded to nearest even in the format. Its collectives run under mpirun in
// tests/cli/test_collective.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "amp/formats.hpp"
#include "backends/cpu/mpi_communicator.hpp"

namespace mpbench {
namespace {

TEST(MpiSum16, RoundsTiesToEvenInTheFormat) {
  // bf16 keeps 8 significant bits: 1 + 2^-8 is halfway between 1 and 1 + 2^-7, so it stays 1;
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6 and goes to the even one, 1 + 2^-6.
  const auto bf16 = [](float x) { return num::f32_to_bf16_bits(x); };
  EXPECT_EQ(cpu::sum_16bit(bf16(1.0f), bf16(std::ldexp(1.0f, -8)), DType::bf16), 0x3F80);
  EXPECT_EQ(cpu::sum_16bit(bf16(1.0f), bf16(3 * std::ldexp(1.0f, -8)), DType::bf16), 0x3F82);
  // fp16 keeps 11: the same at 2^-11; and its largest finite value twice is inf.
  const auto f16 = [](float x) { return num::f32_to_f16_bits(x); };
  EXPECT_EQ(cpu::sum_16bit(f16(1.0f), f16(std::ldexp(1.0f, -11)), DType::f16), 0x3C00);
  EXPECT_EQ(cpu::sum_16bit(f16(1.0f), f16(3 * std::ldexp(1.0f, -11)), DType::f16), 0x3C02);
  EXPECT_EQ(cpu::sum_16bit(f16(65504.0f), f16(65504.0f), DType::f16), 0x7C00);
}

TEST(MpiSum16, IsWithinHalfAnUlpOfTheExactSum) {
  std::random_device device;
  const unsigned seed = device();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-100.0f, 100.0f);
  for (int i = 0; i < 10000; ++i) {
    const std::uint16_t a = num::f32_to_bf16_bits(value(random)), b = num::f32_to_bf16_bits(value(random));
    const double exact = double(num::bf16_bits_to_f32(a)) + double(num::bf16_bits_to_f32(b));
    const double got = num::bf16_bits_to_f32(cpu::sum_16bit(a, b, DType::bf16));
    // Half an ulp of the sum's binade: 2^(floor(log2|sum|) - 8).
    const double half_ulp = exact == 0 ? 0 : std::ldexp(1.0, static_cast<int>(std::floor(std::log2(std::abs(exact)))) - 8);
    ASSERT_LE(std::abs(got - exact), half_ulp) << num::bf16_bits_to_f32(a) << " + " << num::bf16_bits_to_f32(b);
  }
}

// The loop MPI calls: every 16-bit code (NaNs, infinities and subnormals among them) against random
// partners, over a length with a tail past the vector loops' groups of eight, bit for bit the
// element step's sum; except that a sum of two NaNs is one of them, quieted (IEEE 754 leaves which
// to the implementation, and the compiler may swap the operands of an add, scalar or vector: seeds
// 3396269847 and 2712840955 got each NaN).
TEST(MpiSum16, TheReductionLoopGivesTheElementStepsBits) {
  std::random_device device;
  const unsigned seed = device();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> code(0, 0xFFFF);
  const std::size_t n = 65536 + 5;
  for (const DType dtype : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(dtype));
    std::vector<std::uint16_t> in(n), inout(n);
    for (std::size_t i = 0; i < n; ++i) {
      in[i] = static_cast<std::uint16_t>(i);
      inout[i] = static_cast<std::uint16_t>(code(random));
    }
    const std::vector<std::uint16_t> before = inout;
    cpu::sum_16bit_words(in.data(), inout.data(), n, dtype);
    const auto is_nan = [dtype](std::uint16_t code) {
      return std::isnan(dtype == DType::bf16 ? num::bf16_bits_to_f32(code) : num::f16_bits_to_f32(code));
    };
    for (std::size_t i = 0; i < n; ++i) {
      if (is_nan(in[i]) && is_nan(before[i])) {
        const std::uint16_t first = cpu::sum_16bit(in[i], in[i], dtype), second = cpu::sum_16bit(before[i], before[i], dtype);
        ASSERT_TRUE(inout[i] == first || inout[i] == second) << std::hex << in[i] << " + " << before[i] << " gave " << inout[i];
        continue;
      }
      ASSERT_EQ(inout[i], cpu::sum_16bit(in[i], before[i], dtype)) << std::hex << in[i] << " + " << before[i];
    }
  }
}

TEST(MpiEnvironment, NamesTheLibraryAndItsVersion) {
  const nlohmann::json env = cpu::mpi_environment();
  ASSERT_TRUE(env["library"].is_string());
  ASSERT_TRUE(env["version"].is_string()) << env.dump();
  EXPECT_FALSE(env["version"].get<std::string>().empty());
  EXPECT_NE(env["library_version"].get<std::string>().back(), '\0');
  EXPECT_TRUE(env["standard"].is_string());
}

}  // namespace
}  // namespace mpbench
