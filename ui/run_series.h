#pragma once
// What the run monitor plots, kept apart from the widgets so it is testable without a display:
// per-metric series built from DESIGN.md events (metric and eval values), where a `rollback`
// event removes the points it supersedes; TensorBoard-style EMA smoothing; and min/max
// decimation so a chart draws at most a few points per pixel column however long the run.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/base/event.h"

namespace crucible::ui {

struct Series {
    std::vector<double> step, epoch, time, value;
    std::size_t size() const { return value.size(); }
};

class RunSeries {
  public:
    // Applies one event in seq order; events already seen (seq <= last_seq) are ignored, so a
    // catch-up after a reconnect never duplicates points.
    void apply(const Event& event);
    const std::map<std::string, Series>& series() const { return series_; }
    const Series* find(const std::string& name) const;
    std::int64_t last_seq() const { return last_seq_; }
    // Counts the times points were removed (rollbacks), so caches of derived curves know when
    // they must start over instead of extending.
    std::uint64_t removals() const { return removals_; }

  private:
    std::map<std::string, Series> series_;
    std::int64_t last_seq_ = -1;
    std::uint64_t removals_ = 0;
};

enum class XAxis { Step, Epoch, WallTime };

// TensorBoard's smoothing: debiased exponential moving average with `weight` in [0, 1).
std::vector<double> ema_smooth(const std::vector<double>& y, double weight);

struct Point {
    double x, y;
};

// Keeps, for each of `buckets` equal x-ranges over [x_min, x_max], the first, minimum, maximum
// and last point (in x order), so spikes survive and the line shape is exact at pixel scale.
// Points outside the range are dropped; x must be non-decreasing.
std::vector<Point> decimate_min_max(const std::vector<double>& x, const std::vector<double>& y,
                                    double x_min, double x_max, int buckets);

}  // namespace crucible::ui
