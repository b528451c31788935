#include "core/interrupt.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <string_view>

#include "core/error.hpp"

namespace mpbench {
namespace {

std::atomic<int> g_signal{0};

// Said once, at the first signal, so a user (or a test) knows it was heard before the current
// sample or step ends; write(2) because stdio is not async-signal-safe.
constexpr std::string_view stopping_message(int signal) {
  switch (signal) {
    case SIGINT: return "mpbench: SIGINT: stopping after the current sample or step, keeping what finished\n";
    case SIGTERM: return "mpbench: SIGTERM: stopping after the current sample or step, keeping what finished\n";
    default: return "mpbench: SIGHUP: stopping after the current sample or step, keeping what finished\n";
  }
}

extern "C" void on_stop_signal(int signal) {
  int none = 0;
  if (!g_signal.compare_exchange_strong(none, signal)) return;
  const std::string_view message = stopping_message(signal);
  if (::write(STDERR_FILENO, message.data(), message.size()) < 0) return;  // nothing to do about a closed stderr
}

}  // namespace

void install_interrupt_handler() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in flight go on; the flag is checked between units
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool interrupt_requested() { return g_signal.load() != 0; }
int interrupting_signal() { return g_signal.load(); }
void request_interrupt() {
  int none = 0;
  g_signal.compare_exchange_strong(none, SIGINT);
}
void clear_interrupt() { g_signal.store(0); }

void stop_if_interrupted() {
  if (interrupt_requested()) throw Interrupted();
}

}  // namespace mpbench
