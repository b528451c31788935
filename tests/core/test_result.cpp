#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/result.hpp"

namespace mpbench {
namespace {

CaseResult timed_case(const std::string& name, const std::string& precision, std::vector<double> seconds) {
  CaseResult c;
  c.suite = "gemm";
  c.name = name;
  c.backend = "cpu";
  c.precision = precision;
  c.params = {{"m", 64}, {"n", 32}, {"k", 16}};
  c.seconds = Statistics::of(std::move(seconds));
  c.rates = {{"tflops", 1.25}, {"pct_of_peak", nullptr}};
  c.details = {{"algorithm", {{"implementation", "brg:avx512_core_bf16"}}}};
  return c;
}

ResultDocument sample_document() {
  ResultDocument d;
  d.created = utc_timestamp_now();
  d.env = {{"host", "h"}};
  d.run = {{"suites", {"gemm"}}, {"device", "cpu"}};
  d.cases.push_back(timed_case("square_64", "fp32", {4e-3, 4.2e-3, 3.8e-3}));
  d.cases.push_back(timed_case("square_64", "bf16", {2e-3, 2.1e-3, 1.9e-3}));
  d.cases.push_back(timed_case("square_128", "bf16", {3e-3, 3.1e-3}));  // no fp32 baseline
  CaseResult skipped;
  skipped.suite = "gemm";
  skipped.name = "square_64";
  skipped.backend = "cpu";
  skipped.precision = "tf32";
  skipped.status = CaseStatus::skipped;
  skipped.message = "no TF32 on CPUs";
  d.cases.push_back(skipped);
  return d;
}

TEST(ResultDocument, SpeedupsComeFromMediansOfTheSameCase) {
  ResultDocument d = sample_document();
  d.compute_speedups("fp32");
  ASSERT_EQ(d.speedups.size(), 1u);  // square_128 has no baseline, tf32 was skipped
  EXPECT_EQ(d.speedups[0].precision, "bf16");
  EXPECT_EQ(d.speedups[0].name, "square_64");
  EXPECT_DOUBLE_EQ(d.speedups[0].value, 4e-3 / 2e-3);
}

TEST(ResultDocument, RoundTripsThroughJson) {
  ResultDocument d = sample_document();
  d.compute_speedups();
  const nlohmann::json j = d.to_json();
  EXPECT_EQ(j["schema"], kResultSchema);
  const ResultDocument back = ResultDocument::from_json(j);
  EXPECT_EQ(back.to_json(), j);
  EXPECT_EQ(back.cases[3].status, CaseStatus::skipped);
  EXPECT_FALSE(back.cases[3].seconds.has_value());
  EXPECT_EQ(back.cases[1].seconds->values, d.cases[1].seconds->values);
}

TEST(ResultDocument, RejectsOtherSchemasAndMalformedDocuments) {
  nlohmann::json j = sample_document().to_json();
  j["schema"] = "mpbench.result/2";
  EXPECT_THROW(ResultDocument::from_json(j), UsageError);
  EXPECT_THROW(ResultDocument::from_json(nlohmann::json::array()), UsageError);
  nlohmann::json missing = sample_document().to_json();
  missing.erase("cases");
  EXPECT_THROW(ResultDocument::from_json(missing), UsageError);
  nlohmann::json bad_status = sample_document().to_json();
  bad_status["cases"][0]["status"] = "fine";
  EXPECT_THROW(ResultDocument::from_json(bad_status), UsageError);
}

class TempFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() / ("mpbench-test-" + std::to_string(::getpid()) + "-" +
                                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override {
    ::chmod(folder_.c_str(), 0755);
    std::filesystem::remove_all(folder_);
  }
  std::filesystem::path folder_;
};

TEST_F(TempFolder, AtomicWriteLeavesOnlyTheFinalFile) {
  const auto path = folder_ / "r.json";
  write_file_atomically(path, sample_document().to_json().dump());
  write_file_atomically(path, sample_document().to_json().dump(2));  // overwrite
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(folder_)) ++files;
  EXPECT_EQ(files, 1);
  EXPECT_EQ(load_result(path).cases.size(), 4u);
}

TEST_F(TempFolder, UnwritablePlacesAreUsageErrors) {
  EXPECT_THROW(check_writable(folder_ / "missing-folder" / "r.json"), UsageError);
  EXPECT_THROW(check_writable(folder_), UsageError);  // a folder, not a file
  EXPECT_THROW(write_file_atomically(folder_ / "missing-folder" / "r.json", "{}"), UsageError);
  EXPECT_NO_THROW(check_writable(folder_ / "fine.json"));
  if (::geteuid() != 0) {  // root writes anywhere
    ::chmod(folder_.c_str(), 0555);
    EXPECT_THROW(check_writable(folder_ / "r.json"), UsageError);
  }
}

TEST_F(TempFolder, LoadNamesTheFileOnBadInput) {
  const auto path = folder_ / "broken.json";
  std::ofstream(path) << "{ not json";
  try {
    load_result(path);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json"), std::string::npos);
  }
  EXPECT_THROW(load_result(folder_ / "absent.json"), UsageError);
}

}  // namespace
}  // namespace mpbench
