#pragma once
// The Prometheus text exposition format (version 0.0.4), which Prometheus, Grafana Agent, cloud
// monitoring agents and Power BI connectors read: per metric family a `# HELP` and a `# TYPE`
// line, then one `name{label="value",...} number` line per sample. Label values are escaped
// (backslash, double quote, line feed); numbers are written so they read back exactly (NaN,
// +Inf and -Inf by name).
#include <string>
#include <utility>
#include <vector>

namespace crucible {

using PrometheusLabels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
  public:
    // Starts a family; its samples must follow before the next family starts. `type` is
    // "gauge" or "counter".
    void family(const std::string& name, const std::string& type, const std::string& help);
    // One sample of the current family (`name` is the family's).
    void sample(const std::string& name, const PrometheusLabels& labels, double value);
    const std::string& text() const { return text_; }

    // The media type of a scrape answer.
    static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

  private:
    std::string text_;
};

std::string prometheus_label_value(const std::string& value);
std::string prometheus_number(double value);

}  // namespace crucible
