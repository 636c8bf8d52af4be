// `crucible demo`: the headless first-run demo (what the README's *run* command starts when
// there is no display). It grows with the project: today it shows the environment.
#include <cstdio>

#include "app/cli/command.h"
#include "core/engine/device.h"

namespace crucible::cli {
namespace {

int run_demo(const std::vector<std::string>& args) {
    std::printf("Crucible %s demo\n", CRUCIBLE_VERSION);
    std::printf("  LibTorch device: %s\n", engine::choose_device("auto").describe().c_str());
    std::printf("  threads: %d\n", at::get_num_threads());
    (void)args;
    return 0;
}

RegisterCommand reg({"demo", "run the headless demo (synthetic dataset, short training)",
                     &run_demo});

}  // namespace
}  // namespace crucible::cli
