#pragma once
// What the run table shows of each run without reading its history: the last, lowest and
// highest value of every metric and the time the run spanned, kept per run in the project
// (run_summaries) up to the seq it was computed at. Also the options of runs compared key by key
// (the hparams columns and the config diff of two runs).
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/json.h"
#include "core/store/run_store.h"

namespace crucible::store {

struct MetricSummary {
    static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    double last = kNone, min = kNone, max = kNone;  // over finite values; NaN when none
    std::int64_t points = 0;
    std::int64_t last_step = -1, last_epoch = -1;  // of the last finite value
};

// Losses get better as they fall; every other metric (mAP, precision, recall, accuracy) as it
// rises.
bool lower_is_better(std::string_view metric);
// The metric's best value: its min or max by lower_is_better.
double best_value(std::string_view metric, const MetricSummary& summary);

struct RunSummary {
    RunInfo info;
    double first_t = MetricSummary::kNone, last_t = MetricSummary::kNone;  // of its events
    std::map<std::string, MetricSummary> metrics;
    double duration_s() const { return last_t - first_t; }  // NaN without events
};

// The summary of one run computed from its stored points (rolled-back points excluded).
RunSummary summarize_run(Project& project, const RunInfo& run);
// Every run of the project with its summary, in id order. A summary older than its run's last
// event is computed again and, when the project is writable, stored for the next time.
std::vector<RunSummary> summarize_runs(Project& project);

// Options as dotted keys ("augment.mosaic") to their values; arrays are values.
std::map<std::string, Json> flatten_options(const Json& options);

struct OptionDifference {
    std::string key;
    Json a, b;  // null where the run has no such option
};
// The options of two runs that differ, by key.
std::vector<OptionDifference> differing_options(const Json& a, const Json& b);
// The keys whose values are not the same in every one of `runs` (a key some runs lack counts).
std::vector<std::string> varying_options(const std::vector<Json>& runs);
// The same over options flattened already (flatten_options).
std::vector<std::string> varying_keys(const std::vector<std::map<std::string, Json>>& flat);

}  // namespace crucible::store
