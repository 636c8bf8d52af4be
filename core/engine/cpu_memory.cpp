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
        // No block is mapped on its own: glibc unmaps those on free, so each step faulted them
        // in again, and its mmap threshold cannot go above 32 MiB, below the 100 MiB maps of a
        // 640 px batch (12,400 faults a forward + backward there; a 640 px step took 2-9% less
        // without them, bench_yolo_step, measured). And the heap top is never trimmed.
        changed = mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, 2147483647) == 1;
    });
    return changed;
#else
    return false;
#endif
}

}  // namespace crucible::engine
