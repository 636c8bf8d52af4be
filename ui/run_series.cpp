#include "ui/run_series.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

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

// "b is a better minimum than a": smaller, and a non-finite value is never better.
bool lower(const std::vector<double>& y, std::size_t a, std::size_t b) {
    if (!std::isfinite(y[b])) return false;
    return !std::isfinite(y[a]) || y[b] < y[a];
}
bool higher(const std::vector<double>& y, std::size_t a, std::size_t b) {
    if (!std::isfinite(y[b])) return false;
    return !std::isfinite(y[a]) || y[b] > y[a];
}

// Merges the extremes of a later part into those of an earlier one (earliest index wins ties).
void merge(const std::vector<double>& y, MinMaxIndex::Extremes& acc,
           const MinMaxIndex::Extremes& later) {
    if (lower(y, acc.lo, later.lo)) acc.lo = later.lo;
    if (higher(y, acc.hi, later.hi)) acc.hi = later.hi;
}

// Appends the first, minimum, maximum and last point of one bucket, in x order, without repeats.
void push_bucket(std::vector<Point>& out, const std::vector<double>& x,
                 const std::vector<double>& y, std::size_t first, MinMaxIndex::Extremes e,
                 std::size_t last) {
    const std::size_t picks[4] = {first, std::min(e.lo, e.hi), std::max(e.lo, e.hi), last};
    std::size_t prev = SIZE_MAX;
    for (std::size_t p : picks)
        if (p != prev) {
            out.push_back({x[p], y[p]});
            prev = p;
        }
}

// The points of x[0, n) inside [x_min, x_max] (x non-decreasing). When there are few, they are
// all copied to `out` and nullopt is returned; otherwise the index range to decimate.
std::optional<std::pair<std::size_t, std::size_t>> visible_range(const std::vector<double>& x,
                                                                 const std::vector<double>& y,
                                                                 std::size_t n, double x_min,
                                                                 double x_max, int buckets,
                                                                 std::vector<Point>& out) {
    if (n == 0 || buckets <= 0 || !(x_max > x_min)) return std::nullopt;
    const auto x_begin = x.begin(), x_end = x.begin() + static_cast<long>(n);
    const auto begin = static_cast<std::size_t>(std::lower_bound(x_begin, x_end, x_min) - x_begin);
    const auto end = static_cast<std::size_t>(std::upper_bound(x_begin, x_end, x_max) - x_begin);
    if (end - begin <= static_cast<std::size_t>(buckets) * 4) {
        for (std::size_t i = begin; i < end; ++i)
            out.push_back({x[i], y[i]});
        return std::nullopt;
    }
    out.reserve(static_cast<std::size_t>(buckets) * 4);
    return std::make_pair(begin, end);
}

}  // namespace

void MinMaxIndex::clear() {
    fine_.clear();
    coarse_.clear();
    size_ = 0;
}

void MinMaxIndex::extend(const std::vector<double>& y) {
    size_ = y.size();
    // Only complete blocks are summarized; the open tail is scanned by range().
    while ((fine_.size() + 1) * kFine <= size_) {
        const std::size_t begin = fine_.size() * kFine;
        Extremes e{begin, begin};
        for (std::size_t i = begin + 1; i < begin + kFine; ++i)
            merge(y, e, {i, i});
        fine_.push_back(e);
    }
    constexpr std::size_t per_coarse = kCoarse / kFine;
    while ((coarse_.size() + 1) * per_coarse <= fine_.size()) {
        const std::size_t begin = coarse_.size() * per_coarse;
        Extremes e = fine_[begin];
        for (std::size_t f = begin + 1; f < begin + per_coarse; ++f)
            merge(y, e, fine_[f]);
        coarse_.push_back(e);
    }
}

MinMaxIndex::Extremes MinMaxIndex::range(const std::vector<double>& y, std::size_t a,
                                         std::size_t b) const {
    Extremes e{a, a};
    std::size_t i = a + 1;
    // Points up to a fine boundary, fine blocks up to a coarse boundary, coarse blocks, then
    // back down: every step takes the largest summarized piece that fits.
    while (i < b && i % kFine != 0)
        merge(y, e, {i, i}), ++i;
    while (i + kFine <= b && i % kCoarse != 0 && i / kFine < fine_.size())
        merge(y, e, fine_[i / kFine]), i += kFine;
    while (i + kCoarse <= b && i / kCoarse < coarse_.size())
        merge(y, e, coarse_[i / kCoarse]), i += kCoarse;
    while (i + kFine <= b && i / kFine < fine_.size())
        merge(y, e, fine_[i / kFine]), i += kFine;
    for (; i < b; ++i)
        merge(y, e, {i, i});
    return e;
}

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
                                    const MinMaxIndex& index, double x_min, double x_max,
                                    int buckets) {
    std::vector<Point> out;
    const std::size_t n = std::min({x.size(), y.size(), index.size()});
    const auto range = visible_range(x, y, n, x_min, x_max, buckets, out);
    if (!range) return out;
    const auto [begin, end] = *range;
    const auto x_begin = x.begin();
    const double width = (x_max - x_min) / buckets;
    std::size_t i = begin;
    while (i < end) {
        // The bucket of x[i] and the first point past it, as the linear scan below decides.
        const int b = std::min(buckets - 1, static_cast<int>((x[i] - x_min) / width));
        std::size_t next = end;
        if (b < buckets - 1) {
            const double bucket_end = x_min + (b + 1) * width;
            next = static_cast<std::size_t>(std::lower_bound(x_begin + static_cast<long>(i),
                                                             x_begin + static_cast<long>(end),
                                                             bucket_end) -
                                            x_begin);
            next = std::max(next, i + 1);  // rounding may put x[i] itself past bucket_end
        }
        push_bucket(out, x, y, i, index.range(y, i, next), next - 1);
        i = next;
    }
    return out;
}

std::vector<Point> decimate_min_max(const std::vector<double>& x, const std::vector<double>& y,
                                    double x_min, double x_max, int buckets) {
    std::vector<Point> out;
    const auto range =
        visible_range(x, y, std::min(x.size(), y.size()), x_min, x_max, buckets, out);
    if (!range) return out;
    const auto [begin, end] = *range;
    const double width = (x_max - x_min) / buckets;
    std::size_t i = begin;
    while (i < end) {
        const int b = std::min(buckets - 1, static_cast<int>((x[i] - x_min) / width));
        const double bucket_end = x_min + (b + 1) * width;
        const std::size_t first = i;
        MinMaxIndex::Extremes e{i, i};
        // The first point always belongs here, even if rounding put it past bucket_end.
        for (; i < end && (i == first || x[i] < bucket_end || b == buckets - 1); ++i)
            merge(y, e, {i, i});
        push_bucket(out, x, y, first, e, i - 1);
    }
    return out;
}

}  // namespace crucible::ui
