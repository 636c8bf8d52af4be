// Run monitor performance (issue 8 "Performance"): one chart frame with 1,000,000 points per
// series, decimated (what the monitor does) against handing every point to QCustomPlot (the
// baseline, measured in the same run); and the time from one new event to it being drawn while
// the run already holds 1,000,000 points. Runs on the offscreen platform (software raster).
#include <benchmark/benchmark.h>

#include <qcustomplot.h>
#include <QApplication>
#include <cmath>
#include <memory>

#include "ui/run_chart.h"
#include "ui/run_monitor.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

std::vector<Event> events(std::int64_t n) {
    std::vector<Event> out;
    out.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        const double x = static_cast<double>(i);
        Event e =
            make_metric(static_cast<int>(i / 10000), i + 1,
                        {{"train/loss", 2.0 * std::exp(-x * 3e-6) + 0.1 * std::sin(x * 0.01)}});
        e.seq = i;
        e.t = 1e9 + x * 0.1;
        out.push_back(std::move(e));
    }
    return out;
}

const RunSeries& million() {
    static RunSeries s = [] {
        RunSeries r;
        for (const auto& e : events(1000000))
            r.apply(e);
        return r;
    }();
    return s;
}

void BM_ChartFrameDecimated(benchmark::State& state) {
    RunChart chart("train/loss");
    chart.resize(800, 400);
    chart.show();
    chart.set_smoothing(static_cast<double>(state.range(0)) / 100.0);
    chart.set_runs({{"run", &million()}});
    for (auto _ : state) {
        chart.refresh();
        chart.plot()->replot(QCustomPlot::rpImmediateRefresh);
    }
    state.counters["points_drawn"] = chart.drawn_points(0);
}
BENCHMARK(BM_ChartFrameDecimated)->Arg(0)->Arg(60)->Unit(benchmark::kMillisecond);

// The parts of a frame: decimating 1,000,000 points to 800 pixel columns (a scan of every point,
// and the chart's block index), and the replot alone.
void BM_Decimate(benchmark::State& state) {
    const Series& s = *million().find("train/loss");
    for (auto _ : state)
        benchmark::DoNotOptimize(
            decimate_min_max(s.step, s.value, s.step.front(), s.step.back(), 800));
}
BENCHMARK(BM_Decimate)->Unit(benchmark::kMillisecond);

// The same through the block index the chart keeps per curve (built once, extended per event).
void BM_DecimateIndexed(benchmark::State& state) {
    const Series& s = *million().find("train/loss");
    MinMaxIndex index;
    index.extend(s.value);
    for (auto _ : state)
        benchmark::DoNotOptimize(
            decimate_min_max(s.step, s.value, index, s.step.front(), s.step.back(), 800));
}
BENCHMARK(BM_DecimateIndexed)->Unit(benchmark::kMillisecond);

void BM_ReplotOnly(benchmark::State& state) {
    RunChart chart("train/loss");
    chart.resize(800, 400);
    chart.show();
    chart.set_smoothing(0);
    chart.set_runs({{"run", &million()}});
    for (auto _ : state)
        chart.plot()->replot(QCustomPlot::rpImmediateRefresh);
}
BENCHMARK(BM_ReplotOnly)->Unit(benchmark::kMillisecond);

// Baseline: every point handed to QCustomPlot (its own adaptive sampling still applies).
void BM_ChartFrameAllPoints(benchmark::State& state) {
    QCustomPlot plot;
    plot.resize(800, 400);
    plot.show();
    const Series& s = *million().find("train/loss");
    QVector<double> x(s.step.begin(), s.step.end()), y(s.value.begin(), s.value.end());
    for (auto _ : state) {
        plot.clearGraphs();
        plot.addGraph()->setData(x, y, true);
        plot.rescaleAxes();
        plot.replot(QCustomPlot::rpImmediateRefresh);
    }
}
BENCHMARK(BM_ChartFrameAllPoints)->Unit(benchmark::kMillisecond);

// One event arriving at a monitor whose run holds 1,000,000 points, until it is drawn.
void BM_EventToDrawn(benchmark::State& state) {
    RunMonitor monitor;
    monitor.resize(1200, 800);
    monitor.show();
    const int run = monitor.add_run("run");
    auto all = events(1000000);
    monitor.apply_events(run, all);
    monitor.redraw_now();
    std::int64_t seq = 1000000;
    for (auto _ : state) {
        Event e = make_metric(100, seq + 1, {{"train/loss", 0.5}});
        e.seq = seq++;
        e.t = 1e9 + static_cast<double>(seq);
        monitor.apply_events(run, {e});
        monitor.redraw_now();
        monitor.chart("train/loss")->plot()->replot(QCustomPlot::rpImmediateRefresh);
    }
}
BENCHMARK(BM_EventToDrawn)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
