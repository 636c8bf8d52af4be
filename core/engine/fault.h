#pragma once
// Fault injection for the kill/resume and full-disk tests (issue [4/10]): the environment
// variable CRUCIBLE_FAULT=<point>[:<n>] makes the process die by SIGKILL (std::_Exit where
// there is no SIGKILL) at a named place, so a test reproduces a crash exactly, not by timing.
//   mid_epoch[:e]             halfway through epoch e (0-based, default 1)
//   during_validation[:e]     when validation of epoch e starts (default 0)
//   mid_checkpoint_write[:k]  in the k-th checkpoint write of the process (1-based, default 2),
//                             after the temp file is written and synced, before the rename
//   after_step[:n]            after global step n (default 1)
//   disk_full[:k]             checkpoint writes from the k-th on (default 2) fail as if the
//                             disk were full (ENOSPC); the process lives on
//   hang_after_step[:n]       after global step n (default 1) the process stops making progress
//                             (sleeps) until something kills it: a hung rank
//   fail_after_step[:n]       after global step n (default 1) the run fails with an error of its
//                             own (as out of memory would), the process exits normally
// A suffix @r limits the fault to rank r of a data-parallel run (after_step:3@1).
#include <string>

namespace crucible::engine {

struct FaultPlan {
    std::string point;  // empty: no fault
    long long n = -1;   // -1: the point's default
    int rank = -1;      // -1: any rank
    // Every point but disk_full kills the process.
    bool kills() const { return !point.empty() && point != "disk_full"; }
};

// Parsed once from CRUCIBLE_FAULT.
const FaultPlan& fault_plan();
// Re-reads CRUCIBLE_FAULT (tests that set it in-process).
void reload_fault_plan();
// The rank of this process (run_job sets it), for plans with @r.
void set_fault_rank(int rank);

// True when the plan names `point` and `value` equals its n (or `default_n` when none given).
bool fault_matches(const char* point, long long value, long long default_n);
// Kills the process when fault_matches().
void fault_point(const char* point, long long value, long long default_n);
[[noreturn]] void die_now(const char* point);

}  // namespace crucible::engine
