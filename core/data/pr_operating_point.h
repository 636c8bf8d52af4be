#pragma once
// From a point of a class's precision/recall curve (IoU 0.5) back to its images. The curve is
// traced by lowering a confidence threshold through the class's predictions, most confident
// first; a point of it is that threshold, and the images behind it are those whose predictions
// at or above it are false positives, or whose true boxes no prediction at or above it found.
// Counted from a per-image report (core/data/per_image_report.h), whose true-positive flags are
// mAP's own, so the totals here are the curve's points exactly.
#include "core/data/per_image_report.h"

namespace crucible::data {

// One class's predictions at or above `conf`, over a set of images.
struct ClassCounts {
    int true_positives = 0, false_positives = 0, misses = 0;
    int found() const { return true_positives + false_positives; }
};

ClassCounts class_counts(const ImageOutcome& image, int cls, double conf);

struct OperatingPoint {
    int cls = 0;
    double conf = 1;  // predictions at or above it count
    int instances = 0;
    ClassCounts counts;
    double precision() const;  // 1 when nothing was predicted (the curve's start)
    double recall() const;     // 0 without true boxes
};

// The highest threshold at which the class's recall reaches `recall` (at least one true
// positive); past the class's highest recall, the lowest threshold (every prediction). A class
// without predictions gives conf 1 and no true positives.
OperatingPoint operating_point_at_recall(const PerImageReport& report, int cls, double recall);

// The point at one threshold.
OperatingPoint operating_point_at_conf(const PerImageReport& report, int cls, double conf);

}  // namespace crucible::data
