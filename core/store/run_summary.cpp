#include "core/store/run_summary.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "core/base/error.h"

namespace crucible::store {

namespace {

Json number_or_null(double v) {
    return std::isfinite(v) ? Json(v) : Json(nullptr);
}

double number_or_nan(const Json& j) {
    return j.is_number() ? j.get<double>() : MetricSummary::kNone;
}

// Stored as {"first_t", "last_t", "metrics": {name: [last, min, max, points, step, epoch]}}.
Json summary_to_json(const RunSummary& summary) {
    Json metrics = Json::object();
    for (const auto& [name, m] : summary.metrics)
        metrics[name] = Json::array({number_or_null(m.last), number_or_null(m.min),
                                     number_or_null(m.max), m.points, m.last_step, m.last_epoch});
    return {{"first_t", number_or_null(summary.first_t)},
            {"last_t", number_or_null(summary.last_t)},
            {"metrics", std::move(metrics)}};
}

// Fills `summary` from a stored row; false for a row this version cannot read (recomputed).
bool summary_from_json(const Json& j, RunSummary& summary) {
    if (!j.is_object() || !j.contains("metrics") || !j["metrics"].is_object()) return false;
    summary.first_t = number_or_nan(j.value("first_t", Json()));
    summary.last_t = number_or_nan(j.value("last_t", Json()));
    for (const auto& [name, row] : j["metrics"].items()) {
        if (!row.is_array() || row.size() != 6) return false;
        MetricSummary m;
        m.last = number_or_nan(row[0]);
        m.min = number_or_nan(row[1]);
        m.max = number_or_nan(row[2]);
        if (!row[3].is_number_integer() || !row[4].is_number_integer() ||
            !row[5].is_number_integer())
            return false;
        m.points = row[3].get<std::int64_t>();
        m.last_step = row[4].get<std::int64_t>();
        m.last_epoch = row[5].get<std::int64_t>();
        summary.metrics.emplace(name, m);
    }
    return true;
}

std::optional<double> event_time(Project& project, std::int64_t run_id, const char* order) {
    auto s = project.db().prepare(std::string("SELECT t FROM run_events WHERE run_id = ? ORDER BY "
                                              "seq ") +
                                  order + " LIMIT 1");
    s.bind(1, run_id);
    if (!s.step()) return std::nullopt;
    return s.column_double(0);
}

void flatten_into(const Json& value, const std::string& prefix, std::map<std::string, Json>& out) {
    if (value.is_object() && !value.empty()) {
        for (const auto& [key, child] : value.items())
            flatten_into(child, prefix.empty() ? key : prefix + "." + key, out);
        return;
    }
    if (!prefix.empty()) out[prefix] = value;
}

}  // namespace

bool lower_is_better(std::string_view metric) {
    return metric.find("loss") != std::string_view::npos;
}

double best_value(std::string_view metric, const MetricSummary& summary) {
    return lower_is_better(metric) ? summary.min : summary.max;
}

RunSummary summarize_run(Project& project, const RunInfo& run) {
    RunSummary out;
    out.info = run;
    out.first_t = event_time(project, run.id, "ASC").value_or(MetricSummary::kNone);
    out.last_t = event_time(project, run.id, "DESC").value_or(MetricSummary::kNone);
    for (const auto& [name, series] : read_series(project, run.id)) {
        MetricSummary m;
        for (std::size_t i = 0; i < series.size(); ++i) {
            const double v = series.value[i];
            if (!std::isfinite(v)) continue;
            ++m.points;
            m.last = v;
            m.last_step = series.step[i];
            m.last_epoch = series.epoch[i];
            m.min = std::isnan(m.min) ? v : std::min(m.min, v);
            m.max = std::isnan(m.max) ? v : std::max(m.max, v);
        }
        out.metrics.emplace(name, m);
    }
    return out;
}

std::vector<RunSummary> summarize_runs(Project& project) {
    struct Stored {
        std::int64_t seq;
        std::string text;
    };
    std::unordered_map<std::int64_t, Stored> stored;
    {
        auto s = project.db().prepare("SELECT run_id, seq, summary FROM run_summaries");
        while (s.step())
            stored[s.column_int64(0)] = {s.column_int64(1), s.column_text(2)};
    }
    std::vector<RunSummary> out;
    std::vector<std::size_t> recomputed;
    for (auto& run : list_runs(project)) {
        RunSummary summary;
        summary.info = run;
        auto it = stored.find(run.id);
        bool fresh = it != stored.end() && it->second.seq == run.last_seq;
        if (fresh) {
            // A row that does not parse is computed again, never shown half-read.
            const Json j = Json::parse(it->second.text, nullptr, false);
            fresh = !j.is_discarded() && summary_from_json(j, summary);
        }
        if (!fresh) {
            summary = summarize_run(project, run);
            recomputed.push_back(out.size());
        }
        out.push_back(std::move(summary));
    }
    if (!recomputed.empty() && !project.read_only()) {
        Transaction tx(project.db());
        auto put = project.db().prepare(
            "INSERT OR REPLACE INTO run_summaries(run_id, seq, summary) VALUES(?, ?, ?)");
        for (std::size_t i : recomputed)
            put.bind_all(out[i].info.id, out[i].info.last_seq, summary_to_json(out[i]).dump())
                .run();
        tx.commit();
    }
    return out;
}

std::map<std::string, Json> flatten_options(const Json& options) {
    std::map<std::string, Json> out;
    flatten_into(options, "", out);
    return out;
}

std::vector<OptionDifference> differing_options(const Json& a, const Json& b) {
    const auto fa = flatten_options(a), fb = flatten_options(b);
    std::set<std::string> keys;
    for (const auto& [k, v] : fa)
        keys.insert(k);
    for (const auto& [k, v] : fb)
        keys.insert(k);
    std::vector<OptionDifference> out;
    for (const auto& key : keys) {
        auto ia = fa.find(key), ib = fb.find(key);
        Json va = ia == fa.end() ? Json() : ia->second;
        Json vb = ib == fb.end() ? Json() : ib->second;
        if (ia != fa.end() && ib != fb.end() && va == vb) continue;
        out.push_back({key, std::move(va), std::move(vb)});
    }
    return out;
}

std::vector<std::string> varying_options(const std::vector<Json>& runs) {
    std::vector<std::map<std::string, Json>> flat;
    flat.reserve(runs.size());
    for (const auto& options : runs)
        flat.push_back(flatten_options(options));
    return varying_keys(flat);
}

std::vector<std::string> varying_keys(const std::vector<std::map<std::string, Json>>& flat) {
    std::set<std::string> keys;
    for (const auto& f : flat)
        for (const auto& [k, v] : f)
            keys.insert(k);
    std::vector<std::string> out;
    for (const auto& key : keys) {
        const Json* first = nullptr;
        bool varies = false;
        for (const auto& f : flat) {
            auto it = f.find(key);
            if (it == f.end()) {
                varies = true;
                break;
            }
            if (!first)
                first = &it->second;
            else if (*first != it->second) {
                varies = true;
                break;
            }
        }
        if (varies) out.push_back(key);
    }
    return out;
}

}  // namespace crucible::store
