#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mpbench {

// `text` with every byte that is not printable ASCII written as \xNN: messages quote what users
// gave (file contents, names), which must not reach a terminal as escape sequences or break a line.
std::string printable(std::string_view text);

// Bad input from the user (unknown name, unparsable value, impossible request). The CLI prints
// the message on one line, prefixed with "mpbench: error: ", and exits with status 2.
// Messages name the problem and the fix.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A buffer could not be allocated on the device; carries the size that was asked for.
class OutOfMemoryError : public std::runtime_error {
 public:
  OutOfMemoryError(const std::string& what, std::uint64_t requested_bytes)
      : std::runtime_error(what), requested_bytes_(requested_bytes) {}
  std::uint64_t requested_bytes() const { return requested_bytes_; }

 private:
  std::uint64_t requested_bytes_;
};

// A library or driver call failed (CUDA, cuBLASLt, oneDNN, I/O); the message names the call.
class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An interrupt (core/interrupt.hpp) arrived while a case was being measured or in the middle of a
// training step; whoever runs the unit keeps what finished before it.
class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

}  // namespace mpbench
