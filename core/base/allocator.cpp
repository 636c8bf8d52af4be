#include "core/base/allocator.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace crucible {

void keep_large_blocks_in_heap() {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

}  // namespace crucible
