#include "core/base/allocator.h"

#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace crucible {

bool keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
    static std::once_flag once;
    static bool changed = false;
    std::call_once(once, [] {
        changed = mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, 2147483647) == 1;
    });
    return changed;
#else
    return false;
#endif
}

}  // namespace crucible
