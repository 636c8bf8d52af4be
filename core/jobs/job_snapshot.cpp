#include "core/jobs/job_snapshot.h"

#include <cmath>
#include <fstream>

#include "core/base/event.h"
#include "core/base/job_folder.h"

namespace crucible::jobs {

namespace {

std::map<std::string, double> number_values(const Json& event) {
    std::map<std::string, double> out;
    const auto values = event.find("values");
    if (values == event.end() || !values->is_object()) return out;
    for (const auto& [name, value] : values->items())
        if (value.is_number() && std::isfinite(value.get<double>()))
            out[name] = value.get<double>();
    return out;
}

template <typename T>
std::optional<T> number_field(const Json& event, const char* name) {
    const auto it = event.find(name);
    if (it == event.end() || !it->is_number()) return std::nullopt;
    return it->get<T>();
}

}  // namespace

void visit_recent_events(const std::filesystem::path& events_file, std::size_t max_bytes,
                         const std::function<bool(const Json& event)>& visit) {
    std::ifstream in(events_file, std::ios::binary | std::ios::ate);
    if (!in) return;
    const std::streamoff size = in.tellg();
    const auto tail = static_cast<std::streamoff>(max_bytes);
    in.seekg(size > tail ? size - tail : 0);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::size_t end = text.size();
    while (end > 0) {
        const std::size_t start = text.rfind('\n', end - 1);
        const std::size_t from = start == std::string::npos ? 0 : start + 1;
        const Json event = Json::parse(text.substr(from, end - from), nullptr, false);
        if (event.is_object() && event.contains("kind") && !visit(event)) return;
        end = start == std::string::npos ? 0 : start;
    }
}

JobSnapshot latest_job_snapshot(const std::filesystem::path& job_dir) {
    JobSnapshot s;
    bool progress = false, metric = false, eval = false;
    visit_recent_events(JobFolder{job_dir}.events(), JobSnapshot::kTailBytes, [&](const Json& e) {
        const std::string kind = e.value("kind", "");
        if (kind == event_kind::kProgress && !progress) {
            progress = true;
            s.step = number_field<std::int64_t>(e, "step");
            s.total_steps = number_field<std::int64_t>(e, "total_steps");
            s.epoch = number_field<int>(e, "epoch");
            s.epochs = number_field<int>(e, "epochs");
            s.items_per_s = number_field<double>(e, "items_per_s");
            s.eta_s = number_field<double>(e, "eta_s");
        } else if (kind == event_kind::kMetric && !metric) {
            metric = true;
            s.train = number_values(e);
            if (!s.step) s.step = number_field<std::int64_t>(e, "step");
        } else if (kind == event_kind::kEval && !eval) {
            eval = true;
            s.eval = number_values(e);
        }
        return !(progress && metric && eval);
    });
    return s;
}

}  // namespace crucible::jobs
