#include "core/jobs/alarms.h"

#include <cmath>
#include <cstdio>

#include "core/base/error.h"

namespace crucible::jobs {

AlarmThresholds AlarmThresholds::from_json(const Json& json, const std::string& where) {
    if (!json.is_object())
        throw InputError(where, "field 'alarms': expected an object of thresholds");
    AlarmThresholds t;
    const std::string w = where + ": alarms";
    auto read = [&](const char* name, double& value, double max) {
        if (!json.contains(name)) return;
        double v = get_number(json, name, w);
        if (!std::isfinite(v) || v < 0 || v > max)
            throw InputError(w, std::string("field '") + name + "': expected 0 (off) to " +
                                    std::to_string(static_cast<long long>(max)));
        value = v;
    };
    read("gpu_idle_percent", t.gpu_idle_percent, 100);
    read("gpu_idle_seconds", t.gpu_idle_seconds, 7 * 24 * 3600);
    read("temperature_c", t.temperature_c, 150);
    read("vram_percent", t.vram_percent, 100);
    for (auto it = json.begin(); it != json.end(); ++it)
        if (it.key() != "gpu_idle_percent" && it.key() != "gpu_idle_seconds" &&
            it.key() != "temperature_c" && it.key() != "vram_percent")
            throw InputError(w, "unknown field '" + it.key() +
                                    "' (known: gpu_idle_percent, gpu_idle_seconds, "
                                    "temperature_c, vram_percent)");
    return t;
}

namespace {

std::string fmt(const char* format, double a, double b = 0, double c = 0) {
    char buf[256];
    std::snprintf(buf, sizeof buf, format, a, b, c);
    return buf;
}

Event alarm_event(const std::string& alarm, const std::string& message, const GpuInfo& gpu,
                  double value, double limit) {
    Event e = make_alarm(alarm, message);
    e.fields["gpu"] = gpu.index;
    e.fields["gpu_name"] = gpu.name;
    e.fields["value"] = value;
    e.fields["limit"] = limit;
    return e;
}

}  // namespace

std::vector<RaisedAlarm> AlarmMonitor::check(const GpuReport& report,
                                             const std::map<std::string, std::vector<int>>& running,
                                             double now) {
    std::vector<RaisedAlarm> out;
    std::set<std::pair<std::string, int>> seen;
    const auto& t = thresholds_;
    for (const auto& [job, gpu_ids] : running) {
        for (int index : gpu_ids) {
            const GpuInfo* gpu = nullptr;
            for (const auto& g : report.gpus)
                if (g.index == index) gpu = &g;
            if (!gpu) continue;
            seen.insert({job, index});
            // Raises `alarm` when `on` and it is not already raised; clears it when `off`.
            auto edge = [&](const std::string& alarm, bool on, bool off, const std::string& msg,
                            double value, double limit) {
                auto key = std::make_tuple(job, index, alarm);
                if (on && !active_.count(key)) {
                    active_.insert(key);
                    out.push_back({job, alarm_event(alarm, msg, *gpu, value, limit)});
                } else if (off) {
                    active_.erase(key);
                }
            };

            if (t.gpu_idle_percent > 0 && t.gpu_idle_seconds > 0) {
                const bool idle = gpu->utilization < t.gpu_idle_percent;
                auto key = std::make_pair(job, index);
                if (idle && !idle_since_.count(key)) idle_since_[key] = now;
                if (!idle) idle_since_.erase(key);
                const double idle_for = idle ? now - idle_since_[key] : 0;
                edge("gpu_idle", idle && idle_for >= t.gpu_idle_seconds, !idle,
                     fmt("GPU %.0f has been idle (utilization under %.0f%%) for %.0f s while "
                         "this job runs: is the data loader starving it, or is the worker stuck?",
                         index, t.gpu_idle_percent, idle_for),
                     gpu->utilization, t.gpu_idle_percent);
            }
            if (t.temperature_c > 0) {
                const double temp = gpu->temperature;
                edge("gpu_temperature", temp >= t.temperature_c,
                     temp < t.temperature_c - t.temperature_margin_c,
                     fmt("GPU %.0f is at %.0f C (limit %.0f C): check the cooling; the GPU will "
                         "throttle",
                         index, temp, t.temperature_c),
                     temp, t.temperature_c);
            }
            if (t.vram_percent > 0 && gpu->memory_total > 0) {
                const double pct = 100.0 * static_cast<double>(gpu->memory_used) /
                                   static_cast<double>(gpu->memory_total);
                edge("gpu_memory", pct >= t.vram_percent,
                     pct < t.vram_percent - t.vram_margin_percent,
                     fmt("GPU %.0f memory is %.1f%% full (limit %.0f%%): lower the batch size or "
                         "image size before it runs out",
                         index, pct, t.vram_percent),
                     pct, t.vram_percent);
            }
        }
    }
    // Jobs that stopped (or moved off a GPU) forget their state: a resumed job starts afresh.
    for (auto it = idle_since_.begin(); it != idle_since_.end();)
        it = seen.count(it->first) ? std::next(it) : idle_since_.erase(it);
    for (auto it = active_.begin(); it != active_.end();)
        it = seen.count({std::get<0>(*it), std::get<1>(*it)}) ? std::next(it) : active_.erase(it);
    return out;
}

}  // namespace crucible::jobs
