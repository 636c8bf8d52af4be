#pragma once
// Aspect-ratio buckets (kohya style): resolutions whose sides are multiples of `step` (64 px),
// between min and max side, with an area of at most resolution²; each image goes to the bucket
// whose aspect ratio is nearest its own, is scaled to cover it and center- (or randomly) cropped.
// With no_upscale, an image smaller than the area gets its own bucket (its size floored to the
// step) instead of being enlarged. Batches hold images of one bucket.
#include <cstdint>
#include <vector>

#include "core/data/augment/random.h"

namespace crucible::data {

struct BucketSize {
    int width = 0, height = 0;
    bool operator==(const BucketSize& o) const { return width == o.width && height == o.height; }
    bool operator<(const BucketSize& o) const {
        return width != o.width ? width < o.width : height < o.height;
    }
};

struct BucketOptions {
    int resolution = 512;  // area limit = resolution²
    int min_size = 256;
    int max_size = 1024;
    int step = 64;
    bool no_upscale = false;
    bool enabled = true;  // false: every image goes to resolution x resolution
};

// Checks the options (InputError naming the option): step >= 8, min <= resolution <= max, ...
void validate_bucket_options(const BucketOptions& options);

// All bucket sizes, sorted, without duplicates.
std::vector<BucketSize> make_buckets(const BucketOptions& options);

// The bucket for an image of width x height (> 0).
BucketSize assign_bucket(int width, int height, const std::vector<BucketSize>& buckets,
                         const BucketOptions& options);

// How to turn the image into the bucket: resize to (resized_width, resized_height) (covering the
// bucket, aspect kept), then crop `bucket` at (crop_x, crop_y).
struct CropPlan {
    int resized_width = 0, resized_height = 0;
    int crop_x = 0, crop_y = 0;
};
CropPlan plan_crop(int width, int height, BucketSize bucket, bool random_crop, Rng& rng);

// Batches of item indices, each within one bucket: items shuffled by (seed, epoch), grouped per
// bucket, cut into batches of `batch_size` (the last of a bucket may be smaller), batches shuffled.
std::vector<std::vector<std::size_t>> bucket_batches(const std::vector<BucketSize>& item_buckets,
                                                     int batch_size, std::uint64_t seed, int epoch);

}  // namespace crucible::data
