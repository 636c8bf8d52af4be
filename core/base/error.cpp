#include "core/base/error.h"

#include <cstdio>
#include <exception>

namespace crucible {

int run_at_boundary(const char* program, int (*body)(int, char**), int argc, char** argv) {
    try {
        return body(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    } catch (...) {
        std::fprintf(stderr, "%s: error: unknown failure\n", program);
    }
    return 1;
}

}  // namespace crucible
