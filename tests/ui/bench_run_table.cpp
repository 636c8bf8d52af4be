// Run table benchmark ([B2 3/8] item 6; not run by ctest). A project of 500 runs (detection-like:
// 40 epochs of 8 training steps and one validation each, 24 options of which 3 differ) is opened
// as the studio opens its run table, 5 times, interleaving:
//   cold   opening before any run summary is stored (the first open after an upgrade): every
//          run's points are read and summarized, and the summaries stored — the baseline;
//   warm   opening with stored summaries: Project::open, summarize_runs, the table filled and
//          painted (goal: under 1 s for 500 runs);
// then, on the open table, the time from a user's action to the table painted again: sorting
// by a metric column, a filter keystroke, a tag search. Prints min/median/max and the
// cold/warm ratio. Usage: bench_run_table [runs=500] [epochs=40]
#include <QApplication>
#include <QLineEdit>
#include <QTableView>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/store/project.h"
#include "core/store/run_summary.h"
#include "tests/support/temp_dir.h"
#include "ui/run_table.h"

namespace {

using namespace crucible;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

Json run_options(int i) {
    Json o = {{"model", "yolov8n"}, {"imgsz", 320},      {"batch", 16},
              {"optimizer", "SGD"}, {"momentum", 0.937}, {"weight_decay", 5e-4},
              {"warmup_epochs", 3}, {"box", 7.5},        {"cls", 0.5},
              {"dfl", 1.5},         {"hsv_h", 0.015},    {"hsv_s", 0.7},
              {"hsv_v", 0.4},       {"degrees", 0.0},    {"translate", 0.1},
              {"scale", 0.5},       {"fliplr", 0.5},     {"mosaic", 1.0},
              {"close_mosaic", 10}, {"workers", 2},      {"amp", true}};
    o["epochs"] = 40;
    o["lr0"] = 0.001 * (1 + i % 10);
    o["seed"] = i;
    o["mixup"] = (i % 3) * 0.1;
    return o;
}

std::vector<Event> run_events(int run, int epochs) {
    std::vector<Event> out;
    std::int64_t seq = 0, step = 0;
    auto push = [&](Event e) {
        e.seq = seq;
        e.t = 1e9 + static_cast<double>(seq);
        ++seq;
        out.push_back(std::move(e));
    };
    push(make_status("running"));
    const double rate = 0.02 + 0.001 * (run % 17);
    for (int epoch = 0; epoch < epochs; ++epoch) {
        for (int i = 0; i < 8; ++i) {
            ++step;
            const double x = static_cast<double>(step) * rate;
            push(make_metric(epoch, step,
                             {{"train/box_loss", 1.5 / (1 + x)},
                              {"train/cls_loss", 2.0 / (1 + x)},
                              {"train/dfl_loss", 1.2 / (1 + x)},
                              {"lr/pg0", 0.01}}));
        }
        const double q = 1.0 - 1.0 / (1 + 0.05 * epoch * (1 + run % 5));
        push(make_metric(epoch, step,
                         {{"metrics/mAP50(B)", q},
                          {"metrics/mAP50-95(B)", q * 0.6},
                          {"metrics/precision(B)", q * 0.9},
                          {"metrics/recall(B)", q * 0.8},
                          {"val/box_loss", 1.6 / (1 + q)}}));
    }
    push(make_status("succeeded"));
    return out;
}

struct Stats {
    std::vector<double> ms;
    void print(const char* what) {
        std::sort(ms.begin(), ms.end());
        std::printf("  %-44s min %8.1f  median %8.1f  max %8.1f ms\n", what, ms.front(),
                    ms[ms.size() / 2], ms.back());
    }
    double median() const {
        auto copy = ms;
        std::sort(copy.begin(), copy.end());
        return copy[copy.size() / 2];
    }
};

void repaint(ui::RunTableView& view) {
    view.table()->viewport()->repaint();
    QApplication::processEvents();
}

int run(int argc, char** argv) {
    const int runs = argc > 1 ? std::atoi(argv[1]) : 500;
    const int epochs = argc > 2 ? std::atoi(argv[2]) : 40;
    test_support::TempDir dir("bench-run-table");
    const auto file = dir / "runs.crucible";
    std::size_t total_events = 0;
    {
        auto t0 = Clock::now();
        auto p = store::Project::create(file);
        for (int i = 0; i < runs; ++i) {
            store::RunSetup setup{.name = "run-" + std::to_string(i), .task = "detect.yolo"};
            setup.options = run_options(i);
            const auto id = store::create_run(*p, setup);
            const auto events = run_events(i, epochs);
            total_events += events.size();
            store::append_events(*p, id, events);
        }
        std::printf("project: %d runs, %zu events, written in %.1f s\n", runs, total_events,
                    ms_since(t0) / 1000);
    }
    Stats cold, warm, sort, filter, tags;
    for (int rep = 0; rep < 5; ++rep) {
        {
            auto p = store::Project::open(file);
            p->db().exec("DELETE FROM run_summaries");
        }
        {
            auto t0 = Clock::now();
            auto p = store::Project::open(file);
            const auto summaries = store::summarize_runs(*p);
            cold.ms.push_back(ms_since(t0));
        }
        auto t0 = Clock::now();
        auto p = store::Project::open(file);
        ui::RunTableView view;
        view.resize(1400, 800);
        view.set_runs(store::summarize_runs(*p), {});
        view.show();
        repaint(view);
        warm.ms.push_back(ms_since(t0));

        const int column = view.model()->column_of(QStringLiteral("metrics/mAP50-95(B)"));
        t0 = Clock::now();
        view.table()->sortByColumn(column, rep % 2 ? Qt::AscendingOrder : Qt::DescendingOrder);
        repaint(view);
        sort.ms.push_back(ms_since(t0));

        t0 = Clock::now();
        view.filter_edit()->setText(QStringLiteral("run-1"));
        repaint(view);
        filter.ms.push_back(ms_since(t0));

        t0 = Clock::now();
        view.tag_edit()->setText(QStringLiteral("mAP|val/"));
        repaint(view);
        tags.ms.push_back(ms_since(t0));
    }
    std::printf("%d runs, 5 repetitions (interleaved):\n", runs);
    cold.print("open, summaries computed (baseline)");
    warm.print("open, stored summaries, table painted");
    sort.print("sort by a metric column, painted");
    filter.print("filter keystroke, painted");
    tags.print("tag search, painted");
    std::printf("cold/warm ratio (medians): %.1fx; warm open goal < 1000 ms: %s\n",
                cold.median() / warm.median(), warm.median() < 1000 ? "met" : "MISSED");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    return run(argc, argv);
}
