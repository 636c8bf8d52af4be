#include "core/data/loader/recent_images.h"

namespace crucible::data {

namespace {

std::size_t pixel_bytes(const LabeledImage& image) {
    return image.image.total() * image.image.elemSize();
}

}  // namespace

std::optional<LabeledImage> RecentImages::find(std::int64_t sample) {
    std::lock_guard lock(mutex_);
    const auto found = by_sample_.find(sample);
    if (found == by_sample_.end()) return std::nullopt;
    entries_.splice(entries_.begin(), entries_, found->second);
    return found->second->second;
}

void RecentImages::put(std::int64_t sample, LabeledImage image) {
    const std::size_t size = pixel_bytes(image);
    if (max_images_ == 0 || size > max_bytes_) return;
    std::lock_guard lock(mutex_);
    if (by_sample_.count(sample) > 0) return;  // another thread decoded it meanwhile
    entries_.emplace_front(sample, std::move(image));
    by_sample_[sample] = entries_.begin();
    bytes_ += size;
    while (entries_.size() > max_images_ || bytes_ > max_bytes_) {
        bytes_ -= pixel_bytes(entries_.back().second);
        by_sample_.erase(entries_.back().first);
        entries_.pop_back();
    }
}

std::size_t RecentImages::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

std::size_t RecentImages::bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
}

}  // namespace crucible::data
