#pragma once
// What the history tests of both stores (SQLite, PostgreSQL) write and do alike.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compare/documents.hpp"
#include "history/store.hpp"

namespace mpbench::history::testing {

// A gemm run (bf16 at `bf16_seconds` against fp32 at 1 ms) written to `folder`/`name`; `minute`
// makes documents of the same figures distinct runs.
inline std::filesystem::path write_gemm_run(const std::filesystem::path& folder, const std::string& name,
                                            double bf16_seconds, int minute = 0, int indent = -1) {
  ResultDocument doc = compare::testing::gemm_run(bf16_seconds);
  doc.created = fmt::format("2026-12-{:02}T10:{:02}:00Z", 1 + minute / 60, minute % 60);
  const auto path = folder / name;
  std::ofstream(path) << doc.to_json().dump(indent);
  return path;
}

// Two processes adding their documents to `db` at once, one `add` per document, as two CI jobs
// would; each must end without an error.
inline void add_in_two_processes(const std::string& db, const std::vector<std::filesystem::path>& mine,
                                 const std::vector<std::filesystem::path>& theirs) {
  { Store created(db, Store::Mode::write); }
  std::vector<pid_t> children;
  for (const auto* docs : {&mine, &theirs}) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      int status = 0;
      try {
        Store store(db, Store::Mode::write);
        for (const auto& d : *docs) store.add({d});
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
        status = 1;
      }
      ::_exit(status);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
}

}  // namespace mpbench::history::testing
