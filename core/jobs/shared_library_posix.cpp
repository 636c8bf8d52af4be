#ifndef _WIN32
#include <dlfcn.h>

#include "core/jobs/shared_library.h"

namespace crucible::jobs {

std::unique_ptr<SharedLibrary> SharedLibrary::open(const std::filesystem::path& name) {
    void* h = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return nullptr;
    return std::unique_ptr<SharedLibrary>(new SharedLibrary(h));
}

SharedLibrary::~SharedLibrary() {
    if (handle_) ::dlclose(handle_);
}

void* SharedLibrary::raw_symbol(const char* name) const {
    return ::dlsym(handle_, name);
}

}  // namespace crucible::jobs
#endif
