#pragma once
// Host-to-device copies of training batches that do not stall the GPU. On CUDA a host tensor is
// copied into page-locked (pinned) memory and sent with an asynchronous copy on a side stream, so
// the copy of the next batch runs while the current step computes; the compute stream waits for
// it (an event, no host sync) only when the batch is handed over. On the CPU, tensors pass
// through unchanged.
//
// Use: start(host) for each tensor of batch k+1 right after handing over batch k, then
// hand_over(tensors) just before batch k+1 is used.
#include <torch/torch.h>

#include <memory>
#include <vector>

namespace crucible::engine {

class DeviceUpload {
  public:
    explicit DeviceUpload(torch::Device device);
    ~DeviceUpload();
    DeviceUpload(const DeviceUpload&) = delete;
    DeviceUpload& operator=(const DeviceUpload&) = delete;

    // Starts copying `host` (a CPU tensor) to the device and returns the device tensor, which
    // may be used only after hand_over(). On the CPU: `host` itself.
    torch::Tensor start(const torch::Tensor& host);
    // Makes the current stream wait for the copies started so far and marks `tensors` as used
    // by it (so the caching allocator does not hand their memory to the side stream again
    // while the step still reads it).
    void hand_over(const std::vector<torch::Tensor>& tensors);

    const torch::Device& device() const { return device_; }

  private:
    struct Cuda;
    torch::Device device_;
    std::unique_ptr<Cuda> cuda_;  // null on the CPU
};

}  // namespace crucible::engine
