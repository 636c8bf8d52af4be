// Detection metrics (see detection_metrics.h). Written from SPECS.md "mAP as Ultralytics computes
// it". Where the reference's numeric library fixes an order of operations (interpolation, array
// sums) the same order is used here, so that results agree to the last few bits, not only to 1e-6.
#include "plugins/detect/metrics/detection_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace crucible::detect {
namespace {

constexpr double kEps = 1e-16;  // recall and F1 denominators
constexpr int kGridPoints = 1000;
constexpr int kApPoints = 101;

// Sum of a strided sequence as numpy's add.reduce computes it for float64: the first element,
// plus the pairwise sum of the rest (eight running sums for blocks of up to 128 values, halves
// added recursively above that).
double pairwise_sum(const double* a, std::size_t n, std::size_t stride) {
    if (n < 8) {
        double res = 0.;
        for (std::size_t i = 0; i < n; ++i)
            res += a[i * stride];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (std::size_t j = 0; j < 8; ++j)
            r[j] = a[j * stride];
        std::size_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (std::size_t j = 0; j < 8; ++j)
                r[j] += a[(i + j) * stride];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i)
            res += a[i * stride];
        return res;
    }
    std::size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2, stride) + pairwise_sum(a + n2 * stride, n - n2, stride);
}

double np_sum(const double* a, std::size_t n, std::size_t stride = 1) {
    if (n == 0) return 0.;
    return a[0] + pairwise_sum(a + stride, n - 1, stride);
}

double np_mean(const double* a, std::size_t n, std::size_t stride = 1) {
    return n == 0 ? 0. : np_sum(a, n, stride) / static_cast<double>(n);
}

// numpy.trapz(y, x).
double trapezoid(const std::vector<double>& y, const std::vector<double>& x) {
    if (y.size() < 2) return 0.;
    std::vector<double> parts(y.size() - 1);
    for (std::size_t i = 0; i + 1 < y.size(); ++i)
        parts[i] = (x[i + 1] - x[i]) * (y[i + 1] + y[i]) / 2.0;
    return np_sum(parts.data(), parts.size());
}

std::array<float, kIouThresholdCount> float_thresholds() {
    std::array<float, kIouThresholdCount> out{};
    for (int t = 0; t < kIouThresholdCount; ++t)
        out[static_cast<std::size_t>(t)] = static_cast<float>(iou_thresholds()[t]);
    return out;
}

float iou_single(float gx1, float gy1, float gx2, float gy2, float px1, float py1, float px2,
                 float py2) {
    const float iw = std::max(std::min(gx2, px2) - std::max(gx1, px1), 0.f);
    const float ih = std::max(std::min(gy2, py2) - std::max(gy1, py1), 0.f);
    const float inter = iw * ih;
    const float a1 = (gx2 - gx1) * (gy2 - gy1);
    const float a2 = (px2 - px1) * (py2 - py1);
    return inter / (a1 + a2 - inter + 1e-7f);
}

float iou_float(const GtBox& g, const PredBox& p) {
    return iou_single(static_cast<float>(g.x1), static_cast<float>(g.y1), static_cast<float>(g.x2),
                      static_cast<float>(g.y2), static_cast<float>(p.x1), static_cast<float>(p.y1),
                      static_cast<float>(p.x2), static_cast<float>(p.y2));
}

}  // namespace

const std::array<double, kIouThresholdCount>& iou_thresholds() {
    static const std::array<double, kIouThresholdCount> values = [] {
        std::array<double, kIouThresholdCount> v{};
        auto grid = linspace(0.5, 0.95, kIouThresholdCount);
        std::copy(grid.begin(), grid.end(), v.begin());
        return v;
    }();
    return values;
}

double box_iou(const GtBox& gt, const PredBox& pred) {
    return iou_float(gt, pred);
}

std::vector<std::uint16_t> match_predictions(const std::vector<GtBox>& gt,
                                             const std::vector<PredBox>& preds) {
    std::vector<std::uint16_t> result(preds.size(), 0);
    if (gt.empty() || preds.empty()) return result;
    // The IoU matrix is held in single precision and compared with single-precision thresholds,
    // as the reference's validator does (its IoU tensor is float32).
    static const auto thresholds = float_thresholds();
    // Stage 1 does not depend on the threshold: a prediction's candidate pairs at any threshold
    // are those of its GTs with IoU ≥ threshold, so its best pair is its overall best GT when
    // that IoU reaches the threshold, and no pair otherwise.
    std::vector<int> best_gt(preds.size(), -1);
    std::vector<float> best_iou(preds.size(), 0.f);
    for (std::size_t p = 0; p < preds.size(); ++p) {
        for (std::size_t g = 0; g < gt.size(); ++g) {
            if (gt[g].cls != preds[p].cls) continue;  // zeroed: never a candidate (thresholds > 0)
            const float iou = iou_float(gt[g], preds[p]);
            // `>=`: on equal IoU the later GT wins, as the reference's descending order of the
            // candidate pairs (a reversed ascending sort of row-major pairs) puts it first.
            if (iou > 0.f && iou >= best_iou[p]) {
                best_iou[p] = iou;
                best_gt[p] = static_cast<int>(g);
            }
        }
    }
    // Stage 2: each GT keeps its earliest (most confident) prediction among the pairs left.
    std::vector<char> taken(gt.size());
    for (int t = 0; t < kIouThresholdCount; ++t) {
        std::fill(taken.begin(), taken.end(), 0);
        const float thr = thresholds[static_cast<std::size_t>(t)];
        for (std::size_t p = 0; p < preds.size(); ++p) {
            if (best_gt[p] < 0 || !(best_iou[p] >= thr)) continue;
            char& owner = taken[static_cast<std::size_t>(best_gt[p])];
            if (owner) continue;
            owner = 1;
            result[p] = static_cast<std::uint16_t>(result[p] | (1u << t));
        }
    }
    return result;
}

std::vector<double> linspace(double start, double stop, int count) {
    std::vector<double> out;
    if (count <= 0) return out;
    out.resize(static_cast<std::size_t>(count));
    if (count == 1) {
        out[0] = start;
        return out;
    }
    const double delta = stop - start;
    const double step = delta / static_cast<double>(count - 1);
    for (int i = 0; i < count; ++i)
        out[static_cast<std::size_t>(i)] = i * step + start;
    out.back() = stop;
    return out;
}

double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp, double left,
              double right) {
    const std::size_t n = xp.size();
    if (n == 0) return left;
    if (std::isnan(x)) return x;
    if (x > xp[n - 1]) return right;
    if (x < xp[0]) return left;
    // Last index j with xp[j] <= x.
    const std::size_t j =
        static_cast<std::size_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin()) - 1;
    if (j == n - 1) return fp[j];
    if (xp[j] == x) return fp[j];
    const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
    double res = slope * (x - xp[j]) + fp[j];
    if (std::isnan(res)) {
        res = slope * (x - xp[j + 1]) + fp[j + 1];
        if (std::isnan(res) && fp[j] == fp[j + 1]) res = fp[j];
    }
    return res;
}

std::vector<double> smooth(const std::vector<double>& y, double fraction) {
    if (y.empty()) return {};
    // Odd filter width: round(n·f·2) // 2 + 1 (round half to even, as the reference's round()).
    const double scaled = std::nearbyint(static_cast<double>(y.size()) * fraction * 2);
    const std::size_t width = static_cast<std::size_t>(scaled) / 2 + 1;
    const std::size_t pad = width / 2;
    std::vector<double> padded;
    padded.reserve(y.size() + 2 * pad);
    padded.insert(padded.end(), pad, y.front());
    padded.insert(padded.end(), y.begin(), y.end());
    padded.insert(padded.end(), pad, y.back());
    const double weight = 1.0 / static_cast<double>(width);
    const std::size_t out_size = padded.size() >= width ? padded.size() - width + 1 : 0;
    std::vector<double> out(out_size);
    for (std::size_t k = 0; k < out_size; ++k) {
        double s = 0;
        for (std::size_t m = 0; m < width; ++m)
            s += padded[k + m] * weight;
        out[k] = s;
    }
    return out;
}

double average_precision(const std::vector<double>& recall, const std::vector<double>& precision,
                         const std::vector<double>* envelope_at,
                         std::vector<double>* envelope_values) {
    std::vector<double> mrec;
    std::vector<double> mpre;
    mrec.reserve(recall.size() + 2);
    mpre.reserve(precision.size() + 2);
    mrec.push_back(0.0);
    mrec.insert(mrec.end(), recall.begin(), recall.end());
    mrec.push_back(1.0);
    mpre.push_back(1.0);
    mpre.insert(mpre.end(), precision.begin(), precision.end());
    mpre.push_back(0.0);
    for (std::size_t i = mpre.size() - 1; i-- > 0;)
        mpre[i] = std::max(mpre[i], mpre[i + 1]);
    static const std::vector<double> x = linspace(0, 1, kApPoints);
    std::vector<double> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        y[i] = interp(x[i], mrec, mpre, mpre.front(), mpre.back());
    if (envelope_at && envelope_values) {
        envelope_values->resize(envelope_at->size());
        for (std::size_t i = 0; i < envelope_at->size(); ++i)
            (*envelope_values)[i] =
                interp((*envelope_at)[i], mrec, mpre, mpre.front(), mpre.back());
    }
    return trapezoid(y, x);
}

DetectionMetrics compute_metrics(std::vector<PredictionRecord> preds,
                                 const std::vector<int>& gt_classes,
                                 const std::map<int, int>& images_per_class, int image_count) {
    DetectionMetrics m;
    m.images = image_count;
    m.instances = static_cast<int>(gt_classes.size());
    std::stable_sort(
        preds.begin(), preds.end(),
        [](const PredictionRecord& a, const PredictionRecord& b) { return a.conf > b.conf; });
    std::map<int, int> instances;
    for (int c : gt_classes)
        ++instances[c];

    const std::vector<double> grid = linspace(0, 1, kGridPoints);
    std::vector<double> neg_grid(grid.size());
    for (std::size_t i = 0; i < grid.size(); ++i)
        neg_grid[i] = -grid[i];
    m.curves.grid = grid;
    const std::size_t nc = instances.size();
    const std::vector<double> zeros(grid.size(), 0.0);
    m.curves.precision_at_conf.assign(nc, zeros);
    m.curves.recall_at_conf.assign(nc, zeros);
    m.curves.f1_at_conf.assign(nc, zeros);
    m.curves.precision_at_recall.assign(nc, zeros);

    std::size_t ci = 0;
    for (const auto& [cls, n_l] : instances) {
        ClassMetrics cm;
        cm.cls = cls;
        cm.instances = n_l;
        if (auto it = images_per_class.find(cls); it != images_per_class.end())
            cm.images = it->second;
        std::vector<double> neg_conf;
        std::vector<std::uint16_t> tp;
        for (const auto& p : preds) {
            if (p.cls != cls) continue;
            neg_conf.push_back(-static_cast<double>(p.conf));
            tp.push_back(p.tp);
        }
        cm.predictions = static_cast<int>(tp.size());
        if (!tp.empty() && n_l > 0) {
            const std::size_t n_p = tp.size();
            std::vector<double> recall(n_p), precision(n_p);
            for (int t = 0; t < kIouThresholdCount; ++t) {
                double tpc = 0, fpc = 0;
                for (std::size_t k = 0; k < n_p; ++k) {
                    if (tp[k] & (1u << t))
                        tpc += 1;
                    else
                        fpc += 1;
                    recall[k] = tpc / (static_cast<double>(n_l) + kEps);
                    precision[k] = tpc / (tpc + fpc);
                }
                if (t == 0) {
                    auto& rc = m.curves.recall_at_conf[ci];
                    auto& pc = m.curves.precision_at_conf[ci];
                    for (std::size_t g = 0; g < grid.size(); ++g) {
                        rc[g] = interp(neg_grid[g], neg_conf, recall, 0.0, recall.back());
                        pc[g] = interp(neg_grid[g], neg_conf, precision, 1.0, precision.back());
                    }
                    cm.ap[0] = average_precision(recall, precision, &grid,
                                                 &m.curves.precision_at_recall[ci]);
                } else {
                    cm.ap[static_cast<std::size_t>(t)] = average_precision(recall, precision);
                }
            }
        }
        auto& f1 = m.curves.f1_at_conf[ci];
        const auto& pc = m.curves.precision_at_conf[ci];
        const auto& rc = m.curves.recall_at_conf[ci];
        for (std::size_t g = 0; g < grid.size(); ++g)
            f1[g] = 2 * pc[g] * rc[g] / (pc[g] + rc[g] + kEps);
        cm.map50 = cm.ap[0];
        cm.map50_95 = np_mean(cm.ap.data(), cm.ap.size());
        m.classes.push_back(cm);
        ++ci;
    }
    if (nc == 0) return m;

    // Mean F1 over classes (rows added in order, as a reduction over the leading axis does).
    std::vector<double> mean_f1(grid.size(), 0.0);
    for (std::size_t g = 0; g < grid.size(); ++g) {
        double s = m.curves.f1_at_conf[0][g];
        for (std::size_t c = 1; c < nc; ++c)
            s += m.curves.f1_at_conf[c][g];
        mean_f1[g] = s / static_cast<double>(nc);
    }
    m.curves.mean_f1_smoothed = smooth(mean_f1, 0.1);
    const auto& sm = m.curves.mean_f1_smoothed;
    m.best_index = static_cast<int>(std::max_element(sm.begin(), sm.end()) - sm.begin());
    m.best_confidence = grid[static_cast<std::size_t>(m.best_index)];

    std::vector<double> p(nc), r(nc), ap_all(nc * kIouThresholdCount);
    for (std::size_t c = 0; c < nc; ++c) {
        auto& cm = m.classes[c];
        const auto b = static_cast<std::size_t>(m.best_index);
        cm.p = m.curves.precision_at_conf[c][b];
        cm.r = m.curves.recall_at_conf[c][b];
        cm.f1 = m.curves.f1_at_conf[c][b];
        p[c] = cm.p;
        r[c] = cm.r;
        std::copy(cm.ap.begin(), cm.ap.end(),
                  ap_all.begin() + static_cast<long>(c) * kIouThresholdCount);
    }
    m.precision = np_mean(p.data(), nc);
    m.recall = np_mean(r.data(), nc);
    m.map50 = np_mean(ap_all.data(), nc, kIouThresholdCount);
    m.map50_95 = np_mean(ap_all.data(), ap_all.size());
    const double weighted[4] = {0.0 * m.precision, 0.0 * m.recall, 0.1 * m.map50, 0.9 * m.map50_95};
    m.fitness = np_sum(weighted, 4);
    return m;
}

std::vector<std::uint16_t> match_predictions_in_any_order(const std::vector<GtBox>& gt,
                                                          const std::vector<PredBox>& preds) {
    std::vector<std::size_t> order(preds.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return preds[a].conf > preds[b].conf; });
    std::vector<PredBox> sorted;
    sorted.reserve(preds.size());
    for (const auto i : order)
        sorted.push_back(preds[i]);
    const auto tp = match_predictions(gt, sorted);
    std::vector<std::uint16_t> result(preds.size());
    for (std::size_t k = 0; k < order.size(); ++k)
        result[order[k]] = tp[k];
    return result;
}

void DetectionStats::add_image(const std::vector<GtBox>& gt, std::vector<PredBox> preds,
                               std::map<std::string, std::string> tags) {
    std::stable_sort(preds.begin(), preds.end(),
                     [](const PredBox& a, const PredBox& b) { return a.conf > b.conf; });
    const auto tp = match_predictions(gt, preds);
    ImageEntry entry;
    entry.gt_classes.reserve(gt.size());
    for (const auto& g : gt)
        entry.gt_classes.push_back(g.cls);
    entry.preds.reserve(preds.size());
    for (std::size_t i = 0; i < preds.size(); ++i)
        entry.preds.push_back({preds[i].conf, preds[i].cls, tp[i]});
    entry.tags = std::move(tags);
    images_.push_back(std::move(entry));
}

DetectionMetrics DetectionStats::compute_subset(
    const std::vector<const ImageEntry*>& subset) const {
    std::vector<PredictionRecord> preds;
    std::vector<int> gt_classes;
    std::map<int, int> images_per_class;
    for (const ImageEntry* e : subset) {
        preds.insert(preds.end(), e->preds.begin(), e->preds.end());
        gt_classes.insert(gt_classes.end(), e->gt_classes.begin(), e->gt_classes.end());
        std::vector<int> present = e->gt_classes;
        std::sort(present.begin(), present.end());
        present.erase(std::unique(present.begin(), present.end()), present.end());
        for (int c : present)
            ++images_per_class[c];
    }
    return compute_metrics(std::move(preds), gt_classes, images_per_class,
                           static_cast<int>(subset.size()));
}

DetectionMetrics DetectionStats::compute() const {
    std::vector<const ImageEntry*> all;
    all.reserve(images_.size());
    for (const auto& e : images_)
        all.push_back(&e);
    return compute_subset(all);
}

std::map<std::string, DetectionMetrics> DetectionStats::compute_by_tag(
    const std::string& key, const std::string& missing_value) const {
    std::map<std::string, std::vector<const ImageEntry*>> groups;
    for (const auto& e : images_) {
        auto it = e.tags.find(key);
        if (it != e.tags.end())
            groups[it->second].push_back(&e);
        else if (!missing_value.empty())
            groups[missing_value].push_back(&e);
    }
    std::map<std::string, DetectionMetrics> out;
    for (const auto& [value, subset] : groups)
        out.emplace(value, compute_subset(subset));
    return out;
}

ConfusionMatrix::ConfusionMatrix(int class_count, double conf_threshold, double iou_threshold)
    : class_count_(std::max(class_count, 0)),
      conf_threshold_(conf_threshold),
      iou_threshold_(iou_threshold),
      counts_(
          static_cast<std::size_t>(class_count_ + 1) * static_cast<std::size_t>(class_count_ + 1),
          0) {}

std::int64_t ConfusionMatrix::at(int pred_row, int true_col) const {
    if (pred_row < 0 || true_col < 0 || pred_row > class_count_ || true_col > class_count_)
        return 0;
    return counts_[static_cast<std::size_t>(pred_row) * static_cast<std::size_t>(class_count_ + 1) +
                   static_cast<std::size_t>(true_col)];
}

void ConfusionMatrix::add_image(const std::vector<GtBox>& gt, const std::vector<PredBox>& preds) {
    for (const auto& [row, col] : match_image(gt, preds).cells)
        counts_[static_cast<std::size_t>(row) * static_cast<std::size_t>(class_count_ + 1) +
                static_cast<std::size_t>(col)] += 1;
}

ImageMatch ConfusionMatrix::match_image(const std::vector<GtBox>& gt_all,
                                        const std::vector<PredBox>& preds_all) const {
    ImageMatch out;
    const int bg = class_count_;
    auto in_range = [&](int c) { return c >= 0 && c < class_count_; };
    std::vector<GtBox> gt;
    for (const auto& g : gt_all)
        if (in_range(g.cls)) gt.push_back(g);
    std::vector<PredBox> preds;
    for (const auto& p : preds_all)
        if (in_range(p.cls) && p.conf > conf_threshold_) preds.push_back(p);

    const float iou_thr = static_cast<float>(iou_threshold_);
    // Each prediction keeps its highest-IoU GT (IoU > threshold; on equal IoU the later GT).
    std::vector<int> pred_gt(preds.size(), -1);
    std::vector<float> pred_iou(preds.size(), 0.f);
    for (std::size_t p = 0; p < preds.size(); ++p)
        for (std::size_t g = 0; g < gt.size(); ++g) {
            const float iou = iou_float(gt[g], preds[p]);
            if (iou > iou_thr && iou >= pred_iou[p]) {
                pred_iou[p] = iou;
                pred_gt[p] = static_cast<int>(g);
            }
        }
    // Then each GT keeps its highest-IoU prediction among those (on equal IoU the later one).
    std::vector<int> gt_pred(gt.size(), -1);
    std::vector<float> gt_iou(gt.size(), 0.f);
    for (std::size_t p = 0; p < preds.size(); ++p) {
        if (pred_gt[p] < 0) continue;
        const auto g = static_cast<std::size_t>(pred_gt[p]);
        if (gt_pred[g] < 0 || pred_iou[p] >= gt_iou[g]) {
            gt_pred[g] = static_cast<int>(p);
            gt_iou[g] = pred_iou[p];
        }
    }
    std::vector<char> pred_matched(preds.size(), 0);
    double iou_sum = 0;
    int matched = 0;
    for (std::size_t g = 0; g < gt.size(); ++g) {
        if (gt_pred[g] >= 0) {
            const auto p = static_cast<std::size_t>(gt_pred[g]);
            pred_matched[p] = 1;
            out.cells.emplace_back(preds[p].cls, gt[g].cls);
            iou_sum += gt_iou[g];
            ++matched;
            if (preds[p].cls == gt[g].cls) {
                ++out.true_positives;
            } else {
                ++out.false_positives;
                ++out.misses;
            }
        } else {
            out.cells.emplace_back(bg, gt[g].cls);
            ++out.misses;
        }
    }
    for (std::size_t p = 0; p < preds.size(); ++p)
        if (!pred_matched[p]) {
            out.cells.emplace_back(preds[p].cls, bg);
            ++out.false_positives;
        }
    out.mean_iou = matched > 0 ? iou_sum / matched : 0;
    return out;
}

}  // namespace crucible::detect
