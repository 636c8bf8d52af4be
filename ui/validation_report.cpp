#include "ui/validation_report.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/base/error.h"

namespace crucible::ui {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A number, or NaN for null (how a NaN is written in JSON); anything else is an error.
double number(const Json& value, const std::string& where) {
    if (value.is_null()) return kNaN;
    if (!value.is_number()) throw InputError(where, "expected a number");
    return value.get<double>();
}

double field(const Json& object, const char* name, const std::string& where) {
    auto it = object.find(name);
    if (it == object.end()) throw InputError(where + "." + name, "missing");
    return number(*it, where + "." + name);
}

std::vector<double> numbers(const Json& array, const std::string& where) {
    if (!array.is_array()) throw InputError(where, "expected an array of numbers");
    std::vector<double> out;
    out.reserve(array.size());
    for (std::size_t i = 0; i < array.size(); ++i)
        out.push_back(number(array[i], where + "[" + std::to_string(i) + "]"));
    return out;
}

QString name_of(const Json& object, int cls, const QStringList& names) {
    auto it = object.find("name");
    if (it != object.end() && it->is_string())
        return QString::fromStdString(it->get<std::string>());
    if (cls >= 0 && cls < names.size()) return names[cls];
    return QString::number(cls);
}

int class_of(const Json& object, const std::string& where) {
    auto it = object.find("class");
    if (it == object.end() || !it->is_number_integer())
        throw InputError(where + ".class", "expected a class number");
    return it->get<int>();
}

}  // namespace

std::vector<ClassMetricsRow> parse_per_class(const Json& rows, const QStringList& names) {
    if (!rows.is_array()) throw InputError("per_class", "expected an array of rows");
    std::vector<ClassMetricsRow> out;
    out.reserve(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string where = "per_class[" + std::to_string(i) + "]";
        const Json& row = rows[i];
        if (!row.is_object()) throw InputError(where, "expected an object");
        ClassMetricsRow r;
        r.cls = class_of(row, where);
        r.name = name_of(row, r.cls, names);
        r.images = field(row, "images", where);
        r.instances = field(row, "instances", where);
        r.p = field(row, "p", where);
        r.r = field(row, "r", where);
        r.map50 = field(row, "map50", where);
        r.map50_95 = field(row, "map50_95", where);
        out.push_back(std::move(r));
    }
    return out;
}

std::vector<std::vector<double>> ConfusionData::normalized() const {
    auto out = counts;
    const std::size_t n = counts.size();
    for (std::size_t t = 0; t < n; ++t) {
        double total = 0;
        for (std::size_t p = 0; p < n; ++p)
            if (std::isfinite(counts[p][t])) total += counts[p][t];
        for (std::size_t p = 0; p < n; ++p)
            out[p][t] = total > 0 ? counts[p][t] / total : 0.0;
    }
    return out;
}

ConfusionData parse_confusion(const Json& confusion) {
    const std::string where = "confusion_matrix";
    if (!confusion.is_object()) throw InputError(where, "expected an object");
    ConfusionData out;
    auto names = confusion.find("names");
    if (names == confusion.end() || !names->is_array())
        throw InputError(where + ".names", "expected an array of class names");
    for (const auto& n : *names)
        out.names << (n.is_string() ? QString::fromStdString(n.get<std::string>())
                                    : QString::fromStdString(n.dump()));
    auto matrix = confusion.find("matrix");
    if (matrix == confusion.end() || !matrix->is_array())
        throw InputError(where + ".matrix", "expected rows of numbers");
    const std::size_t n = out.names.size();
    if (matrix->size() != n)
        throw InputError(where + ".matrix", std::to_string(matrix->size()) + " rows for " +
                                                std::to_string(n) + " names");
    for (std::size_t r = 0; r < n; ++r) {
        const std::string at = where + ".matrix[" + std::to_string(r) + "]";
        auto row = numbers((*matrix)[r], at);
        if (row.size() != n)
            throw InputError(
                at, std::to_string(row.size()) + " values for " + std::to_string(n) + " names");
        out.counts.push_back(std::move(row));
    }
    if (auto c = confusion.find("conf"); c != confusion.end())
        out.conf = number(*c, where + ".conf");
    if (auto c = confusion.find("iou"); c != confusion.end()) out.iou = number(*c, where + ".iou");
    return out;
}

std::vector<double> PrCurves::mean_precision() const {
    std::vector<double> out(recall.size(), kNaN);
    for (std::size_t i = 0; i < recall.size(); ++i) {
        double sum = 0;
        int count = 0;
        for (const auto& c : classes)
            if (i < c.precision.size() && std::isfinite(c.precision[i])) {
                sum += c.precision[i];
                ++count;
            }
        if (count > 0) out[i] = sum / count;
    }
    return out;
}

PrCurves parse_pr_curves(const Json& pr_curve) {
    const std::string where = "pr_curve";
    if (!pr_curve.is_object()) throw InputError(where, "expected an object");
    PrCurves out;
    auto recall = pr_curve.find("recall");
    if (recall == pr_curve.end()) throw InputError(where + ".recall", "missing");
    out.recall = numbers(*recall, where + ".recall");
    auto classes = pr_curve.find("classes");
    if (classes == pr_curve.end() || !classes->is_array())
        throw InputError(where + ".classes", "expected an array of curves");
    for (std::size_t i = 0; i < classes->size(); ++i) {
        const std::string at = where + ".classes[" + std::to_string(i) + "]";
        const Json& c = (*classes)[i];
        if (!c.is_object()) throw InputError(at, "expected an object");
        PrCurve curve;
        curve.cls = class_of(c, at);
        curve.name = name_of(c, curve.cls, {});
        auto precision = c.find("precision");
        if (precision == c.end()) throw InputError(at + ".precision", "missing");
        curve.precision = numbers(*precision, at + ".precision");
        if (curve.precision.size() != out.recall.size())
            throw InputError(at + ".precision",
                             std::to_string(curve.precision.size()) + " points for " +
                                 std::to_string(out.recall.size()) + " recall values");
        out.classes.push_back(std::move(curve));
    }
    return out;
}

ValidationData parse_validation_report(const Json& report) {
    if (!report.is_object()) throw InputError("validation report", "expected a JSON object");
    ValidationData out;
    if (auto c = report.find("confusion_matrix"); c != report.end() && !c->is_null())
        out.confusion = parse_confusion(*c);
    if (auto c = report.find("pr_curve"); c != report.end() && !c->is_null())
        out.curves = parse_pr_curves(*c);
    if (auto c = report.find("per_class"); c != report.end() && !c->is_null()) {
        QStringList names;
        if (out.confusion) names = out.confusion->names;
        out.per_class = parse_per_class(*c, names);
    }
    return out;
}

double curve_area(const std::vector<double>& recall, const std::vector<double>& precision) {
    double area = 0;
    bool have = false;
    double x0 = 0, y0 = 0;
    for (std::size_t i = 0; i < recall.size() && i < precision.size(); ++i) {
        if (!std::isfinite(recall[i]) || !std::isfinite(precision[i])) continue;
        if (have) area += (recall[i] - x0) * (precision[i] + y0) / 2;
        x0 = recall[i];
        y0 = precision[i];
        have = true;
    }
    return area;
}

}  // namespace crucible::ui
