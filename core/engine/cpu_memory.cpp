#include "core/engine/cpu_memory.h"

#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace crucible::engine {

bool keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
    static std::once_flag once;
    static bool changed = false;
    std::call_once(once, [] {
        // Setting either disables glibc's dynamic threshold, so both are set: the mmap threshold
        // alone still trims the heap top, the trim threshold alone leaves the mmap threshold at
        // 128 KiB (worse than the default).
        const int max_mmap_threshold = 32 * 1024 * 1024;
        changed = mallopt(M_MMAP_THRESHOLD, max_mmap_threshold) == 1 &&
                  mallopt(M_TRIM_THRESHOLD, 2147483647) == 1;
    });
    return changed;
#else
    return false;
#endif
}

}  // namespace crucible::engine
