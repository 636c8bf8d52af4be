#include "plugins/detect/cli/dataset_argument.h"

#include <cstdio>

#include "core/base/file_io.h"
#include "core/data/dataset_io.h"

namespace crucible::detect {

data::DetectionDataset load_data_argument(const std::string& data_path, bool read_image_sizes) {
    data::LoadOptions lo;
    lo.read_image_sizes = read_image_sizes;
    auto loaded =
        data::load_detection_dataset(path_from_utf8(data_path), data::DatasetFormat::Auto, lo);
    for (const auto& line : data::load_problem_lines(loaded, data_path, 10))
        std::fprintf(stderr, "warning: %s\n", line.c_str());
    return std::move(loaded.dataset);
}

}  // namespace crucible::detect
