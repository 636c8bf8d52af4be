#pragma once
// Starts and watches one child process (a crucible-worker). Output goes to a log file. The
// platform parts are child_process_posix.cpp and child_process_windows.cpp.
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace crucible::jobs {

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
    // Hard kill (SIGKILL / TerminateProcess).
    virtual void kill() = 0;
};

// True while a process with this id exists (used after an agent restart to find workers that
// outlived it).
bool process_alive(long pid);
// An opaque text that differs between two processes that had the same pid (their start time);
// "" when the process is gone or the system cannot tell.
std::string process_start_token(long pid);
// True when `pid` is alive and still the process whose start token was `token` ("" = unknown,
// judged by the pid alone).
bool is_same_process(long pid, const std::string& token);
// Hard kill of a process this agent did not start itself (an orphaned worker).
void kill_process(long pid);

}  // namespace crucible::jobs
