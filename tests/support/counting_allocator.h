#pragma once
// Counts the bytes of live CPU tensors and their peak, for tests and benchmarks that compare a
// memory prediction (or a loader's footprint) with what LibTorch really holds. Header-only: the
// support library links no LibTorch; only targets that do include this.
//
// install() makes it LibTorch's CPU allocator. Blocks keep the default allocator's layout
// (context = data, one raw deleter), so a block allocated before install() is freed as before.
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace crucible::test_support {

class CountingAllocator final : public c10::Allocator {
  public:
    // The one instance, installed as the CPU allocator on first use (never destroyed: tensors
    // in other statics are freed after main returns).
    static CountingAllocator& install() {
        static auto* a = [] {
            auto* made = new CountingAllocator(c10::GetDefaultCPUAllocator());
            c10::SetCPUAllocator(made, /*priority=*/100);
            return made;
        }();
        return *a;
    }

    c10::DataPtr allocate(std::size_t n) override {
        c10::DataPtr inner = base_->allocate(n);
        const c10::Device device = inner.device();
        void* p = inner.release_context();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            sizes_[p] = n;
            live_ += static_cast<std::int64_t>(n);
            peak_ = std::max(peak_, live_);
        }
        return {p, p, &release, device};
    }
    void copy_data(void* dest, const void* src, std::size_t count) const override {
        default_copy_data(dest, src, count);
    }
    c10::DeleterFnPtr raw_deleter() const override { return &release; }

    std::int64_t live() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return live_;
    }
    std::int64_t peak() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return peak_;
    }
    // The peak starts again from what is live now.
    void reset_peak() {
        std::lock_guard<std::mutex> lock(mutex_);
        peak_ = live_;
    }

  private:
    explicit CountingAllocator(c10::Allocator* base)
        : base_(base), base_free_(base->raw_deleter()) {
        if (!base_free_) std::abort();  // the default CPU allocator always has one
    }
    static void release(void* p) {
        if (p == nullptr) return;
        auto& a = install();
        {
            std::lock_guard<std::mutex> lock(a.mutex_);
            const auto it = a.sizes_.find(p);
            if (it != a.sizes_.end()) {
                a.live_ -= static_cast<std::int64_t>(it->second);
                a.sizes_.erase(it);
            }
        }
        a.base_free_(p);
    }

    c10::Allocator* base_;
    c10::DeleterFnPtr base_free_;
    mutable std::mutex mutex_;
    std::unordered_map<void*, std::size_t> sizes_;
    std::int64_t live_ = 0, peak_ = 0;
};

}  // namespace crucible::test_support
