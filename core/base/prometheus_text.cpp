#include "core/base/prometheus_text.h"

#include <charconv>
#include <cmath>

namespace crucible {

std::string prometheus_label_value(const std::string& value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string prometheus_number(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, value).ptr;  // shortest exact form
    return std::string(text, end);
}

void PrometheusText::family(const std::string& name, const std::string& type,
                            const std::string& help) {
    std::string escaped_help;
    for (char c : help) {
        if (c == '\\')
            escaped_help += "\\\\";
        else if (c == '\n')
            escaped_help += "\\n";
        else
            escaped_help += c;
    }
    text_ += "# HELP " + name + " " + escaped_help + "\n# TYPE " + name + " " + type + "\n";
}

void PrometheusText::sample(const std::string& name, const PrometheusLabels& labels, double value) {
    text_ += name;
    if (!labels.empty()) {
        text_ += '{';
        for (std::size_t i = 0; i < labels.size(); ++i) {
            if (i) text_ += ',';
            text_ += labels[i].first + "=\"" + prometheus_label_value(labels[i].second) + '"';
        }
        text_ += '}';
    }
    text_ += ' ' + prometheus_number(value) + '\n';
}

}  // namespace crucible
