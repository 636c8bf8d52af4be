#pragma once
// A shared library loaded at run time (dlopen / LoadLibraryW), for NVML.
#include <filesystem>
#include <memory>
#include <string>

namespace crucible::jobs {

class SharedLibrary {
  public:
    // nullptr when the library is not there (a normal state for NVML).
    static std::unique_ptr<SharedLibrary> open(const std::filesystem::path& name);
    ~SharedLibrary();
    SharedLibrary(const SharedLibrary&) = delete;
    SharedLibrary& operator=(const SharedLibrary&) = delete;

    template <typename Fn>
    Fn symbol(const char* name) const {
        return reinterpret_cast<Fn>(raw_symbol(name));
    }

  private:
    explicit SharedLibrary(void* handle) : handle_(handle) {}
    void* raw_symbol(const char* name) const;
    void* handle_;
};

}  // namespace crucible::jobs
