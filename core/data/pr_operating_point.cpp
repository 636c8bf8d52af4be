#include "core/data/pr_operating_point.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace crucible::data {

ClassCounts class_counts(const ImageOutcome& image, int cls, double conf) {
    ClassCounts c;
    for (const auto& p : image.predictions)
        if (p.box.cls == cls && p.conf >= conf)
            ++(p.true_at_50 ? c.true_positives : c.false_positives);
    const auto truths =
        static_cast<int>(std::count(image.truth_classes.begin(), image.truth_classes.end(), cls));
    c.misses = std::max(truths - c.true_positives, 0);
    return c;
}

double OperatingPoint::precision() const {
    return counts.found() == 0 ? 1.0 : static_cast<double>(counts.true_positives) / counts.found();
}

double OperatingPoint::recall() const {
    return instances == 0 ? 0.0 : static_cast<double>(counts.true_positives) / instances;
}

OperatingPoint operating_point_at_conf(const PerImageReport& report, int cls, double conf) {
    OperatingPoint point;
    point.cls = cls;
    point.conf = conf;
    for (const auto& im : report.images) {
        const ClassCounts c = class_counts(im, cls, conf);
        point.counts.true_positives += c.true_positives;
        point.counts.false_positives += c.false_positives;
        point.counts.misses += c.misses;
        point.instances +=
            static_cast<int>(std::count(im.truth_classes.begin(), im.truth_classes.end(), cls));
    }
    return point;
}

OperatingPoint operating_point_at_recall(const PerImageReport& report, int cls, double recall) {
    struct Scored {
        double conf;
        bool tp;
    };
    std::vector<Scored> scored;
    int instances = 0;
    for (const auto& im : report.images) {
        for (const auto& p : im.predictions)
            if (p.box.cls == cls) scored.push_back({p.conf, p.true_at_50});
        instances +=
            static_cast<int>(std::count(im.truth_classes.begin(), im.truth_classes.end(), cls));
    }
    if (scored.empty()) return operating_point_at_conf(report, cls, 1.0);
    std::stable_sort(scored.begin(), scored.end(),
                     [](const Scored& a, const Scored& b) { return a.conf > b.conf; });
    // True positives needed: recall × instances, at least one (a small epsilon keeps 0.5 of 4
    // at 2 when the click's recall is 0.5000000001).
    const int needed =
        std::max(1, static_cast<int>(std::ceil(std::clamp(recall, 0.0, 1.0) * instances - 1e-9)));
    double conf = scored.back().conf;
    int found = 0;
    for (const auto& s : scored)
        if ((found += s.tp) >= needed) {
            conf = s.conf;
            break;
        }
    return operating_point_at_conf(report, cls, conf);
}

}  // namespace crucible::data
