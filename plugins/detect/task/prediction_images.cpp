#include "plugins/detect/task/prediction_images.h"

#include <cstdio>

#include "core/base/file_io.h"
#include "core/data/image_io.h"
#include "core/data/loader/batch_loader.h"

namespace crucible::detect {

std::vector<std::filesystem::path> write_prediction_images(
    DetectionModelImpl& model, const data::DetectionDataset& dataset, const std::string& split,
    const PredictOptions& options, const data::ImageLimits& limits,
    const std::filesystem::path& dir, int count) {
    std::vector<std::filesystem::path> written;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    // The validator's own list of the split (paths resolved against the root).
    for (const auto& sample : data::loader_samples(dataset, split)) {
        if (static_cast<int>(written.size()) >= count) break;
        const auto& path = sample.path;
        cv::Mat image;
        try {
            image = data::read_image(path, limits);
        } catch (const std::exception&) {
            continue;  // validation already reported it
        }
        draw_detections(image, predict_image(model, image, options), dataset.class_names);
        char prefix[8];
        std::snprintf(prefix, sizeof prefix, "%02zu_", written.size());
        auto file = dir / path_from_utf8(prefix + path_to_utf8(path.stem()) + ".jpg");
        data::write_image(file, image);
        written.push_back(std::move(file));
    }
    return written;
}

}  // namespace crucible::detect
