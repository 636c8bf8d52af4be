#ifndef _WIN32
#include "core/jobs/sysmem_fallback.h"

namespace crucible::jobs {

SysmemFallbackReading read_sysmem_fallback(const std::filesystem::path&) {
    // The Linux driver fails an allocation that does not fit; it has nothing to configure.
    return {SysmemFallback::NotApplicable, {}};
}

}  // namespace crucible::jobs
#endif
