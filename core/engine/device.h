#pragma once
// Device choice: CUDA when LibTorch reports it, else CPU. `device=` follows the yolo CLI habit:
// "" / "auto" (first GPU or CPU), "cpu", "0", "0,1".
#include <torch/torch.h>

#include <string>
#include <vector>

namespace crucible::engine {

struct DeviceChoice {
    torch::Device device{torch::kCPU};
    std::vector<int> gpu_indices;  // empty on CPU
    std::string describe() const;  // "cpu" or "cuda:0 (NVIDIA H200)"
};

// Throws InputError("device", ...) for malformed text, missing GPUs, or several GPUs (until
// distributed training exists).
DeviceChoice choose_device(const std::string& text);

bool cuda_available();

}  // namespace crucible::engine
