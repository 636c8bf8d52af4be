#pragma once
// results.csv in the Ultralytics layout: a header of right-aligned names (%23s) and one row per
// epoch of %23.5g values, epoch counted from 1. Rows are kept at full precision so a resumed run
// can rewrite the file from its checkpoint.
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/json.h"

namespace crucible::engine {

class ResultsTable {
  public:
    ResultsTable() = default;
    explicit ResultsTable(std::vector<std::string> columns) : columns_(std::move(columns)) {}

    const std::vector<std::string>& columns() const { return columns_; }
    const std::vector<std::vector<double>>& rows() const { return rows_; }
    void add_row(std::vector<double> row);  // size must match columns
    std::string to_csv() const;
    void write(const std::filesystem::path& path) const;  // atomically

    Json rows_json() const;
    void set_rows_json(const Json& rows);

  private:
    std::vector<std::string> columns_;
    std::vector<std::vector<double>> rows_;
};

}  // namespace crucible::engine
