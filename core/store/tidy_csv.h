#pragma once
// Runs' metrics as tidy CSV, one row per run, metric and point, which spreadsheets and Power BI
// open as they are (no pivoting, no wide tables whose columns change with the task):
//
//   run_id,run,task,metric,step,epoch,time,value
//   3,yolov8n-640,detect.yolo,metrics/mAP50(B),120,1,1764739200.000,0.4512
//
// and the per-class evaluations of every epoch (detection runs' eval events):
//
//   run_id,run,epoch,step,class,name,metric,value       (metric: p, r, map50, map50_95, ...)
//
// Text fields are quoted as RFC 4180 asks; one that a spreadsheet would run as a formula (it
// starts with = + - @, a tab or a carriage return) gets a leading apostrophe.
#include <cstdint>
#include <string>
#include <vector>

#include "core/store/project.h"

namespace crucible::store {

std::string csv_text_field(const std::string& text);
std::string csv_number(double value);  // shortest exact form; "" for NaN (an empty cell)

// The series of `run_ids` (every run when empty), points after rollbacks.
std::string tidy_metrics_csv(Project& project, std::vector<std::int64_t> run_ids = {});
// The per-class rows of the runs' eval events.
std::string tidy_per_class_csv(Project& project, std::vector<std::int64_t> run_ids = {});

}  // namespace crucible::store
