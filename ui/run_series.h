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

// Block summaries (index of the minimum and maximum) of a series that only grows, so that the
// extremes of any index range cost O(range / 4096 + 256) instead of O(range): a chart with a
// million points per curve decimates in well under a millisecond per frame. Non-finite values
// are never an extreme while a finite one exists.
class MinMaxIndex {
  public:
    // Summarizes y[size() .. y.size()); y must hold the same values as before at lower indices.
    void extend(const std::vector<double>& y);
    void clear();
    std::size_t size() const { return size_; }
    struct Extremes {
        std::size_t lo, hi;  // first index of the minimum / maximum
    };
    // Extremes of y[a, b), a < b <= size(); the earliest index among equal values.
    Extremes range(const std::vector<double>& y, std::size_t a, std::size_t b) const;

    static constexpr std::size_t kFine = 64;      // points per fine block
    static constexpr std::size_t kCoarse = 4096;  // points per coarse block

  private:
    std::vector<Extremes> fine_, coarse_;
    std::size_t size_ = 0;
};

// The same decimation as below, from an index of y (covering at least the points in range).
std::vector<Point> decimate_min_max(const std::vector<double>& x, const std::vector<double>& y,
                                    const MinMaxIndex& index, double x_min, double x_max,
                                    int buckets);

// Keeps, for each of `buckets` equal x-ranges over [x_min, x_max], the first, minimum, maximum
// and last point (in x order), so spikes survive and the line shape is exact at pixel scale.
// Points outside the range are dropped; x must be non-decreasing.
std::vector<Point> decimate_min_max(const std::vector<double>& x, const std::vector<double>& y,
                                    double x_min, double x_max, int buckets);

}  // namespace crucible::ui
