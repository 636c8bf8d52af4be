#pragma once
// How each validation image fared: what `crucible val detect ... per_image=FILE` writes and the
// studio's drill-down reads (from a confusion-matrix cell or a class to the images behind it).
// Per image: its path, split and tags; true positives, false positives, misses and the mean IoU
// of the matched pairs under the confusion matrix's matching (conf and iou below); the cells it
// counts in ((predicted, true) class pairs, the background being the class count); the class of
// each of its true boxes; and its predictions, normalized to the image like label files, each
// with whether mAP's matching at IoU 0.5 made it a true positive (what the PR curve counts, so
// a point of the curve can be traced to its images: core/data/pr_operating_point.h). Then the
// metrics of each value of each image tag (station=3), as `crucible val ... tag=` computes them.
//
//   {"version": 2, "names": [...], "conf": 0.25, "iou": 0.45,
//    "images": [{"path": "/data/img1.jpg", "split": "val", "tags": {"station": "3"},
//                "tp": 2, "fp": 1, "misses": 0, "mean_iou": 0.81, "cells": [[0, 0], [1, 4]],
//                "truth_classes": [0, 1],
//                "predictions": [[cls, cx, cy, w, h, conf, tp50], ...]}, ...],
//    "by_tag": {"station": {"3": {"images": 4, "instances": 9, "p": 0.8, "r": 0.7,
//                                 "map50": 0.75, "map50_95": 0.5}}}}
//
// Version 1 (no "version") had six numbers per prediction, no truth classes and no by_tag; it
// still reads (tp50 false, the rest empty) so a caller can tell it is old and score again.
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/base/json.h"
#include "core/data/detection_types.h"

namespace crucible::data {

constexpr int kPerImageReportVersion = 2;

struct ScoredBox {
    Box box;
    double conf = 0;
    bool true_at_50 = false;  // a true positive of mAP's matching at IoU 0.5
};

struct ImageOutcome {
    std::filesystem::path path;
    std::string split;
    std::map<std::string, std::string> tags;
    int true_positives = 0, false_positives = 0, misses = 0;
    double mean_iou = 0;
    std::vector<std::pair<int, int>> cells;  // (predicted, true)
    std::vector<int> truth_classes;          // one per true box
    std::vector<ScoredBox> predictions;

    bool counts_in(int predicted, int truth) const;
    bool involves_class(int cls) const;  // as a prediction or as a true box
};

// The metrics of the images holding one value of a tag.
struct TagMetrics {
    int images = 0, instances = 0;
    double p = 0, r = 0, map50 = 0, map50_95 = 0;
};

struct PerImageReport {
    int version = kPerImageReportVersion;
    std::vector<std::string> names;
    double conf = 0.25, iou = 0.45;
    std::vector<ImageOutcome> images;
    std::map<std::string, std::map<std::string, TagMetrics>> by_tag;  // key -> value -> metrics
    int background() const { return static_cast<int>(names.size()); }
};

Json per_image_report_json(const PerImageReport& report);
// Throws InputError naming `where` and the field at fault (images[3].cells[0], ...).
PerImageReport parse_per_image_report(const Json& json, const std::string& where);

}  // namespace crucible::data
