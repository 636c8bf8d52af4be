#pragma once
// The `data=` argument of the detection commands that score a model (val, export's re-scoring).
#include <string>

#include "core/data/detection_types.h"

namespace crucible::detect {

// A data.yaml / COCO / VOC dataset; label problems are printed (the first ten) and those images
// left out, as the reference does. Image sizes are read from the headers when a model is
// validated (its predictions are clipped to each image).
data::DetectionDataset load_data_argument(const std::string& data_path, bool read_image_sizes);

}  // namespace crucible::detect
