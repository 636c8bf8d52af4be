#pragma once
// How the trainer learns that it should stop (DESIGN.md "Jobs and reliability"): the job
// folder's stop request (core/base/job_control.h, the same on Windows and Linux), polled between
// steps, and SIGTERM / SIGINT (and, through the agent, a service pre-shutdown or cloud
// preemption notice), which mean "checkpoint".
#include <filesystem>

#include "core/base/job_control.h"

namespace crucible::engine {

using crucible::StopRequest;

class StopControl {
  public:
    explicit StopControl(std::filesystem::path job_dir);
    // Cheap (one stat) when there is nothing; consumes the request.
    StopRequest poll();

  private:
    JobFolder job_;
};

// SIGTERM / SIGINT set a flag that poll() reports as StopRequest::Checkpoint.
void install_stop_signal_handlers();
// Sets the flag as the handler does (tests) or clears it.
void set_signal_stop_flag(bool value);

}  // namespace crucible::engine
