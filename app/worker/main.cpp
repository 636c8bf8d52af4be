// crucible-worker: runs one job folder. `crucible-worker describe` prints every task's option
// schema as JSON, so the agent can serve schemas without linking LibTorch.
#include <cstdio>
#include <string>

#include "core/base/error.h"
#include "core/base/json.h"

namespace {

int worker_main(int argc, char** argv) {
    std::string first = argc > 1 ? argv[1] : "";
    if (first == "--version") {
        std::printf("crucible-worker %s\n", CRUCIBLE_VERSION);
        return 0;
    }
    if (first == "describe") {
        crucible::Json out = {{"version", CRUCIBLE_VERSION}, {"tasks", crucible::Json::array()}};
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    std::fprintf(stderr, "usage: crucible-worker describe | --job DIR [--resume]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("crucible-worker", worker_main, argc, argv);
}
