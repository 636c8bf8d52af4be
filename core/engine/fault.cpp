#include "core/engine/fault.h"
#include "core/base/environment.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "core/base/error.h"

namespace crucible::engine {

namespace {

FaultPlan parse_plan() {
    FaultPlan plan;
    const auto env = nonempty_environment_variable("CRUCIBLE_FAULT");
    if (!env) return plan;
    std::string text = *env;
    const auto at = text.find('@');
    if (at != std::string::npos) {
        try {
            plan.rank = std::stoi(text.substr(at + 1));
        } catch (...) {
            plan.rank = -1;
        }
        text = text.substr(0, at);
    }
    const auto colon = text.find(':');
    plan.point = text.substr(0, colon);
    if (colon != std::string::npos) {
        try {
            plan.n = std::stoll(text.substr(colon + 1));
        } catch (...) {
            plan.n = -1;
        }
    }
    return plan;
}

int g_fault_rank = 0;

FaultPlan& plan_storage() {
    static FaultPlan plan = parse_plan();
    return plan;
}

}  // namespace

const FaultPlan& fault_plan() {
    return plan_storage();
}

void reload_fault_plan() {
    plan_storage() = parse_plan();
}

void set_fault_rank(int rank) {
    g_fault_rank = rank;
}

bool fault_matches(const char* point, long long value, long long default_n) {
    const FaultPlan& plan = fault_plan();
    if (plan.point != point) return false;
    if (plan.rank >= 0 && plan.rank != g_fault_rank) return false;
    return value == (plan.n >= 0 ? plan.n : default_n);
}

void die_now(const char* point) {
    std::fprintf(stderr, "CRUCIBLE_FAULT: killing the process at %s\n", point);
    std::fflush(nullptr);
#ifdef SIGKILL
    std::raise(SIGKILL);
#endif
    std::_Exit(137);
}

void fault_point(const char* point, long long value, long long default_n) {
    if (fault_matches(point, value, default_n)) die_now(point);
    if (std::string(point) == "after_step" && fault_matches("fail_after_step", value, default_n))
        throw Error("CRUCIBLE_FAULT: an injected failure after step " + std::to_string(value));
    if (std::string(point) == "after_step" && fault_matches("hang_after_step", value, default_n)) {
        std::fprintf(stderr, "CRUCIBLE_FAULT: hanging at %s\n", point);
        std::fflush(nullptr);
        while (true)
            std::this_thread::sleep_for(std::chrono::seconds(1));
    }
}

}  // namespace crucible::engine
