#include "ui/run_series.h"

#include <algorithm>
#include <cmath>

namespace crucible::ui {

namespace {

void truncate_after(Series& s, double to_step) {
    // Steps are non-decreasing within a series, so the superseded points are a suffix.
    auto it = std::upper_bound(s.step.begin(), s.step.end(), to_step);
    auto keep = static_cast<std::size_t>(it - s.step.begin());
    s.step.resize(keep);
    s.epoch.resize(keep);
    s.time.resize(keep);
    s.value.resize(keep);
}

}  // namespace

void RunSeries::apply(const Event& e) {
    if (e.seq >= 0 && e.seq <= last_seq_) return;
    if (e.seq >= 0) last_seq_ = e.seq;
    if (e.kind == event_kind::kRollback) {
        double to = static_cast<double>(e.fields.value("to_step", std::int64_t{0}));
        for (auto& [name, s] : series_)
            truncate_after(s, to);
        ++removals_;
        return;
    }
    if (e.kind != event_kind::kMetric && e.kind != event_kind::kEval) return;
    auto values = e.fields.find("values");
    if (values == e.fields.end() || !values->is_object()) return;
    const double step = static_cast<double>(e.step() >= 0 ? e.step() : 0);
    const double epoch = e.fields.value("epoch", 0.0);
    for (auto it = values->begin(); it != values->end(); ++it) {
        if (!it->is_number()) continue;
        Series& s = series_[it.key()];
        if (!s.step.empty() && step < s.step.back()) {
            truncate_after(s, step - 0.5);  // defensive: keep x sorted
            ++removals_;
        }
        s.step.push_back(step);
        s.epoch.push_back(epoch);
        s.time.push_back(e.t);
        s.value.push_back(it->get<double>());
    }
}

const Series* RunSeries::find(const std::string& name) const {
    auto it = series_.find(name);
    return it == series_.end() ? nullptr : &it->second;
}

std::vector<double> ema_smooth(const std::vector<double>& y, double weight) {
    std::vector<double> out(y.size());
    weight = std::clamp(weight, 0.0, 0.999);
    double last = 0, debias = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
        if (!std::isfinite(y[i])) {
            out[i] = y[i];
            continue;
        }
        last = last * weight + (1 - weight) * y[i];
        debias = debias * weight + (1 - weight);
        out[i] = last / debias;
    }
    return out;
}

std::vector<Point> decimate_min_max(const std::vector<double>& x, const std::vector<double>& y,
                                    double x_min, double x_max, int buckets) {
    std::vector<Point> out;
    const std::size_t n = std::min(x.size(), y.size());
    if (n == 0 || buckets <= 0 || !(x_max > x_min)) return out;
    auto begin = static_cast<std::size_t>(
        std::lower_bound(x.begin(), x.begin() + static_cast<long>(n), x_min) - x.begin());
    auto end = static_cast<std::size_t>(
        std::upper_bound(x.begin(), x.begin() + static_cast<long>(n), x_max) - x.begin());
    if (end - begin <= static_cast<std::size_t>(buckets) * 4) {
        for (std::size_t i = begin; i < end; ++i)
            out.push_back({x[i], y[i]});
        return out;
    }
    out.reserve(static_cast<std::size_t>(buckets) * 4);
    const double width = (x_max - x_min) / buckets;
    std::size_t i = begin;
    while (i < end) {
        const int b = std::min(buckets - 1, static_cast<int>((x[i] - x_min) / width));
        const double bucket_end = x_min + (b + 1) * width;
        std::size_t first = i, lo = i, hi = i, last = i;
        for (; i < end && (x[i] < bucket_end || b == buckets - 1); ++i) {
            if (y[i] < y[lo]) lo = i;
            if (y[i] > y[hi]) hi = i;
            last = i;
        }
        std::size_t picks[4] = {first, std::min(lo, hi), std::max(lo, hi), last};
        std::size_t prev = SIZE_MAX;
        for (std::size_t p : picks)
            if (p != prev) {
                out.push_back({x[p], y[p]});
                prev = p;
            }
    }
    return out;
}

}  // namespace crucible::ui
