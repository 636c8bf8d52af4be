#include "core/engine/results_csv.h"

#include <algorithm>
#include <cstdio>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::engine {

void ResultsTable::add_row(std::vector<double> row) {
    if (row.size() != columns_.size())
        throw Error("results.csv: row of " + std::to_string(row.size()) + " values for " +
                    std::to_string(columns_.size()) + " columns");
    rows_.push_back(std::move(row));
}

std::string ResultsTable::to_csv() const {
    std::string out;
    char cell[64];
    for (std::size_t i = 0; i < columns_.size(); ++i) {
        if (i) out.push_back(',');
        if (columns_[i].size() >= 23) {
            out.append(columns_[i]);
        } else {
            out.append(23 - columns_[i].size(), ' ');
            out.append(columns_[i]);
        }
    }
    out.push_back('\n');
    for (const auto& row : rows_) {
        for (std::size_t i = 0; i < row.size(); ++i) {
            if (i) out.push_back(',');
            const int n = std::snprintf(cell, sizeof cell, "%23.5g", row[i]);
            if (n > 0)
                out.append(
                    cell, static_cast<std::size_t>(std::min(n, static_cast<int>(sizeof cell) - 1)));
        }
        out.push_back('\n');
    }
    return out;
}

void ResultsTable::write(const std::filesystem::path& path) const {
    write_file_atomically(path, to_csv());
}

Json ResultsTable::rows_json() const {
    return rows_;
}

void ResultsTable::set_rows_json(const Json& rows) {
    rows_.clear();
    if (!rows.is_array()) return;
    for (const auto& r : rows)
        add_row(r.get<std::vector<double>>());
}

}  // namespace crucible::engine
