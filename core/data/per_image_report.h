#pragma once
// How each validation image fared: what `crucible val detect ... per_image=FILE` writes and the
// studio's drill-down reads (from a confusion-matrix cell or a class to the images behind it).
// Per image: its path, split and tags; true positives, false positives, misses and the mean IoU
// of the matched pairs under the confusion matrix's matching (conf and iou below); the cells it
// counts in ((predicted, true) class pairs, the background being the class count); and its
// predictions, normalized to the image like label files.
//
//   {"names": [...], "conf": 0.25, "iou": 0.45,
//    "images": [{"path": "/data/img1.jpg", "split": "val", "tags": {"station": "3"},
//                "tp": 2, "fp": 1, "misses": 0, "mean_iou": 0.81, "cells": [[0, 0], [1, 4]],
//                "predictions": [[cls, cx, cy, w, h, conf], ...]}, ...]}
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/base/json.h"
#include "core/data/detection_types.h"

namespace crucible::data {

struct ScoredBox {
    Box box;
    double conf = 0;
};

struct ImageOutcome {
    std::filesystem::path path;
    std::string split;
    std::map<std::string, std::string> tags;
    int true_positives = 0, false_positives = 0, misses = 0;
    double mean_iou = 0;
    std::vector<std::pair<int, int>> cells;  // (predicted, true)
    std::vector<ScoredBox> predictions;

    bool counts_in(int predicted, int truth) const;
    bool involves_class(int cls) const;  // as a prediction or as a true box
};

struct PerImageReport {
    std::vector<std::string> names;
    double conf = 0.25, iou = 0.45;
    std::vector<ImageOutcome> images;
    int background() const { return static_cast<int>(names.size()); }
};

Json per_image_report_json(const PerImageReport& report);
// Throws InputError naming `where` and the field at fault (images[3].cells[0], ...).
PerImageReport parse_per_image_report(const Json& json, const std::string& where);

}  // namespace crucible::data
