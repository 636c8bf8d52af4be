#pragma once
// Starts and watches one child process (a crucible-worker, a helper program). Output goes to a log
// file. The platform parts are child_process_posix.cpp and child_process_windows.cpp.
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/process_info.h"  // process_alive, kill_process, ... (by pid)

namespace crucible {

struct ExitInfo {
    int code = 0;                  // exit code when it exited
    int signal = 0;                // POSIX signal that ended it (0 if none)
    std::string describe() const;  // "exit code 3", "killed by signal 9 (SIGKILL)"
};

struct ChildOptions {
    std::filesystem::path program;
    std::vector<std::string> args;
    std::map<std::string, std::string> env;  // added to / overriding the agent's environment
    std::filesystem::path working_dir;
    std::filesystem::path log_file;  // stdout and stderr, appended
};

class ChildProcess {
  public:
    // Throws Error when the program cannot be started.
    static std::unique_ptr<ChildProcess> start(const ChildOptions& options);
    virtual ~ChildProcess() = default;
    virtual long pid() const = 0;
    // Non-blocking: the exit status once the child has ended.
    virtual std::optional<ExitInfo> poll() = 0;
    virtual ExitInfo wait() = 0;
    // Waits at most `limit`: the exit status, or nullopt while the child still runs.
    std::optional<ExitInfo> wait_for(std::chrono::milliseconds limit);
    // Hard kill (SIGKILL / TerminateProcess).
    virtual void kill() = 0;
};

}  // namespace crucible
