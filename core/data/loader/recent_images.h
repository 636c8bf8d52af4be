#pragma once
// The decoded, resized images the loader made last, shared by its worker threads: mosaic
// partners are drawn from the samples just before the current one in the epoch's order (see
// mosaic_partner_window), so most of them are found here instead of being read and decoded
// again. Least recently used first out, bounded by image count and by bytes. Only speed depends
// on what is found: a miss decodes the same pixels again.
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "core/data/augment/augment.h"

namespace crucible::data {

class RecentImages {
  public:
    RecentImages(std::size_t max_images, std::size_t max_bytes)
        : max_images_(max_images), max_bytes_(max_bytes) {}

    // The image of `sample` (sharing its pixels: readers never write into them), if kept.
    std::optional<LabeledImage> find(std::int64_t sample);
    // Keeps `image` for `sample`, dropping the least recently used beyond the bounds.
    void put(std::int64_t sample, LabeledImage image);

    std::size_t size() const;
    std::size_t bytes() const;

  private:
    using Entry = std::pair<std::int64_t, LabeledImage>;
    std::size_t max_images_, max_bytes_;
    mutable std::mutex mutex_;
    std::list<Entry> entries_;  // most recently used first
    std::unordered_map<std::int64_t, std::list<Entry>::iterator> by_sample_;
    std::size_t bytes_ = 0;
};

}  // namespace crucible::data
