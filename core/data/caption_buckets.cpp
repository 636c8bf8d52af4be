#include "core/data/caption_buckets.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/base/error.h"

namespace crucible::data {

void validate_bucket_options(const BucketOptions& o) {
    if (o.step < 8 || o.step > 1024 || o.step % 8 != 0)
        throw InputError("bucket_step", "must be a multiple of 8 between 8 and 1024");
    if (o.resolution < o.step || o.resolution > 8192)
        throw InputError("resolution", "must be between bucket_step and 8192");
    if (o.resolution % 8 != 0) throw InputError("resolution", "must be a multiple of 8");
    if (o.min_size < o.step || o.min_size > o.resolution)
        throw InputError("min_bucket_size", "must be between bucket_step and resolution");
    if (o.max_size < o.resolution || o.max_size > 16384)
        throw InputError("max_bucket_size", "must be between resolution and 16384");
}

std::vector<BucketSize> make_buckets(const BucketOptions& o) {
    validate_bucket_options(o);
    std::set<BucketSize> out;
    if (!o.enabled) return {BucketSize{o.resolution, o.resolution}};
    const std::int64_t area = static_cast<std::int64_t>(o.resolution) * o.resolution;
    const int lo = (o.min_size + o.step - 1) / o.step * o.step;
    const int hi = o.max_size / o.step * o.step;
    for (int w = lo; w <= hi; w += o.step) {
        int h = static_cast<int>(std::min<std::int64_t>(hi, area / w / o.step * o.step));
        if (h < lo) continue;
        out.insert({w, h});
        out.insert({h, w});
    }
    const int side = o.resolution / o.step * o.step;
    out.insert({side, side});
    return {out.begin(), out.end()};
}

BucketSize assign_bucket(int width, int height, const std::vector<BucketSize>& buckets,
                         const BucketOptions& o) {
    if (width <= 0 || height <= 0) throw InputError("image", "has no pixels");
    const std::int64_t area = static_cast<std::int64_t>(o.resolution) * o.resolution;
    if (o.enabled && o.no_upscale && static_cast<std::int64_t>(width) * height <= area) {
        const int w = std::max(o.step, width / o.step * o.step);
        const int h = std::max(o.step, height / o.step * o.step);
        return {w, h};
    }
    const double aspect = std::log(static_cast<double>(width) / height);
    BucketSize best = buckets.at(0);
    double best_err = 1e300;
    for (const auto& b : buckets) {
        const double err = std::abs(std::log(static_cast<double>(b.width) / b.height) - aspect);
        // Ties: the larger area (more detail kept).
        if (err < best_err - 1e-12 || (std::abs(err - best_err) <= 1e-12 &&
                                       static_cast<std::int64_t>(b.width) * b.height >
                                           static_cast<std::int64_t>(best.width) * best.height)) {
            best = b;
            best_err = err;
        }
    }
    return best;
}

CropPlan plan_crop(int width, int height, BucketSize bucket, bool random_crop, Rng& rng) {
    if (width <= 0 || height <= 0) throw InputError("image", "has no pixels");
    const double scale = std::max(static_cast<double>(bucket.width) / width,
                                  static_cast<double>(bucket.height) / height);
    CropPlan p;
    p.resized_width = std::max(bucket.width, static_cast<int>(std::lround(width * scale)));
    p.resized_height = std::max(bucket.height, static_cast<int>(std::lround(height * scale)));
    const int slack_x = p.resized_width - bucket.width;
    const int slack_y = p.resized_height - bucket.height;
    if (random_crop) {
        p.crop_x = static_cast<int>(rng.uniform_int(0, slack_x));
        p.crop_y = static_cast<int>(rng.uniform_int(0, slack_y));
    } else {
        p.crop_x = slack_x / 2;
        p.crop_y = slack_y / 2;
    }
    return p;
}

std::vector<std::vector<std::size_t>> bucket_batches(const std::vector<BucketSize>& item_buckets,
                                                     int batch_size, std::uint64_t seed,
                                                     int epoch) {
    if (batch_size < 1) throw InputError("batch", "must be at least 1");
    // Platform-independent draws (no std::shuffle), so a run resumed on another operating
    // system sees the same batches.
    Rng rng(derive_seed({seed, static_cast<std::uint64_t>(epoch)}));
    const auto order = random_permutation(static_cast<std::int64_t>(item_buckets.size()), rng);
    std::map<BucketSize, std::vector<std::size_t>> groups;
    for (auto i : order)
        groups[item_buckets[static_cast<std::size_t>(i)]].push_back(static_cast<std::size_t>(i));
    std::vector<std::vector<std::size_t>> batches;
    for (auto& [bucket, items] : groups)
        for (std::size_t s = 0; s < items.size(); s += static_cast<std::size_t>(batch_size))
            batches.emplace_back(
                items.begin() + static_cast<std::ptrdiff_t>(s),
                items.begin() + static_cast<std::ptrdiff_t>(std::min(
                                    items.size(), s + static_cast<std::size_t>(batch_size))));
    shuffle(batches, rng);
    return batches;
}

}  // namespace crucible::data
