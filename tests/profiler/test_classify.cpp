// The kernel-name table on names seen in real traces (research notes, nsys output in public
// issues) and on mpbench's own kernels, with and without the op range that launched them.
#include <gtest/gtest.h>

#include "profiler/classify.hpp"

namespace mpbench::profiler {
namespace {

struct NameCase {
  const char* name;
  Category category;
  TensorCoreEvidence tensor_cores;
};

class KernelNames : public ::testing::TestWithParam<NameCase> {};

TEST_P(KernelNames, ClassifiedAsTheTableSays) {
  const auto& c = GetParam();
  const auto got = classify_kernel_name(c.name);
  EXPECT_EQ(category_name(got.category), category_name(c.category)) << c.name << " (rule " << got.rule << ")";
  EXPECT_EQ(evidence_name(got.tensor_cores), evidence_name(c.tensor_cores)) << c.name;
}

using C = Category;
constexpr auto named = TensorCoreEvidence::named;
constexpr auto none = TensorCoreEvidence::no_evidence;

INSTANTIATE_TEST_SUITE_P(
    Library, KernelNames,
    ::testing::Values(
        NameCase{"nvjet_hsh_192x192_64x3_2x1_v_bz_coopB_NTN", C::gemm_tensor_core, named},
        NameCase{"nvjet_sm90_hss_320x128", C::gemm_tensor_core, named},
        NameCase{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", C::gemm_tensor_core, named},
        NameCase{"sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16", C::gemm_tensor_core, named},
        NameCase{"cutlass_80_tensorop_s16816gemm_bf16_128x128_32x4_nn_align8", C::gemm_tensor_core, named},
        NameCase{"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn", C::gemm_tensor_core, named},
        NameCase{"ampere_h1688gemm_128x128_ldg8_stages_32x1_nn", C::gemm_tensor_core, named},
        NameCase{"volta_h884gemm_64x64_ldg8_nn", C::gemm_tensor_core, named},
        NameCase{"turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", C::gemm_tensor_core, named},
        NameCase{"ampere_sgemm_128x64_tn", C::gemm_cuda_core, none},
        NameCase{"volta_sgemm_128x64_nn", C::gemm_cuda_core, none},
        // fp16 storage, fp32 math on CUDA cores (tensorflow/tensorflow#15585): not a half-precision GEMM.
        NameCase{"maxwell_fp16_sgemm_fp16_128x128_nn", C::gemm_cuda_core, none},
        NameCase{"void gemmSN_NN_kernel<float, 256, 4, 2, 8, 3, 4, false>(cublasGemmSmallNParams<float>)", C::gemm_cuda_core, none},
        NameCase{"void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4, false>", C::gemm_cuda_core, none},
        NameCase{"magma_sgemmEx_kernel", C::gemm_cuda_core, none},
        NameCase{"void cutlass::Kernel<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>", C::gemm_tensor_core, named},
        NameCase{"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>", C::attention, named},
        NameCase{"cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128_4x1x1_kernel0_0", C::attention, named},
        NameCase{"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>", C::normalization, none},
        NameCase{"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float>", C::normalization, none},
        NameCase{"void at::native::multi_tensor_apply_kernel<FusedAdamMathFunctor<float, 4>>", C::optimizer, none},
        NameCase{"void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>", C::reduction, none},
        NameCase{"void at::native::reduce_kernel<512, 1, ReduceOp<float, SumOps<float>>>", C::reduction, none},
        NameCase{"void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl, at::detail::Array<char*, 2>>", C::elementwise, none},
        NameCase{"Memcpy DtoD (Device -> Device)", C::copy, none},
        NameCase{"some_unknown_kernel", C::other, none}));

// mpbench's own kernels as CUPTI reports them (mangled), from backends/cuda/kernels.cu.
constexpr const char* kOwnConvert =
    "_ZN7mpbench4cuda7kernels12_GLOBAL__N_110map_kernelILi8Ef13__nv_bfloat16NS_4body7ConvertIfS3_EEEEvmPKT0_PT1_T2_";
constexpr const char* kOwnTriad =
    "_ZN7mpbench4cuda7kernels12_GLOBAL__N_110zip_kernelILi4EfNS_4body5TriadEEEvmPKT0_S7_PS5_T1_";
constexpr const char* kOwnCopy =
    "_ZN7mpbench4cuda7kernels12_GLOBAL__N_110map_kernelILi4EffNS_4body8CopyBitsIfEEEEvmPKT0_PT1_T2_";
constexpr const char* kOwnDot = "_ZN7mpbench4cuda7kernels12_GLOBAL__N_110dot_kernelILi4EfEEvmPKT0_S6_Pf";
constexpr const char* kOwnE4m3 = "_ZN7mpbench4cuda7kernels12_GLOBAL__N_118scaled_e4m3_kernelEmPKfPKS4_PNS_4body9e4m3_bitsE";

INSTANTIATE_TEST_SUITE_P(OwnWithoutRange, KernelNames,
                         ::testing::Values(NameCase{kOwnConvert, C::cast, none}, NameCase{kOwnTriad, C::elementwise, none},
                                           NameCase{kOwnCopy, C::copy, none}, NameCase{kOwnDot, C::reduction, none},
                                           NameCase{kOwnE4m3, C::cast, none}));

TEST(OwnKernels, TheLaunchingRangeDecides) {
  EXPECT_EQ(classify_kernel_name(kOwnTriad, "layer3/ln_1").category, C::normalization);
  EXPECT_EQ(classify_kernel_name(kOwnTriad, "adamw").category, C::optimizer);
  EXPECT_EQ(classify_kernel_name(kOwnTriad, "layer0/attn/softmax").category, C::attention);
  EXPECT_EQ(classify_kernel_name(kOwnTriad, "layer0/mlp/gelu").category, C::elementwise);
  EXPECT_EQ(classify_kernel_name(kOwnDot, "loss/cross_entropy").category, C::reduction);
  // A range that names nothing known falls back to the kernel's own name.
  EXPECT_EQ(classify_kernel_name(kOwnConvert, "step").category, C::cast);
}

TEST(OwnKernels, LibraryKernelsIgnoreTheRange) {
  EXPECT_EQ(classify_kernel_name("ampere_sgemm_128x64_tn", "layer3/ln_1").category, C::gemm_cuda_core);
  EXPECT_FALSE(is_mpbench_kernel("ampere_sgemm_128x64_tn"));
  EXPECT_TRUE(is_mpbench_kernel(kOwnDot));
}

TEST(TensorCoreEvidence, CountersOutrankTheName) {
  KernelRecord k;
  k.name = "ampere_sgemm_128x64_tn";
  EXPECT_EQ(classify_kernel(k).tensor_cores, TensorCoreEvidence::no_evidence);
  k.tensor_pipe_pct = 42.0;
  EXPECT_EQ(classify_kernel(k).tensor_cores, TensorCoreEvidence::measured);
  EXPECT_EQ(classify_kernel(k).category, C::gemm_tensor_core);
  k.name = "nvjet_hsh_192x192_64x3_2x1_v_bz_coopB_NTN";
  k.tensor_pipe_pct = 0.0;
  EXPECT_EQ(classify_kernel(k).tensor_cores, TensorCoreEvidence::no_evidence);
  EXPECT_EQ(classify_kernel(k).category, C::gemm_cuda_core);
  k.tensor_pipe_pct.reset();
  EXPECT_EQ(classify_kernel(k).tensor_cores, TensorCoreEvidence::named);
}

TEST(Categories, NamesRoundTripAndEveryRuleCompiles) {
  for (int i = 0; i < kCategoryCount; ++i) {
    const auto c = static_cast<Category>(i);
    EXPECT_EQ(parse_category(category_name(c)), c);
  }
  EXPECT_FALSE(parse_category("gemm"));
  EXPECT_GT(kernel_name_rules().size(), 10u);
  EXPECT_GT(op_range_rules().size(), 5u);
  EXPECT_TRUE(is_memory_bound(C::cast));
  EXPECT_FALSE(is_memory_bound(C::gemm_tensor_core));
}

}  // namespace
}  // namespace mpbench::profiler
