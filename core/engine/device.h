#pragma once
// Device choice: CUDA when LibTorch reports it, else CPU. `device=` follows the yolo CLI habit:
// "" / "auto" (first visible GPU or CPU), "cpu", "0" (the machine's GPU 0, as nvidia-smi numbers
// it), "0,1"; also "cuda:N" (this process's CUDA device N) and GPU / MIG UUIDs
// (core/base/gpu_ref.h says how these map onto CUDA_VISIBLE_DEVICES).
#include <torch/torch.h>

#include <string>
#include <vector>

namespace crucible::engine {

struct DeviceChoice {
    torch::Device device{torch::kCPU};
    std::vector<int> gpu_indices;  // empty on CPU
    std::string describe() const;  // "cpu" or "cuda:0 (NVIDIA H200)"
};

// The UUID CUDA reports for each device of this process ("GPU-..."); empty without CUDA.
std::vector<std::string> cuda_device_uuids();

// Throws InputError("device", ...) for malformed text, missing GPUs, or several GPUs (until
// distributed training exists).
DeviceChoice choose_device(const std::string& text);

bool cuda_available();

}  // namespace crucible::engine
