#pragma once
// Ctrl-C handling: the first SIGINT sets a flag that the sampler checks, so the run stops after
// the current sample and keeps every case it finished; a second SIGINT kills as usual.
namespace mpbench {

void install_interrupt_handler();
bool interrupt_requested();
void request_interrupt();  // what SIGINT does; also for tests
void clear_interrupt();    // for tests

}  // namespace mpbench
