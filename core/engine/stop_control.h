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
    // `reads_folder` false: only the signal counts (ranks other than 0 of a distributed run,
    // which leave the folder's request to rank 0 and agree on it through a collective).
    explicit StopControl(std::filesystem::path job_dir, bool reads_folder = true);
    // Cheap (one stat) when there is nothing; consumes the request.
    StopRequest poll();

  private:
    JobFolder job_;
    bool reads_folder_;
};

// SIGTERM / SIGINT, and on Windows the console events and the named stop event
// (core/base/stop_signal.h), set a flag that poll() reports as StopRequest::Checkpoint.
void install_stop_signal_handlers();
// Sets the flag as the handler does (tests) or clears it.
void set_signal_stop_flag(bool value);
// True once SIGTERM / SIGINT came (the flag is left set): a rank launcher's cue to ask its ranks
// to checkpoint.
bool signal_stop_pending();

}  // namespace crucible::engine
