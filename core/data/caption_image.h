#pragma once
// Pixels for caption-dataset training: decode (core/data/image_io.h limits and checks), scale to
// cover the bucket (area interpolation when shrinking, bicubic when enlarging), crop, optional
// horizontal flip; 8-bit RGB, exactly bucket.width x bucket.height.
#include <opencv2/core.hpp>

#include <filesystem>

#include "core/data/caption_buckets.h"

namespace crucible::data {

cv::Mat load_bucket_image(const std::filesystem::path& path, BucketSize bucket, bool random_crop,
                          bool flip, Rng& rng);

}  // namespace crucible::data
