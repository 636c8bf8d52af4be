#include "core/engine/device_upload.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstring>

namespace crucible::engine {

struct DeviceUpload::Cuda {
    explicit Cuda(c10::DeviceIndex index)
        : stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index)) {}
    c10::cuda::CUDAStream stream;
    at::cuda::CUDAEvent copied;
};

DeviceUpload::DeviceUpload(torch::Device device) : device_(device) {
    if (device_.is_cuda())
        cuda_ = std::make_unique<Cuda>(device_.has_index() ? device_.index() : 0);
}

DeviceUpload::~DeviceUpload() = default;

torch::Tensor DeviceUpload::start(const torch::Tensor& host) {
    if (!cuda_) return host;
    const torch::Tensor source = host.contiguous();
    // Pinned blocks come from LibTorch's caching host allocator, which keeps a block out of reuse
    // until the copy that reads it has finished (it records an event on the copy's stream).
    torch::Tensor pinned = torch::empty(source.sizes(), source.options().pinned_memory(true));
    std::memcpy(pinned.data_ptr(), source.data_ptr(), source.nbytes());
    const c10::cuda::CUDAStreamGuard on_side_stream(cuda_->stream);
    torch::Tensor on_device = pinned.to(device_, /*non_blocking=*/true);
    cuda_->copied.record(cuda_->stream);
    return on_device;
}

void DeviceUpload::hand_over(const std::vector<torch::Tensor>& tensors) {
    if (!cuda_) return;
    const c10::cuda::CUDAStream current =
        c10::cuda::getCurrentCUDAStream(cuda_->stream.device_index());
    cuda_->copied.block(current);
    for (const torch::Tensor& t : tensors)
        if (t.defined() && t.is_cuda())
            c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), current);
}

}  // namespace crucible::engine
