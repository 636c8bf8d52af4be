#pragma once
// RAII fp16 autocast on CUDA, across LibTorch versions (1.13: at::autocast::set_enabled;
// 2.4+: set_autocast_enabled(device, on)). A no-op when `enabled` is false.
namespace crucible::engine {

// Whether CUDA autocast is on for this thread now (a recomputation in backward repeats it).
bool cuda_autocast_active();

class AutocastGuard {
  public:
    explicit AutocastGuard(bool enabled);
    ~AutocastGuard();
    AutocastGuard(const AutocastGuard&) = delete;
    AutocastGuard& operator=(const AutocastGuard&) = delete;

  private:
    bool enabled_;
    bool previous_ = false;
};

}  // namespace crucible::engine
