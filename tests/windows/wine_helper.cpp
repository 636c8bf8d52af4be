// A program the wine tests (platform_test.cpp) start, to see the platform code from the other
// side of a process boundary. Its arguments come through run_at_boundary, so as UTF-8.
//   args OUT ARG...           writes ARG... to OUT, one per line
//   env NAME OUT              writes the value of environment variable NAME to OUT
//   wait-stop READY OUT       listens for stop requests, writes READY, then OUT = "stopped"
//                             once a request came (exit 0; exit 2 after 30 s without one)
//   spawn-grandchild OUT      starts "sleep" as its own child, writes its pid to OUT, sleeps
//   sleep                     sleeps 60 s
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/base/child_process.h"
#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/stop_signal.h"

namespace {

using namespace crucible;

int helper_main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    const std::string mode = args.empty() ? "" : args[0];
    if (mode == "args" && args.size() >= 2) {
        std::string text;
        for (std::size_t i = 2; i < args.size(); ++i)
            text += args[i] + "\n";
        write_file_atomically(path_from_utf8(args[1]), text);
        return 0;
    }
    if (mode == "env" && args.size() == 3) {
        write_file_atomically(path_from_utf8(args[2]),
                              environment_variable(args[1]).value_or("<unset>"));
        return 0;
    }
    if (mode == "wait-stop" && args.size() == 3) {
        listen_for_stop_requests();
        write_file_atomically(path_from_utf8(args[1]), "ready");
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!stop_requested()) {
            if (std::chrono::steady_clock::now() > deadline) return 2;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        write_file_atomically(path_from_utf8(args[2]), "stopped");
        stop_finished();
        return 0;
    }
    if (mode == "spawn-grandchild" && args.size() == 2) {
        ChildOptions child;
        child.program = this_executable();
        child.args = {"sleep"};
        auto grandchild = ChildProcess::start(child);
        write_file_atomically(path_from_utf8(args[1]), std::to_string(grandchild->pid()));
        std::this_thread::sleep_for(std::chrono::seconds(60));
        return 0;
    }
    if (mode == "sleep") {
        std::this_thread::sleep_for(std::chrono::seconds(60));
        return 0;
    }
    throw Error("wine_helper: unknown mode '" + mode + "'");
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("wine_helper", helper_main, argc, argv);
}
