#pragma once
// Boxes drawn onto an image with a class label, one colour per class: what `crucible dataset
// preview` and `crucible predict detect` write so a person can see boxes.
#include <string>

#include <opencv2/core.hpp>

#include "core/data/augment/augment.h"

namespace crucible::data {

// A colour per class index (BGR), well separated and readable on grey padding.
cv::Scalar class_colour(int cls);

// Rectangle `box` (pixels) in the class colour with `label` on a filled tag above it. Line width
// and font scale follow the image size.
void draw_labeled_box(cv::Mat& image, const PixelBox& box, const std::string& label);

}  // namespace crucible::data
