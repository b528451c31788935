// Every bad input: one line on stderr naming the problem and the fix, exit status 2, no file.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "run_mpbench.hpp"

namespace mpbench::testing {
namespace {

struct BadInput {
  std::string label;
  std::vector<std::string> args;
  std::string mentions;  // a word the one-line message must contain
};

class BadInputs : public ::testing::TestWithParam<BadInput> {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() / ("mpbench-cli-" + std::to_string(::getpid()) + "-" + GetParam().label);
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }
  std::filesystem::path folder_;
};

TEST_P(BadInputs, OneLineErrorExitTwoAndNoFile) {
  const auto out = folder_ / "result.json";
  std::vector<std::string> args = GetParam().args;
  const bool names_out = std::find(args.begin(), args.end(), "--out") != args.end();
  if (!names_out && args.front() == "run") {
    args.push_back("--out");
    args.push_back(out.string());
  }
  const Invocation r = run_mpbench(args, folder_);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("mpbench: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(GetParam().mentions), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  for (const auto& entry : std::filesystem::directory_iterator(folder_))
    EXPECT_EQ(entry.path().string().find("result.json"), std::string::npos) << "left behind: " << entry.path();
}

const BadInput kBadInputs[] = {
    {"unknown_suite", {"run", "--suite", "gemmm"}, "unknown suite 'gemmm'"},
    {"unknown_suite_names_every_suite", {"run", "--suite", "gemm,transformers"}, "gemm, bandwidth, cast, collective, transformer, all"},
    {"list_of_an_unknown_suite", {"list", "--suite", "cast,bogus"}, "gemm, bandwidth, cast, collective, transformer, all"},
    {"list_of_an_empty_suite_name", {"list", "--suite", ""}, "gemm, bandwidth, cast, collective, transformer, all"},
    {"unknown_cpu_gemm", {"run", "--suite", "gemm", "--device", "cpu", "--cpu-gemm", "fast"}, "--cpu-gemm"},
    {"unknown_grad_reduce", {"run", "--suite", "transformer", "--device", "cpu", "--grad-reduce", "fp8-e4m3"}, "--grad-reduce"},
    // No CPU has bf16 instructions within AVX2, and this oneDNN (2.x) runs fp16 natively on none.
    {"native_bf16_without_its_instructions",
     {"run", "--suite", "gemm", "--device", "cpu", "--cpu-isa", "avx2", "--cpu-gemm", "native", "--precision", "bf16"},
     "AVX512-BF16"},
    {"native_fp16_without_a_kernel", {"run", "--suite", "gemm", "--device", "cpu", "--cpu-gemm", "native", "--precision", "fp16"}, "fp16"},
    {"native_modes_without_their_instructions",
     {"run", "--suite", "transformer", "--device", "cpu", "--cpu-isa", "avx2", "--cpu-gemm", "native", "--config", "tiny"},
     "--cpu-gemm auto"},
    {"unknown_precision", {"run", "--suite", "gemm", "--precision", "fp12"}, "unknown precision 'fp12'"},
    {"precision_of_another_suite", {"run", "--suite", "bandwidth", "--precision", "tf32"}, "unknown precision 'tf32'"},
    {"unknown_device", {"run", "--suite", "gemm", "--device", "tpu"}, "unknown device 'tpu'"},
    {"bad_cuda_index", {"run", "--suite", "gemm", "--device", "cuda:x"}, "cuda:N"},
    {"cuda_index_without_colon", {"run", "--suite", "gemm", "--device", "cuda-1"}, "bad device 'cuda-1'"},
    {"cuda_index_with_a_space", {"run", "--suite", "gemm", "--device", "cuda: 1"}, "bad device 'cuda: 1'"},
    {"precision_device_cannot_do", {"run", "--suite", "gemm", "--device", "cpu", "--precision", "tf32"}, "--precision"},
    {"unwritable_out", {"run", "--suite", "gemm", "--device", "cpu", "--out", "/nonexistent-folder/r.json"}, "/nonexistent-folder"},
    {"shape_too_large", {"run", "--suite", "gemm", "--device", "cpu", "--shape", "1000000x1000000x1000000"}, "smaller shape"},
    {"malformed_shape", {"run", "--suite", "gemm", "--device", "cpu", "--shape", "12x"}, "MxNxK"},
    {"bad_filter", {"run", "--suite", "gemm", "--device", "cpu", "--filter", "(["}, "--filter"},
    // std::regex recursed until the stack overflowed (SIGSEGV) on these.
    {"filter_too_long", {"run", "--suite", "cast", "--device", "cpu", "--filter", std::string(100000, 'a')},
     "bad --filter 'aaaa"},
    {"filter_nested_too_deep",
     {"run", "--suite", "cast", "--device", "cpu", "--filter", std::string(400, '(') + "a" + std::string(400, ')')},
     "groups nested more than 16 deep"},
    {"filter_repeated_too_often", {"run", "--suite", "cast", "--device", "cpu", "--filter", "((a{100}){100}){100}"},
     "counted repetitions"},
    {"benchmark_filter_too_long",
     {"run", "--suite", "cast", "--device", "cpu", "--quick", "--benchmark_filter=" + std::string(100000, 'a')},
     "bad --benchmark_filter"},
    {"filter_matches_nothing", {"run", "--suite", "cast", "--device", "cpu", "--filter", "no-such-case"}, "mpbench list"},
    {"unknown_benchmark_option", {"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "copy", "--benchmark_bogus=1"}, "--benchmark_bogus"},
    {"unknown_option", {"run", "--suite", "cast", "--frobnicate"}, "--frobnicate"},
    {"negative_timeout", {"run", "--suite", "cast", "--timeout", "-1"}, "must be a number above 0"},
    {"unknown_command", {"benchmark"}, "unknown command 'benchmark'"},
    // CLI11's own errors: one line naming the command and where its options are listed.
    {"compare_unknown_option", {"compare", "--bogus"}, "compare: unknown option '--bogus': see mpbench compare --help"},
    {"compare_unknown_option_after_the_sides", {"compare", "a.json", "b.json", "--bogus"}, "unknown option '--bogus'"},
    {"explain_unknown_option", {"explain", "--bogus"}, "explain: unknown option '--bogus': see mpbench explain --help"},
    {"explain_without_a_document", {"explain"}, "explain: result is required: see mpbench explain --help"},
    {"env_with_an_argument", {"env", "extra"}, "env: unexpected argument 'extra'"},
    // Google Benchmark's options it would take and then ignore (exit 0, an empty document): checked first.
    {"unknown_benchmark_format",
     {"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "copy", "--benchmark_format=xml"},
     "--benchmark_format='xml': Google Benchmark writes console, json or csv"},
    {"unknown_benchmark_out_format",
     {"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "copy", "--benchmark_out_format=yaml"},
     "--benchmark_out_format='yaml'"},
    {"benchmark_filter_not_a_regex",
     {"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "copy", "--benchmark_filter=("},
     "bad --benchmark_filter '('"},
    {"negative_benchmark_filter_not_a_regex",
     {"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "copy", "--benchmark_filter=-[a"},
     "bad --benchmark_filter '[a'"},
    {"benchmark_filter_matches_nothing",
     {"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "copy", "--benchmark_filter=no_such_case"},
     "no case matches --benchmark_filter=no_such_case"},
    {"negative_benchmark_filter_excludes_everything",
     {"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "copy", "--benchmark_filter=-."},
     "no case matches --benchmark_filter=-."},
    {"unknown_option_before_the_command", {"--frobnicate"}, "unknown option '--frobnicate'"},
    {"negative_repetitions",
     {"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "copy", "--benchmark_repetitions=-1"},
     "--benchmark_repetitions=-1"},
    {"unknown_cpu_isa", {"run", "--suite", "gemm", "--device", "cpu", "--cpu-isa", "avx9000"}, "avx9000"},
    {"unknown_model_config", {"run", "--suite", "transformer", "--device", "cpu", "--config", "gpt5"}, "known configs: tiny"},
    {"unknown_mode", {"run", "--suite", "transformer", "--device", "cpu", "--precision", "amp-fp12"}, "unknown precision 'amp-fp12'"},
    {"sequence_too_long", {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--seq", "17"}, "16 positions"},
    {"batch_does_not_fit", {"run", "--suite", "transformer", "--device", "cpu", "--config", "gpt2-774m", "--batch", "4096"}, "--batch"},
    {"missing_data_file", {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--data", "/nonexistent/tokens.bin"}, "/nonexistent/tokens.bin"},
    {"missing_checkpoint", {"run", "--suite", "transformer", "--device", "cpu", "--checkpoint-in", "/nonexistent/ckpt"}, "/nonexistent/ckpt"},
    {"fused_attention", {"run", "--suite", "transformer", "--device", "cpu", "--attention", "fused"}, "--attention"},
    {"tensor_cores_on_the_cpu", {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--tensor-cores", "off"}, "use --cpu-isa"},
    {"unknown_tensor_core_policy", {"run", "--suite", "transformer", "--device", "cpu", "--tensor-cores", "sometimes"}, "--tensor-cores"},
    {"counters_on_the_cpu", {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--counters"}, "GPU hardware counters"},
    {"fused_attention_on_the_cpu", {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--attention", "fused"}, "CUDA GPUs only"},
    {"unknown_attention_kernels", {"run", "--suite", "transformer", "--device", "cpu", "--attention", "flash"}, "--attention"},
    {"zero_steps", {"run", "--suite", "transformer", "--device", "cpu", "--steps", "0"}, "--steps"},
    // Sizes far beyond what a run can do, refused before any work instead of crashing or hanging.
    {"huge_vocab_pad", {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--vocab-pad", "2147483647"},
     "vocab padding must be between 1"},
    {"huge_batch", {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--batch", "100000000"},
     "--batch 100000000 is more than"},
    {"huge_micro_batches",
     {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--micro-batches", "1000000000"},
     "--micro-batches 1000000000"},
    {"shape_beyond_64_bits", {"run", "--suite", "gemm", "--device", "cpu", "--shape", "2147483648x2147483648x1"}, "2^31"},
    {"shape_of_huge_operands", {"run", "--suite", "gemm", "--device", "cpu", "--shape", "2000000000x2000000000x1"}, "2^48"},
    {"negative_seed", {"run", "--suite", "transformer", "--device", "cpu", "--seed", "-1"}, "--seed"},
    {"seed_beyond_64_bits", {"run", "--suite", "transformer", "--device", "cpu", "--seed", "18446744073709551616"},
     "must be at most 2^64-1"},
    {"seed_with_a_fraction", {"run", "--suite", "transformer", "--device", "cpu", "--seed", "1.5"}, "whole number"},
    // Files that are not regular files: never read as data, never replaced by a result.
    {"data_from_a_device", {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--data", "/dev/zero"},
     "is a device"},
    {"data_is_a_folder", {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--data", "/tmp"},
     "is a folder"},
    {"checkpoint_in_a_folder_that_is_a_file",
     {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--checkpoint-in", "/etc/hostname"},
     "config.json"},
    {"out_to_a_device", {"run", "--suite", "cast", "--device", "cpu", "--out", "/dev/null"}, "it is a device"},
    {"out_with_an_empty_name", {"run", "--suite", "cast", "--device", "cpu", "--out", ""}, "empty name"},
    {"out_with_an_overlong_name", {"run", "--suite", "cast", "--device", "cpu", "--out", std::string(300, 'x') + ".json"},
     "longer than the file system allows"},
    {"checkpoint_out_under_a_file",
     {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--checkpoint-out", "/etc/hostname/ckpt"},
     "not a folder"},
    {"trace_under_a_file",
     {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--trace", "/etc/hostname/t.json"},
     "/etc/hostname"},
    {"benchmark_out_into_a_missing_folder",
     {"run", "--suite", "cast", "--device", "cpu", "--quick", "--benchmark_out=/nonexistent-folder/gb.json"},
     "/nonexistent-folder"},
};

INSTANTIATE_TEST_SUITE_P(Cli, BadInputs, ::testing::ValuesIn(kBadInputs),
                         [](const auto& info) { return info.param.label; });

// mpbench alone: the help, then why it came, exit 2 (a script that forgot its command must not pass).
TEST(CliHelp, NoCommandPrintsTheHelpAndExitsTwo) {
  const auto folder = std::filesystem::temp_directory_path() / ("mpbench-cli-help-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  const Invocation r = run_mpbench({}, folder);
  std::filesystem::remove_all(folder);
  EXPECT_EQ(r.status, 2) << r.err;
  for (const char* command : {"run", "compare", "explain", "list", "env"})
    EXPECT_NE(r.err.find(std::string("  ") + command + " "), std::string::npos) << r.err;
  const std::string last = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  EXPECT_EQ(last.rfind("mpbench: error: give a command: one of env, list, run", 0), 0u) << last;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(CliCuda, DeviceCudaWithoutAGpuSaysWhyAndSuggestsTheCpu) {
  const auto folder = std::filesystem::temp_directory_path() / ("mpbench-cli-cuda-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  // One small case: where a GPU is usable the run goes ahead, and must not take the whole sweep.
  const Invocation r = run_mpbench({"run", "--suite", "gemm", "--device", "cuda", "--quick", "--filter", "square_512/fp32",
                                    "--out", (folder / "r.json").string()},
                                   folder);
  const bool gpu_present = r.status != 2;
  if (gpu_present) {
    std::filesystem::remove_all(folder);
    GTEST_SKIP() << "a GPU is usable here, so --device cuda is not an error";
  }
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--device cpu"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(folder / "r.json"));
  std::filesystem::remove_all(folder);
}

// An output that names an input of the same command (or another output) is refused before any
// work, exit 2, naming both options; the input keeps its bytes.
class CliOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              ("mpbench-cli-outputs-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }
  std::string file(const std::string& name, const std::string& text = "precious bytes\n") {
    std::ofstream(folder_ / name) << text;
    return (folder_ / name).string();
  }
  std::string path(const std::string& name) const { return (folder_ / name).string(); }
  void expect_refused(const std::vector<std::string>& args, const std::string& mentions) {
    SCOPED_TRACE(mentions);
    const Invocation r = run_mpbench(args, folder_);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err;
  }
  std::filesystem::path folder_;
};

TEST_F(CliOutputs, AnOutputThatNamesAnInputIsRefusedBeforeAnyWork) {
  const std::string a = file("a.json"), b = file("b.json");
  std::filesystem::create_symlink(b, path("link.json"));
  expect_refused({"compare", a, b, "--out", a}, "--out '" + a + "' is the same file as BASE");
  expect_refused({"compare", a, b, "--out", path("link.json")}, "is the same file as NEW");
  std::filesystem::create_directories(path("runs"));
  const std::string in_folder = file("runs/r.json");
  expect_refused({"compare", "--base", path("runs"), "--new", b, "--out", in_folder}, "lies inside BASE");
  const std::string tokens = file("tokens.bin", std::string(64, 'x'));
  const std::vector<std::string> training = {"run", "--suite", "transformer", "--device", "cpu", "--config", "tiny",
                                             "--steps", "1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = training;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_refused(with({"--data", tokens, "--out", tokens}), "is the same file as --data");
  expect_refused(with({"--trace", path("r.json"), "--out", path("r.json")}), "--out '" + path("r.json") + "' is the same file as --trace");
  expect_refused(with({"--benchmark_out=" + path("gb.json"), "--out", path("gb.json")}), "same file as --benchmark_out");
  std::filesystem::create_directories(path("ckpt/fp32"));
  expect_refused(with({"--checkpoint-in", path("ckpt/fp32"), "--checkpoint-out", path("ckpt")}),
                 "--checkpoint-out '" + path("ckpt") + "' holds --checkpoint-in");
  for (const std::string& input : {a, b, tokens, in_folder})
    EXPECT_EQ(read_all(input), input == tokens ? std::string(64, 'x') : "precious bytes\n") << input;
  EXPECT_FALSE(std::filesystem::exists(path("r.json")));
  EXPECT_FALSE(std::filesystem::exists(path("gb.json")));
}

// --out as a symbolic link: the document goes to the link's target, the link stays (docs/cli.md).
TEST_F(CliOutputs, AnOutThatIsALinkIsWrittenThrough) {
  const std::string target = file("target.json", "old\n");
  std::filesystem::create_symlink(target, path("link.json"));
  const Invocation r = run_mpbench({"run", "--suite", "cast", "--device", "cpu", "--quick", "--filter", "cast/f32_to_bf16/",
                                    "--out", path("link.json")},
                                   folder_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_symlink(path("link.json")));
  EXPECT_NE(read_all(target).find("\"schema\""), std::string::npos) << read_all(target);
}

// A token file larger than the process may hold (here: a sparse 3 GiB file under a 2 GB address
// space limit) is refused, named, exit 2: it was std::bad_alloc, exit 1.
TEST_F(CliOutputs, ATokenFileTooLargeForMemoryIsNamedExitTwo) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory does not fit under an address space limit";
#endif
  const std::string tokens = path("huge.bin");
  std::filesystem::resize_file(file("huge.bin", ""), std::uintmax_t{3} << 30);
  const std::string command =
      "ulimit -v 2000000; exec " + shell_quote(mpbench_binary()) +
      " run --suite transformer --device cpu --config tiny --steps 3 --precision fp32 --data " + shell_quote(tokens) +
      " --out " + shell_quote(path("r.json")) + " 2>" + shell_quote(path("err.txt"));
  const int raw = std::system(("bash -c " + shell_quote(command)).c_str());
  const std::string err = read_all(path("err.txt"));
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 2) << err;
  EXPECT_NE(err.find("token file '" + tokens + "' has 3221225472 bytes"), std::string::npos) << err;
  EXPECT_EQ(count_lines(err), 1) << err;
}

}  // namespace
}  // namespace mpbench::testing
