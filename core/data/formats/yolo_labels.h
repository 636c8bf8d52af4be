#pragma once
// Pure text parsing of Ultralytics YOLO label files (no filesystem, no OpenCV), so it can be
// fuzzed. Rules (SPECS.md "Detection datasets"): one row `class cx cy w h` normalized to [0,1];
// rows of more than 6 values are polygons `class x1 y1 x2 y2 ...` turned into their bounding
// box; negative values and coordinates > 1 are errors; duplicate rows are dropped with a warning;
// any error means the whole image is unusable.
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset_problem.h"
#include "core/data/detection_types.h"

namespace crucible::data {

struct LabelParse {
    std::vector<Box> boxes;
    std::vector<DatasetProblem> problems;  // where = "<where_file>:<line>"
    bool has_error() const;
};

// `class_count` <= 0 skips the class id range check. A UTF-8 BOM and CRLF line ends are accepted.
LabelParse parse_yolo_labels(std::string_view text, const std::string& where_file, int class_count);

// Splits a label or prediction row on blanks (space, tab, CR, VT, FF); the views point into `line`.
std::vector<std::string_view> split_label_tokens(std::string_view line);

// Parses one number the way the label reader does (leading '+', scientific notation); false when
// the token is not a number.
bool parse_label_number(std::string_view token, double& value);

// One label row as written by the YOLO writer (shortest text that reads back exactly).
std::string format_yolo_row(const Box& box);
// Shortest decimal text of `value` that parses back to the same double.
std::string format_number(double value);

}  // namespace crucible::data
