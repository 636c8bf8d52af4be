#include "core/data/caption_image.h"

#include <opencv2/imgproc.hpp>

#include "core/data/image_io.h"

namespace crucible::data {

cv::Mat load_bucket_image(const std::filesystem::path& path, BucketSize bucket, bool random_crop,
                          bool flip, Rng& rng) {
    const cv::Mat bgr = read_image(path);
    const CropPlan plan = plan_crop(bgr.cols, bgr.rows, bucket, random_crop, rng);
    cv::Mat resized;
    const bool shrink = plan.resized_width < bgr.cols;
    cv::resize(bgr, resized, cv::Size(plan.resized_width, plan.resized_height), 0, 0,
               shrink ? cv::INTER_AREA : cv::INTER_CUBIC);
    cv::Mat crop = resized(cv::Rect(plan.crop_x, plan.crop_y, bucket.width, bucket.height));
    cv::Mat rgb;
    cv::cvtColor(crop, rgb, cv::COLOR_BGR2RGB);
    if (flip) cv::flip(rgb, rgb, 1);
    return rgb.isContinuous() ? rgb : rgb.clone();
}

}  // namespace crucible::data
