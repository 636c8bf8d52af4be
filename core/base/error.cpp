#include "core/base/error.h"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "core/base/environment.h"

namespace crucible {

int run_at_boundary(const char* program, int (*body)(int, char**), int argc, char** argv) {
    try {
        use_utf8_console();
        std::vector<std::string> args = utf8_arguments(argc, argv);
        std::vector<char*> pointers;
        for (auto& arg : args)
            pointers.push_back(arg.data());
        pointers.push_back(nullptr);
        return body(static_cast<int>(args.size()), pointers.data());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    } catch (...) {
        std::fprintf(stderr, "%s: error: unknown failure\n", program);
    }
    return 1;
}

}  // namespace crucible
