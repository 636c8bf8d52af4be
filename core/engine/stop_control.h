#pragma once
// Stop requests that work the same on Windows and Linux (DESIGN.md "Jobs and reliability"; a
// worker of a Windows service has no console): the agent, the CLI or a test writes
// `control.json` = {"request": "pause" | "cancel" | "checkpoint"} into the job folder; the
// trainer polls it between steps and removes it once handled. SIGTERM and SIGINT (and, through
// the agent, a service pre-shutdown or cloud preemption notice) become "checkpoint".
#include <filesystem>
#include <string>

namespace crucible::engine {

enum class StopRequest { None, Pause, Cancel, Checkpoint };

const char* stop_request_name(StopRequest request);

class StopControl {
  public:
    explicit StopControl(std::filesystem::path job_dir);
    // Cheap (one stat) when there is nothing; consumes the request.
    StopRequest poll();
    const std::filesystem::path& file() const { return file_; }

  private:
    std::filesystem::path file_;
};

// Writes the control file atomically.
void request_stop(const std::filesystem::path& job_dir, StopRequest request);

// SIGTERM / SIGINT set a flag that poll() reports as StopRequest::Checkpoint.
void install_stop_signal_handlers();
// Sets the flag as the handler does (tests) or clears it.
void set_signal_stop_flag(bool value);

}  // namespace crucible::engine
