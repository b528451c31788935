// Reading what users name: only regular files within a bound, one JSON value within a nesting
// bound, and every malformed field of a result document named with where it is.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <csignal>
#include <random>
#include <set>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/json_fields.hpp"
#include "core/result.hpp"

namespace mpbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Files : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mpbench-files-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  fs::path dir_;
};

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

TEST_F(Files, ReadsARegularFileWithinItsBound) {
  const fs::path p = write("a.txt", "twelve bytes");
  EXPECT_EQ(read_regular_file(p, 12, "test file"), "twelve bytes");
  const std::string error = usage_error_of([&] { read_regular_file(p, 11, "test file"); });
  EXPECT_NE(error.find("12 bytes, more than the 11"), std::string::npos) << error;
}

TEST_F(Files, RefusesWhatIsNotARegularFileAndSaysWhatItIs) {
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  const std::pair<fs::path, std::string> cases[] = {{dir_ / "missing", "is missing"},
                                                    {dir_, "is a folder"},
                                                    {dir_ / "fifo", "is a FIFO"},
                                                    {"/dev/zero", "is a device"},
                                                    {"/dev/null", "is a device"}};
  for (const auto& [path, says] : cases) {
    const std::string error = usage_error_of([&] { read_regular_file(path, 1 << 20, "token file"); });
    EXPECT_NE(error.find("token file '" + path.string() + "' " + says), std::string::npos) << error;
  }
}

TEST_F(Files, JsonIsOneValueWithNothingAfterIt) {
  EXPECT_EQ(parse_json_file_text(" {\"a\": [1, 2]}\n", dir_ / "ok.json"), json({{"a", {1, 2}}}));
  for (const char* text : {"{} x", "{}{}", "[1] [2]", "{\"a\": 1", ""}) {
    const std::string error = usage_error_of([&] { parse_json_file_text(text, dir_ / "bad.json"); });
    EXPECT_NE(error.find("bad.json' is not valid JSON"), std::string::npos) << text << ": " << error;
  }
}

// A syntax error, NaN, Infinity or trailing bytes: the file, line, column and byte, the field
// being read, and what is wrong in mpbench's words; never the library's own text.
TEST_F(Files, JsonErrorsNameThePositionAndTheFieldInWords) {
  const struct {
    std::string text, says;
  } cases[] = {
      {"{\"cases\": [{\"name\": \"a\"}, {\"metrics\": {\"median\": NaN}}]}",
       "line 1, column 50 (byte 49), in field cases[1].metrics.median: 'NaN' is not a JSON number"},
      {"{\n  \"run\": {\"interrupted\": Infinity}\n}", "line 2, column 26 (byte 27), in field run.interrupted: 'Infinity'"},
      {"{\"a\": -Infinity}", "in field a: 'Infinity' is not a JSON number"},
      {"{\"a\": 1}\n{\"b\": 2}", "line 2, column 1 (byte 9): text after the document's one JSON value"},
      {"{\"a\": [1, 2,, 3]}", "in field a[2]: not JSON here"},
      {"{\"a\": {\"b\": 1", "the text ends inside the document"},
      {"{\"a\" 1}", "in field a: not JSON here"},
  };
  for (const auto& [text, says] : cases) {
    const std::string error = usage_error_of([&] { parse_json_file_text(text, dir_ / "doc.json"); });
    EXPECT_NE(error.find("doc.json' is not valid JSON at " ), std::string::npos) << error;
    EXPECT_NE(error.find(says), std::string::npos) << "expected: " << says << "\ngot: " << error;
    EXPECT_EQ(error.find("json.exception"), std::string::npos) << error;
    EXPECT_EQ(error.find("parse error"), std::string::npos) << error;
  }
}

// The JSON library takes a NUL for the end of its input: a document cut there would be read as
// whole. Anywhere in the text, at a random place and at the edges, it is refused.
TEST_F(Files, JsonWithANulByteAnywhereIsRefused) {
  const std::string text = "{\"cases\": [1, 2, 3], \"name\": \"abc\"}";
  std::mt19937 rng(std::random_device{}());
  for (std::size_t at : {std::size_t{0}, text.size() / 2, text.size(), std::size_t(rng() % text.size())}) {
    std::string with_nul = text;
    with_nul.insert(at, 1, '\0');
    const std::string error = usage_error_of([&] { parse_json_file_text(with_nul, dir_ / "nul.json"); });
    EXPECT_NE(error.find(fmt::format("nul.json' holds a NUL byte at byte {}", at)), std::string::npos) << error;
  }
}

TEST_F(Files, JsonNestedBeyondTheBoundIsRefusedBeforeItIsBuilt) {
  const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_NO_THROW(parse_json_file_text(nested(kMaxJsonDepth), dir_ / "deep.json"));
  for (int depth : {kMaxJsonDepth + 1, 100000}) {
    const std::string error = usage_error_of([&] { parse_json_file_text(nested(depth), dir_ / "deep.json"); });
    EXPECT_NE(error.find("deeper than 64 levels"), std::string::npos) << error;
  }
  const std::string objects = [] {
    std::string s;
    for (int i = 0; i < 100000; ++i) s += "{\"a\":";
    return s + "1" + std::string(100000, '}');
  }();
  EXPECT_NE(usage_error_of([&] { parse_json_file_text(objects, dir_ / "deep.json"); }).find("deeper"),
            std::string::npos);
}

// parse_json_file reads the file a chunk (1 MiB) at a time: the same value as the whole text
// parsed at once, and the same error, whether the fault is in the first chunk, in a later one,
// on a chunk's edge or after the document's value.
TEST_F(Files, JsonReadInChunksIsTheWholeTextsValueOrItsError) {
  const auto keep_all = [](int, nlohmann::json::parse_event_t, json&) { return true; };
  const auto outcome_of_text = [&](const std::string& text, const fs::path& path) {
    try {
      return parse_json_file_text(text, path, keep_all).dump();
    } catch (const UsageError& e) {
      return std::string("error: ") + e.what();
    }
  };
  const auto outcome_of_file = [&](const fs::path& path) {
    try {
      return parse_json_file(path, std::uint64_t{1} << 30, "test document", keep_all).dump();
    } catch (const UsageError& e) {
      return std::string("error: ") + e.what();
    }
  };
  const std::size_t chunk = std::size_t{1} << 20;
  std::string large = "{\"cases\": [";
  for (int i = 0; large.size() < chunk + 4096; ++i) large += fmt::format("{}{{\"name\": \"case_{}\", \"v\": {}}}", i ? ", " : "", i, i * 0.5);
  large += "], \"run\": {\"interrupted\": false}}";
  std::vector<std::string> texts = {large, large + "\n", large + "\n{}", large.substr(0, large.size() - 1)};
  for (std::size_t at : {std::size_t{0}, chunk - 1, chunk, chunk + 1, large.size() - 1, large.size()}) {
    std::string with_nul = large;
    with_nul.insert(at, 1, '\0');
    texts.push_back(with_nul);
  }
  std::string bad_number = large;
  bad_number.replace(large.find("\"v\": ", chunk + 7) + 5, 1, "NaN");
  texts.push_back(bad_number);
  texts.push_back(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'));
  texts.push_back(std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']'));
  texts.push_back("{\"a\": " + std::string(chunk, ' ') + std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']') + "}");
  texts.push_back("");
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const fs::path path = write(fmt::format("doc{}.json", i), texts[i]);
    const std::string expected = outcome_of_text(texts[i], path), got = outcome_of_file(path);
    EXPECT_EQ(got, expected) << "text " << i;
  }
  EXPECT_EQ(outcome_of_file(dir_ / "missing.json").rfind("error: test document '", 0), 0u);
}

TEST_F(Files, AnOutputOverAnInputIsRefusedThroughLinksAndFolders) {
  const fs::path input = write("in.json", "x"), other = write("other.json", "y");
  fs::create_symlink(input, dir_ / "soft.json");
  ASSERT_EQ(::link(input.c_str(), (dir_ / "hard.json").c_str()), 0);
  fs::create_directories(dir_ / "runs/fp32");
  for (const fs::path& output : {input, dir_ / "soft.json", dir_ / "hard.json", dir_ / "." / "in.json"}) {
    const std::string error = usage_error_of([&] { refuse_overwriting({"--out", output}, {"BASE", input}); });
    EXPECT_NE(error.find("--out '" + output.string() + "' is the same file as BASE '" + input.string() + "'"),
              std::string::npos)
        << error;
  }
  write("runs/old.json", "a run");
  EXPECT_NE(usage_error_of([&] { refuse_overwriting({"--out", dir_ / "runs/old.json"}, {"BASE", dir_ / "runs"}); })
                .find("lies inside BASE"),
            std::string::npos);
  EXPECT_NO_THROW(refuse_overwriting({"--out", dir_ / "runs/new.json"}, {"BASE", dir_ / "runs"}));
  EXPECT_NE(usage_error_of([&] { refuse_overwriting({"--checkpoint-out", dir_ / "runs"}, {"--checkpoint-in", dir_ / "runs/fp32"}); })
                .find("holds --checkpoint-in"),
            std::string::npos);
  // Two outputs that do not exist yet, named two ways.
  EXPECT_NE(usage_error_of([&] { refuse_overwriting({"--out", dir_ / "new.json"}, {"--trace", dir_ / "runs/../new.json"}); })
                .find("same file"),
            std::string::npos);
  EXPECT_NO_THROW(refuse_overwriting({"--out", other}, {"BASE", input}));
  EXPECT_NO_THROW(refuse_overwriting({"--out", dir_ / "runs.json"}, {"BASE", dir_ / "runs"}));
  EXPECT_NO_THROW(refuse_overwriting({"--out", ""}, {"BASE", input}));
}

// A link is written through: the target gets the document and the link stays a link, also when
// the target does not exist yet (a relative link); a loop of links is refused, named.
TEST_F(Files, WritingALinkWritesItsTarget) {
  const fs::path target = write("target.json", "old");
  fs::create_symlink(target, dir_ / "link.json");
  write_file_atomically(dir_ / "link.json", "new");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
  EXPECT_EQ(read_regular_file(target, 100, "file"), "new");
  fs::create_symlink("later.json", dir_ / "dangling.json");
  write_file_atomically(dir_ / "dangling.json", "made");
  EXPECT_TRUE(fs::is_symlink(dir_ / "dangling.json"));
  EXPECT_EQ(read_regular_file(dir_ / "later.json", 100, "file"), "made");
  fs::create_symlink("loop-b", dir_ / "loop-a");
  fs::create_symlink("loop-a", dir_ / "loop-b");
  EXPECT_NE(usage_error_of([&] { write_file_atomically(dir_ / "loop-a", "x"); }).find("loop of symbolic links"),
            std::string::npos);
}

std::set<std::string> names_in(const fs::path& folder) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.insert(entry.path().filename().string());
  return names;
}

// A folder is replaced whole: a fill that fails leaves the old folder as it was and nothing beside
// it; one that succeeds leaves only the new files (none of the old folder's survives).
TEST_F(Files, AFolderIsReplacedWholeOrNotAtAll) {
  const fs::path folder = dir_ / "ckpt";
  write_folder_atomically(folder, [](const fs::path& fresh) {
    std::ofstream(fresh / "weights") << "old weights";
    std::ofstream(fresh / "grads") << "old grads";
  });
  EXPECT_EQ(names_in(folder), (std::set<std::string>{"weights", "grads"}));
  EXPECT_THROW(write_folder_atomically(folder,
                                       [](const fs::path& fresh) {
                                         std::ofstream(fresh / "weights") << "new weights";
                                         throw UsageError("disk full");
                                       }),
               UsageError);
  EXPECT_EQ(read_regular_file(folder / "weights", 100, "file"), "old weights");
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"ckpt"}));
  write_folder_atomically(folder, [](const fs::path& fresh) { std::ofstream(fresh / "weights") << "new weights"; });
  EXPECT_EQ(names_in(folder), (std::set<std::string>{"weights"}));
  EXPECT_EQ(read_regular_file(folder / "weights", 100, "file"), "new weights");
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"ckpt"}));
}

// A process killed while it fills the new folder leaves the old one whole; the next write removes
// what the killed one left.
TEST_F(Files, AKillWhileAFolderIsWrittenLeavesTheOldOne) {
  const fs::path folder = dir_ / "ckpt";
  write_folder_atomically(folder, [](const fs::path& fresh) { std::ofstream(fresh / "weights") << "old"; });
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    write_folder_atomically(folder, [](const fs::path& fresh) {
      std::ofstream(fresh / "weights") << "half";
      ::kill(::getpid(), SIGKILL);
    });
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(read_regular_file(folder / "weights", 100, "file"), "old");
  EXPECT_EQ(names_in(dir_).size(), 2u) << "the killed process's folder is beside the old one";
  write_folder_atomically(folder, [](const fs::path& fresh) { std::ofstream(fresh / "weights") << "new"; });
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"ckpt"}));
}

TEST(JsonFields, EachWrongFieldIsNamedWithWhereItIs) {
  const json doc = {{"name", 3}, {"params", "x"}, {"n", "1"}, {"inf", 1e308 * 10}, {"obj", {{"k", true}}}};
  const JsonObject fields(doc, "cases[3]");
  EXPECT_EQ(usage_error_of([&] { fields.text("name"); }), "cases[3].name: must be a string, is number");
  EXPECT_EQ(usage_error_of([&] { fields.text("absent"); }), "cases[3].absent: missing; it must be a string");
  EXPECT_EQ(usage_error_of([&] { fields.object_or_empty("params"); }), "cases[3].params: must be an object, is string");
  EXPECT_EQ(usage_error_of([&] { fields.number("n"); }), "cases[3].n: must be a number, is string");
  EXPECT_EQ(usage_error_of([&] { fields.array("obj"); }), "cases[3].obj: must be an array, is object");
  EXPECT_EQ(fields.object_or_empty("absent"), json::object());
  EXPECT_EQ(usage_error_of([] { JsonObject(json::array(), "the document"); }),
            "the document: must be an object, is array");
}

json good_case() {
  return {{"suite", "gemm"},
          {"name", "square_64"},
          {"backend", "cpu"},
          {"precision", "fp32"},
          {"params", json::object()},
          {"status", "ok"},
          {"message", ""},
          {"metrics", {{"seconds", {{"median", 1e-3}, {"min", 1e-3}, {"max", 1e-3}, {"mean", 1e-3}, {"stddev", 0}, {"samples", 2}}}}},
          {"rates", json::object()},
          {"details", json::object()}};
}

json document_with(const json& c) {
  return {{"schema", kResultSchema}, {"created", "2026-12-03T00:00:00Z"}, {"env", json::object()},
          {"run", json::object()},   {"cases", json::array({c})},     {"speedups", json::array()}};
}

TEST(ResultDocumentFields, MalformedDocumentsNameTheFieldAndNeverTheLibrary) {
  EXPECT_NO_THROW(ResultDocument::from_json(document_with(good_case())));
  const std::pair<std::function<void(json&)>, std::string> mutations[] = {
      {[](json& d) { d["schema"] = 1; }, "the document.schema: must be a string"},
      {[](json& d) { d["cases"] = 3; }, "the document.cases: must be an array"},
      {[](json& d) { d["env"] = "x"; }, "the document.env: must be an object"},
      {[](json& d) { d["cases"][0]["params"] = "x"; }, "cases[0].params: must be an object"},
      {[](json& d) { d["cases"][0]["rates"] = json::array(); }, "cases[0].rates: must be an object"},
      {[](json& d) { d["cases"][0]["rates"]["tflops"] = "fast"; }, "cases[0].rates.tflops: must be a number or null"},
      {[](json& d) { d["cases"][0]["status"] = "fine"; }, "cases[0].status: case status 'fine'"},
      {[](json& d) { d["cases"][0]["name"] = "a\x1b[2Jb"; }, "cases[0].name: contains a control character"},
      {[](json& d) { d["cases"][0]["suite"] = "a\nb"; }, "cases[0].suite: contains a control character"},
      {[](json& d) {
         d["cases"][0]["metrics"]["seconds"]["median"] = 0;
         d["cases"][0]["metrics"]["seconds"]["min"] = 0;
       },
       "cases[0].metrics: an ok case needs a positive median"},
      {[](json& d) { d["cases"][0]["metrics"]["seconds"]["median"] = -1e-3; }, "cases[0].metrics.seconds.median: must be within"},
      {[](json& d) { d["cases"][0]["metrics"]["seconds"]["samples"] = 0; }, "cases[0].metrics.seconds.samples: must be a whole"},
      {[](json& d) { d["cases"][0]["metrics"]["seconds"]["max"] = 1e-4; }, "cases[0].metrics.seconds.max: must be at least"},
      {[](json& d) { d["cases"][0]["rates"]["tflops"] = -2.5; }, "cases[0].rates.tflops: must be 0 or more"},
      {[](json& d) { d["cases"][0]["metrics"]["seconds"]["mean"] = "1"; }, "cases[0].metrics.seconds.mean: must be a number"},
      {[](json& d) { d["cases"][0]["metrics"]["seconds"]["values"] = {1, "x"}; }, "cases[0].metrics.seconds.values[1]"},
      {[](json& d) { d["cases"].push_back(d["cases"][0]); }, "cases[1]: case gemm/square_64/fp32 appears twice"},
      {[](json& d) {
         d["speedups"] = {{{"suite", "gemm"}, {"name", "n"}, {"backend", "cpu"}, {"baseline", "fp32"},
                           {"precision", "bf16"}, {"speedup", 0}}};
       },
       "speedups[0].speedup: must be positive"},
  };
  for (const auto& [mutate, says] : mutations) {
    json doc = document_with(good_case());
    mutate(doc);
    const std::string error = usage_error_of([&] { ResultDocument::from_json(doc); });
    EXPECT_NE(error.find(says), std::string::npos) << "expected: " << says << "\n got: " << error;
  }
}

TEST_F(Files, LoadingAResultNamesTheFileAndTheField) {
  json doc = document_with(good_case());
  doc["cases"][0]["params"] = 5;
  const fs::path p = write("r.json", doc.dump());
  const std::string error = usage_error_of([&] { load_result(p); });
  EXPECT_NE(error.find(p.string()), std::string::npos) << error;
  EXPECT_NE(error.find("cases[0].params"), std::string::npos) << error;
  EXPECT_NE(usage_error_of([&] { load_result(write("two.json", doc.dump() + doc.dump())); }).find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(usage_error_of([&] { load_result(dir_); }).find("is a folder"), std::string::npos);
}

// load_result converts the cases as they are parsed: the same document as from_json of the whole
// JSON, and the same first error, with the document's own fields (schema first) before any case's.
TEST_F(Files, AResultReadCaseByCaseIsTheWholeReadsDocument) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  json doc = document_with(good_case());
  const int count = 3 + static_cast<int>(rng() % 40);
  for (int i = 1; i < count; ++i) {
    json c = good_case();
    c["name"] = "square_" + std::to_string(i);
    c["details"] = {{"nested", {{"list", {i, json::array({i, "x"}), json::object()}}}}};
    c["params"] = {{"m", i}};
    doc["cases"].push_back(c);
  }
  doc["env"] = {{"cases", json::array({1, 2})}};  // a "cases" below the top level is no case
  const fs::path p = write("r.json", doc.dump(static_cast<int>(rng() % 2) - 1));
  EXPECT_EQ(load_result(p).to_json(), ResultDocument::from_json(doc).to_json());

  const auto same_error = [&](const json& broken, const std::string& says) {
    const std::string streamed = usage_error_of([&] { load_result(write("bad.json", broken.dump())); });
    const std::string whole = usage_error_of([&] { ResultDocument::from_json(broken); });
    EXPECT_NE(streamed.find(says), std::string::npos) << streamed;
    EXPECT_NE(streamed.find(whole), std::string::npos) << streamed << "\nagainst\n" << whole;
  };
  // The bad status lies in a case before the last: a case reads its params before its status, so
  // a later error in the same case would be said first.
  const int bad = static_cast<int>(rng() % (count - 1));
  json broken = doc;
  broken["cases"][bad]["status"] = 5;
  broken["cases"][count - 1]["params"] = "x";  // a later case's error is not the one said
  same_error(broken, fmt::format("cases[{}].status", bad));
  broken["schema"] = "mpbench.result/0";  // written after "cases": still said first
  same_error(broken, "has schema 'mpbench.result/0'");
  json scalar = doc;
  scalar["cases"][1] = 7;
  same_error(scalar, "cases[1]");
  json duplicated = doc;
  duplicated["cases"][count - 1] = duplicated["cases"][0];
  same_error(duplicated, "appears twice");
  json not_an_array = doc;
  not_an_array["cases"] = {{"a", good_case()}};
  same_error(not_an_array, "the document.cases: must be an array");
}

}  // namespace
}  // namespace mpbench
