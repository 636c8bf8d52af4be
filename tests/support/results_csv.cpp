#include "tests/support/results_csv.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace crucible::test_support {

std::vector<std::vector<std::string>> read_csv_cells(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::vector<std::vector<std::string>> rows;
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> cells;
        std::stringstream ss(line);
        std::string cell;
        while (std::getline(ss, cell, ',')) {
            const auto b = cell.find_first_not_of(' ');
            cells.push_back(b == std::string::npos ? "" : cell.substr(b));
        }
        rows.push_back(std::move(cells));
    }
    return rows;
}

int ResultsCsv::column_index(const std::string& name) const {
    for (std::size_t i = 0; i < header.size(); ++i)
        if (header[i] == name) return static_cast<int>(i);
    return -1;
}

std::vector<double> ResultsCsv::column(const std::string& name) const {
    const int c = column_index(name);
    if (c < 0) throw std::out_of_range(std::string("results.csv has no column ").append(name));
    std::vector<double> out;
    for (const auto& row : rows)
        out.push_back(row.at(static_cast<std::size_t>(c)));
    return out;
}

ResultsCsv read_results_csv(const std::filesystem::path& file) {
    ResultsCsv t;
    auto cells = read_csv_cells(file);
    if (cells.empty()) return t;
    t.header = std::move(cells.front());
    for (std::size_t r = 1; r < cells.size(); ++r) {
        std::vector<double> values;
        for (const auto& c : cells[r])
            values.push_back(std::stod(c));
        t.rows.push_back(std::move(values));
    }
    return t;
}

}  // namespace crucible::test_support
