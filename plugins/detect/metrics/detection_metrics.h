#pragma once
// Detection metrics exactly as SPECS.md "mAP as Ultralytics computes it": per-image matching at
// the ten IoU thresholds 0.50:0.05:0.95, dataset-wide AP by the 101-point interpolated
// trapezoid of the precision envelope, P and R read at the maximum of the smoothed mean F1,
// mAP50, mAP50-95 and fitness; plus the per-class table, PR-curve data and a breakdown by image
// tag. Plain C++ (no LibTorch), so the same code scores a model during training, a folder of
// prediction files (`crucible val detect predictions=DIR`) and tests.
//
// Usage: DetectionStats stats; for each image stats.add_image(gt, preds, tags); then
// stats.compute() (or compute_by_tag("station")).
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace crucible::detect {

// A ground-truth box, corners in any unit (pixels in practice: IoU does not depend on it).
struct GtBox {
    int cls = 0;
    double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

// A prediction (after NMS), corners in the same unit as the ground truth. The confidence is
// single precision as a model produces it.
struct PredBox {
    double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
    float conf = 0;
    int cls = 0;
};

inline constexpr int kIouThresholdCount = 10;
// 0.50, 0.55, ..., 0.95 (SPECS.md).
const std::array<double, kIouThresholdCount>& iou_thresholds();

// IoU as the reference's validator computes it: single precision, inter / (a1 + a2 - inter +
// 1e-7). Returned as double so callers compare it with thresholds exactly as the reference does.
double box_iou(const GtBox& gt, const PredBox& pred);

// Matches one image's predictions, which must already be in descending confidence (as NMS returns
// them; the ordering decides which duplicate is the true positive). Bit t of result[i] is set when
// prediction i is a true positive at iou_thresholds()[t]. Per threshold: the GT×prediction IoU
// matrix is zeroed where the classes differ; candidate pairs have IoU ≥ threshold; each
// prediction keeps its highest-IoU GT (on equal IoU, the later GT, as the reference's sort
// leaves it); then each GT keeps, among the pairs left, its most confident (earliest)
// prediction. All other predictions are false positives.
std::vector<std::uint16_t> match_predictions(const std::vector<GtBox>& gt,
                                             const std::vector<PredBox>& preds_by_confidence);

// The same for predictions in any order, ordered first as DetectionStats::add_image orders them
// (a stable sort by descending confidence); result[i] belongs to preds[i].
std::vector<std::uint16_t> match_predictions_in_any_order(const std::vector<GtBox>& gt,
                                                          const std::vector<PredBox>& preds);

// AP of one class at one threshold from its recall/precision points (in descending confidence):
// recall padded to [0, r..., 1], precision to [1, p..., 0], running max from the right, then the
// trapezoid integral of that envelope interpolated linearly at 101 recall points in [0, 1].
// When `envelope_at` is given it receives the envelope interpolated at those recall points.
double average_precision(const std::vector<double>& recall, const std::vector<double>& precision,
                         const std::vector<double>* envelope_at = nullptr,
                         std::vector<double>* envelope_values = nullptr);

// numpy.interp semantics (xp non-decreasing; the last of equal xp wins; outside: left/right).
double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp, double left,
              double right);

// `count` evenly spaced values from start to stop inclusive, as numpy.linspace computes them.
std::vector<double> linspace(double start, double stop, int count);

// Box filter over a fraction `fraction` of the points (odd width, edges padded with the edge
// values), as the reference smooths the mean F1 curve.
std::vector<double> smooth(const std::vector<double>& y, double fraction);

struct ClassMetrics {
    int cls = 0;
    int images = 0;     // images whose ground truth holds this class
    int instances = 0;  // ground-truth boxes of this class
    int predictions = 0;
    double p = 0, r = 0, f1 = 0;  // at the confidence chosen by the mean F1
    double map50 = 0, map50_95 = 0;
    std::array<double, kIouThresholdCount> ap{};  // AP per IoU threshold
};

// Curves over the 1000-point grid linspace(0, 1, 1000): `confidence` curves index by confidence,
// `precision_at_recall` by recall (the PR curve at IoU 0.5). One row per entry of
// DetectionMetrics::classes; a class without predictions has rows of zeros.
struct DetectionCurves {
    std::vector<double> grid;
    std::vector<std::vector<double>> precision_at_conf, recall_at_conf, f1_at_conf;
    std::vector<std::vector<double>> precision_at_recall;
    std::vector<double> mean_f1_smoothed;
};

struct DetectionMetrics {
    int images = 0;
    int instances = 0;
    double precision = 0, recall = 0, map50 = 0, map50_95 = 0;
    double fitness = 0;  // 0.1·mAP50 + 0.9·mAP50-95
    int best_index = 0;  // grid index where P and R are read
    double best_confidence = 0;
    std::vector<ClassMetrics> classes;  // classes present in the ground truth, ascending
    DetectionCurves curves;
};

// One prediction as the dataset-wide computation sees it.
struct PredictionRecord {
    float conf = 0;
    int cls = 0;
    std::uint16_t tp = 0;  // bit t: true positive at threshold t
};

// Accumulates matched images; cheap to keep for a whole validation set (the boxes are not kept).
class DetectionStats {
  public:
    // Matches the image's predictions (sorted here by descending confidence, ties keeping the
    // given order) and stores the outcome. Tags are free-form (e.g. station=3).
    void add_image(const std::vector<GtBox>& gt, std::vector<PredBox> preds,
                   std::map<std::string, std::string> tags = {});

    std::size_t image_count() const { return images_.size(); }

    // Metrics over all images added so far.
    DetectionMetrics compute() const;
    // Metrics over the images whose tag `key` has each value. Images without that tag are
    // grouped under `missing_value` unless it is empty, in which case they are left out.
    std::map<std::string, DetectionMetrics> compute_by_tag(
        const std::string& key, const std::string& missing_value = "") const;

  private:
    struct ImageEntry {
        std::vector<int> gt_classes;
        std::vector<PredictionRecord> preds;
        std::map<std::string, std::string> tags;
    };
    DetectionMetrics compute_subset(const std::vector<const ImageEntry*>& subset) const;
    std::vector<ImageEntry> images_;
};

// The dataset-wide part on its own: predictions of all images (any order; a stable sort by
// descending confidence is applied), the ground-truth classes of all boxes, and for each class
// the number of images that hold it (optional; used only for the table).
DetectionMetrics compute_metrics(std::vector<PredictionRecord> preds,
                                 const std::vector<int>& gt_classes,
                                 const std::map<int, int>& images_per_class = {},
                                 int image_count = 0);

// Confusion matrix with a background row/column: rows are predicted classes, columns true
// classes, index `class_count` is background. Matching is class-agnostic: predictions with
// confidence > conf_threshold, pairs with IoU > iou_threshold, each prediction keeps its
// highest-IoU GT, then each GT its highest-IoU prediction. A matched pair counts at
// [pred class][gt class]; an unmatched GT at [background][gt class]; an unmatched prediction at
// [pred class][background]. Classes outside [0, class_count) are ignored.
// How one image's predictions met its ground truth in the confusion matrix's matching.
struct ImageMatch {
    // (predicted row, true column) per ground-truth box and per unmatched prediction; the
    // background is class_count.
    std::vector<std::pair<int, int>> cells;
    int true_positives = 0;   // matched, same class
    int false_positives = 0;  // predictions that matched nothing or a box of another class
    int misses = 0;           // boxes nothing matched, or a prediction of another class
    double mean_iou = 0;      // over the matched pairs (0 when none)
};

class ConfusionMatrix {
  public:
    explicit ConfusionMatrix(int class_count, double conf_threshold = 0.25,
                             double iou_threshold = 0.45);
    void add_image(const std::vector<GtBox>& gt, const std::vector<PredBox>& preds);
    // The matching add_image counts, for one image (drill-down from a cell to its images).
    ImageMatch match_image(const std::vector<GtBox>& gt, const std::vector<PredBox>& preds) const;
    int class_count() const { return class_count_; }
    double conf_threshold() const { return conf_threshold_; }
    double iou_threshold() const { return iou_threshold_; }
    // (class_count+1)² counts, row-major [pred][true].
    const std::vector<std::int64_t>& counts() const { return counts_; }
    std::int64_t at(int pred_row, int true_col) const;

  private:
    int class_count_;
    double conf_threshold_, iou_threshold_;
    std::vector<std::int64_t> counts_;
};

}  // namespace crucible::detect
