#pragma once
// One problem found in a dataset, named by "file:line" (no OpenCV here, so the pure parsers that
// report problems can be built alone, e.g. for fuzzing).
#include <string>

namespace crucible::data {

struct DatasetProblem {
    std::string where;  // "labels/img1.txt:3", "data.yaml", "images/a.jpg"
    std::string what;
    bool error = true;  // false: a warning (e.g. background image) that is counted, not flagged
};

}  // namespace crucible::data
