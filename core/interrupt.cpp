#include "core/interrupt.hpp"

#include <atomic>
#include <csignal>

#include "core/error.hpp"

namespace mpbench {
namespace {

std::atomic<int> g_signal{0};

extern "C" void on_stop_signal(int signal) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);
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
