#include "core/store/tidy_csv.h"

#include <cmath>
#include <cstdio>

#include "core/base/event.h"
#include "core/data/formats/yolo_labels.h"
#include "core/store/run_store.h"

namespace crucible::store {

namespace {

std::vector<RunInfo> chosen_runs(Project& project, const std::vector<std::int64_t>& run_ids) {
    if (run_ids.empty()) return list_runs(project);
    std::vector<RunInfo> runs;
    for (auto id : run_ids)
        runs.push_back(get_run(project, id));
    return runs;
}

std::string integer_field(std::int64_t value) {
    return value < 0 ? std::string() : std::to_string(value);
}

// A whole-number field of an event or row as a cell ("" when missing or of another type: the
// events come from workers and agents, and a table is no place to fail).
std::string integer_cell(const Json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_number_integer() ? integer_field(it->get<std::int64_t>())
                                                         : std::string();
}

}  // namespace

std::string csv_text_field(const std::string& text) {
    std::string value = text;
    if (!value.empty() && (value[0] == '=' || value[0] == '+' || value[0] == '-' ||
                           value[0] == '@' || value[0] == '\t' || value[0] == '\r'))
        value.insert(value.begin(), '\'');
    if (value.find_first_of(",\"\r\n") == std::string::npos) return value;
    std::string out = "\"";
    for (char c : value) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + '"';
}

std::string csv_number(double value) {
    if (std::isnan(value)) return "";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    return data::format_number(value);  // the shortest text that reads back exactly
}

std::string tidy_metrics_csv(Project& project, std::vector<std::int64_t> run_ids) {
    std::string out = "run_id,run,task,metric,step,epoch,time,value\n";
    for (const auto& run : chosen_runs(project, run_ids)) {
        const std::string head = std::to_string(run.id) + "," + csv_text_field(run.setup.name) +
                                 "," + csv_text_field(run.setup.task) + ",";
        for (const auto& [metric, s] : read_series(project, run.id)) {
            const std::string name = csv_text_field(metric);
            char time[32];
            for (std::size_t i = 0; i < s.size(); ++i) {
                std::snprintf(time, sizeof time, "%.3f", s.t[i]);
                out += head + name + "," + integer_field(s.step[i]) + "," +
                       integer_field(s.epoch[i]) + "," + time + "," + csv_number(s.value[i]) + "\n";
            }
        }
    }
    return out;
}

std::string tidy_per_class_csv(Project& project, std::vector<std::int64_t> run_ids) {
    std::string out = "run_id,run,epoch,step,class,name,metric,value\n";
    for (const auto& run : chosen_runs(project, run_ids)) {
        const std::string head =
            std::to_string(run.id) + "," + csv_text_field(run.setup.name) + ",";
        for (const auto& e : drop_superseded(read_events(project, run.id))) {
            if (e.kind != event_kind::kEval) continue;
            const auto rows = e.fields.find("per_class");
            if (rows == e.fields.end() || !rows->is_array()) continue;
            const std::string when =
                integer_cell(e.fields, "epoch") + "," + integer_cell(e.fields, "step") + ",";
            for (const auto& row : *rows) {
                if (!row.is_object()) continue;
                const std::string cls = integer_cell(row, "class");
                const auto n = row.find("name");
                const std::string name =
                    n != row.end() && n->is_string() ? csv_text_field(n->get<std::string>()) : "";
                for (const auto& [metric, value] : row.items())
                    if (metric != "class" && metric != "name" && value.is_number())
                        out += head + when + cls + "," + name + "," + csv_text_field(metric) + "," +
                               csv_number(value.get<double>()) + "\n";
            }
        }
    }
    return out;
}

}  // namespace crucible::store
