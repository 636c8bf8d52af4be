// POSIX child processes: posix_spawn with stdout/stderr appended to the log file.
#ifndef _WIN32
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/base/child_process.h"
#include "core/base/error.h"

extern char** environ;

namespace crucible {
namespace {

class PosixChild final : public ChildProcess {
  public:
    explicit PosixChild(pid_t pid) : pid_(pid) {}
    ~PosixChild() override {
        if (!exit_) {
            // Never leave a zombie: reap if it already ended; a running worker stays running
            // (a restarted agent finds its job interrupted and resumes it).
            int status = 0;
            ::waitpid(pid_, &status, WNOHANG);
        }
    }
    long pid() const override { return pid_; }

    std::optional<ExitInfo> poll() override {
        if (exit_) return exit_;
        int status = 0;
        pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) exit_ = decode(status);
        return exit_;
    }

    ExitInfo wait() override {
        if (exit_) return *exit_;
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        exit_ = decode(status);
        return *exit_;
    }

    void kill() override {
        if (!exit_) ::kill(pid_, SIGKILL);
    }

  private:
    static ExitInfo decode(int status) {
        ExitInfo e;
        if (WIFEXITED(status)) e.code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
        return e;
    }
    pid_t pid_;
    std::optional<ExitInfo> exit_;
};

}  // namespace

std::unique_ptr<ChildProcess> ChildProcess::start(const ChildOptions& o) {
    std::vector<std::string> argv_s{o.program.string()};
    argv_s.insert(argv_s.end(), o.args.begin(), o.args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        auto eq = kv.find('=');
        if (eq != std::string::npos && o.env.count(kv.substr(0, eq))) continue;
        env_s.push_back(kv);
    }
    for (const auto& [k, v] : o.env)
        env_s.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& e : env_s)
        envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (!o.log_file.empty()) {
        posix_spawn_file_actions_addopen(&actions, 1, o.log_file.c_str(),
                                         O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
    }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    // Only stdin, stdout and stderr reach the worker: not the agent's client sockets (a worker
    // that outlives the agent would hold them open) nor its log file.
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))
    if (!o.working_dir.empty())
        posix_spawn_file_actions_addchdir_np(&actions, o.working_dir.c_str());
#endif
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Own process group: a terminal's Ctrl+C to the agent does not reach the workers.
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, argv_s[0].c_str(), &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw Error("cannot start " + argv_s[0] + ": " + std::strerror(rc));
    return std::make_unique<PosixChild>(pid);
}

}  // namespace crucible
#endif
