#pragma once
// GPU alarms the agent raises for running jobs (DESIGN.md "Events": alarm events): a GPU that
// sits idle while its job runs (a data loader starving it, a hung worker), a temperature over the
// limit, VRAM nearly full. Each alarm is raised once per episode: it re-arms only after the
// condition has cleared (with a margin, so a value hovering at the limit does not repeat it).
// A job's non-finite loss is raised by the worker itself.
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/base/event.h"
#include "core/base/json.h"
#include "core/jobs/gpu_inventory.h"

namespace crucible::jobs {

// From agent.json "alarms": {"gpu_idle_percent", "gpu_idle_seconds", "temperature_c",
// "vram_percent"}; 0 switches an alarm off.
struct AlarmThresholds {
    double gpu_idle_percent = 5;    // utilization below this counts as idle...
    double gpu_idle_seconds = 300;  // ...when it lasts this long while the job runs
    double temperature_c = 87;
    double vram_percent = 97;
    double temperature_margin_c = 5;  // re-arm below temperature_c - margin
    double vram_margin_percent = 2;   // re-arm below vram_percent - margin

    // Reads the "alarms" object of agent.json; InputError naming the field on bad values.
    static AlarmThresholds from_json(const Json& json, const std::string& where);
};

struct RaisedAlarm {
    std::string job_id;
    Event event;  // kind "alarm": alarm, message, gpu, value, limit
};

class AlarmMonitor {
  public:
    explicit AlarmMonitor(AlarmThresholds thresholds) : thresholds_(thresholds) {}

    // One look at the GPUs. `running` maps a running job to the GPU indices it was given;
    // `now` is in seconds (monotonic). Returns the alarms to raise now.
    std::vector<RaisedAlarm> check(const GpuReport& report,
                                   const std::map<std::string, std::vector<int>>& running,
                                   double now);

    const AlarmThresholds& thresholds() const { return thresholds_; }

  private:
    AlarmThresholds thresholds_;
    // (job, gpu) -> when it was first seen idle in the current idle stretch
    std::map<std::pair<std::string, int>, double> idle_since_;
    // (job, gpu, alarm) currently raised and not yet cleared
    std::set<std::tuple<std::string, int, std::string>> active_;
};

}  // namespace crucible::jobs
