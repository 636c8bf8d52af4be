#include "core/data/detection_types.h"

#include <cmath>

namespace crucible::data {

std::string box_problem(const Box& b, int class_count) {
    if (b.cls < 0) return "class id is negative";
    if (class_count > 0 && b.cls >= class_count)
        return "class id " + std::to_string(b.cls) + " is not below the class count " +
               std::to_string(class_count);
    for (double v : {b.cx, b.cy, b.w, b.h})
        if (!std::isfinite(v)) return "coordinate is not a finite number";
    if (b.w <= 0 || b.h <= 0) return "box width and height must be positive";
    for (double v : {b.cx, b.cy, b.w, b.h})
        if (v < 0 || v > 1) return "coordinate outside [0, 1]";
    return "";
}

}  // namespace crucible::data
