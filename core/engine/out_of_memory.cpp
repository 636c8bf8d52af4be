#include "core/engine/out_of_memory.h"

#include <c10/util/Exception.h>

#include <new>
#include <string_view>

namespace crucible::engine {

namespace {
constexpr int kCudaErrorMemoryAllocation = 2;  // cudaErrorMemoryAllocation in every CUDA
constexpr std::string_view kCpuAllocatorFailure = "DefaultCPUAllocator: can't allocate memory";
}  // namespace

bool is_out_of_memory(const std::exception& e) {
    if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr) return true;
    if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
    if (const auto* accelerator = dynamic_cast<const c10::AcceleratorError*>(&e))
        return accelerator->get_error_code() == kCudaErrorMemoryAllocation;
    if (const auto* error = dynamic_cast<const c10::Error*>(&e))
        return error->msg().find(kCpuAllocatorFailure) != std::string::npos;
    return false;
}

}  // namespace crucible::engine
