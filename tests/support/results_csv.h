#pragma once
// Reading a run's results.csv in tests (the Ultralytics layout: right-aligned header cells,
// comma-separated values).
#include <filesystem>
#include <string>
#include <vector>

namespace crucible::test_support {

// Every line as cells with leading blanks trimmed, header first; empty when the file is missing.
std::vector<std::vector<std::string>> read_csv_cells(const std::filesystem::path& file);

struct ResultsCsv {
    std::vector<std::string> header;
    std::vector<std::vector<double>> rows;
    // Index of `name` in the header; -1 when absent.
    int column_index(const std::string& name) const;
    // One column's values by row; throws std::out_of_range when the column is absent.
    std::vector<double> column(const std::string& name) const;
    double at(std::size_t row, const std::string& name) const { return column(name).at(row); }
};

ResultsCsv read_results_csv(const std::filesystem::path& file);

}  // namespace crucible::test_support
