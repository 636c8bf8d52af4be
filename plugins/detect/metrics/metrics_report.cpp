#include "plugins/detect/metrics/metrics_report.h"

#include <cstdio>

namespace crucible::detect {

std::string class_display_name(const std::vector<std::string>& class_names, int cls) {
    if (cls >= 0 && static_cast<std::size_t>(cls) < class_names.size())
        return class_names[static_cast<std::size_t>(cls)];
    return std::to_string(cls);
}

Json metric_values_json(const DetectionMetrics& m) {
    Json out = Json::object();
    out["metrics/precision(B)"] = m.precision;
    out["metrics/recall(B)"] = m.recall;
    out["metrics/mAP50(B)"] = m.map50;
    out["metrics/mAP50-95(B)"] = m.map50_95;
    return out;
}

Json per_class_json(const DetectionMetrics& m, const std::vector<std::string>& class_names) {
    Json rows = Json::array();
    for (const auto& c : m.classes) {
        rows.push_back({{"class", c.cls},
                        {"name", class_display_name(class_names, c.cls)},
                        {"images", c.images},
                        {"instances", c.instances},
                        {"p", c.p},
                        {"r", c.r},
                        {"map50", c.map50},
                        {"map50_95", c.map50_95}});
    }
    return rows;
}

Json metrics_json(const DetectionMetrics& m, const std::vector<std::string>& class_names) {
    Json out = metric_values_json(m);
    out["fitness"] = m.fitness;
    out["images"] = m.images;
    out["instances"] = m.instances;
    out["best_confidence"] = m.best_confidence;
    out["per_class"] = per_class_json(m, class_names);
    return out;
}

Json confusion_matrix_json(const ConfusionMatrix& cm, const std::vector<std::string>& class_names) {
    Json names = Json::array();
    for (int c = 0; c < cm.class_count(); ++c)
        names.push_back(class_display_name(class_names, c));
    names.push_back("background");
    Json rows = Json::array();
    for (int r = 0; r <= cm.class_count(); ++r) {
        Json row = Json::array();
        for (int c = 0; c <= cm.class_count(); ++c)
            row.push_back(cm.at(r, c));
        rows.push_back(std::move(row));
    }
    return {{"names", names}, {"rows", "predicted"},         {"columns", "true"},
            {"matrix", rows}, {"conf", cm.conf_threshold()}, {"iou", cm.iou_threshold()}};
}

Json pr_curve_json(const DetectionMetrics& m, const std::vector<std::string>& class_names) {
    Json classes = Json::array();
    for (std::size_t i = 0; i < m.classes.size(); ++i) {
        classes.push_back({{"class", m.classes[i].cls},
                           {"name", class_display_name(class_names, m.classes[i].cls)},
                           {"precision", m.curves.precision_at_recall[i]}});
    }
    return {{"recall", m.curves.grid}, {"classes", classes}};
}

namespace {

// printf's %.3g as the reference's '%11.3g'.
std::string row(const std::string& name, long long images, long long instances, double p, double r,
                double map50, double map) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%22s%11lld%11lld%11.3g%11.3g%11.3g%11.3g\n", name.c_str(),
                  images, instances, p, r, map50, map);
    return buf;
}

}  // namespace

std::string results_table(const DetectionMetrics& m, const std::vector<std::string>& class_names,
                          bool per_class) {
    char header[256];
    std::snprintf(header, sizeof header, "%22s%11s%11s%11s%11s%11s%11s\n", "Class", "Images",
                  "Instances", "Box(P", "R", "mAP50", "mAP50-95)");
    std::string out = header;
    out += row("all", m.images, m.instances, m.precision, m.recall, m.map50, m.map50_95);
    if (per_class)
        for (const auto& c : m.classes)
            out += row(class_display_name(class_names, c.cls), c.images, c.instances, c.p, c.r,
                       c.map50, c.map50_95);
    return out;
}

Json validation_json(const ValidationReport& report, bool curves) {
    Json out = metrics_json(report.metrics, report.class_names);
    out["confusion_matrix"] = confusion_matrix_json(report.confusion, report.class_names);
    if (!report.tag_key.empty()) {
        Json values = Json::object();
        for (const auto& [value, m] : report.by_tag)
            values[value] = metrics_json(m, report.class_names);
        out["by_tag"] = Json{{report.tag_key, values}};
    }
    if (curves) out["pr_curve"] = pr_curve_json(report.metrics, report.class_names);
    return out;
}

std::string validation_text(const ValidationReport& report) {
    std::string out = results_table(report.metrics, report.class_names);
    char line[160];
    std::snprintf(line, sizeof line,
                  "fitness %.6g (0.1·mAP50 + 0.9·mAP50-95); P and R at confidence %.3f\n",
                  report.metrics.fitness, report.metrics.best_confidence);
    out += line;
    for (const auto& [value, m] : report.by_tag) {
        out.append("\n").append(report.tag_key).append("=").append(value).append("\n");
        out += results_table(m, report.class_names, false);
    }
    if (!report.tag_key.empty() && report.by_tag.empty())
        out.append("\nno image has the tag '").append(report.tag_key).append("'\n");
    return out;
}

}  // namespace crucible::detect
