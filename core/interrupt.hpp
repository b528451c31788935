#pragma once
// Stopping a run without losing it: SIGINT (Ctrl-C), SIGTERM and SIGHUP, the first or any later one,
// set a flag that the sampler and the training loop check, so the run stops after the current
// sample or step and keeps every case it finished (the first signal says so on stderr); SIGPIPE is ignored, so a closed stdout or stderr
// costs the printing, not the result document. SIGKILL and SIGQUIT still end it at once.

namespace mpbench {

void install_interrupt_handler();
bool interrupt_requested();
// The signal that asked first (SIGINT when request_interrupt asked), 0 when none did.
int interrupting_signal();
void request_interrupt();  // what SIGINT does; also for tests
void clear_interrupt();    // for tests

// Throws Interrupted (core/error.hpp) when an interrupt was requested.
void stop_if_interrupted();

}  // namespace mpbench
