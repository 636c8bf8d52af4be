#pragma once
// Every run of a project in one sortable, filterable table (the TensorBoard/W&B runs table):
// name, state, task, dataset, server, created, duration, the options that differ between the
// runs shown (hparams columns, optional) and the best or last value of each metric whose name
// matches the tag search. The rows are store::RunSummary, one stored row per run, so hundreds of
// runs open without reading their histories. Selected runs open overlaid in one monitor; two
// selected runs show a config diff of only the options that differ.
#include <QAbstractTableModel>
#include <QRegularExpression>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/store/run_summary.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace crucible::ui {

class RunTableModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    // The value sorting uses: numbers as numbers, missing values last either way.
    static constexpr int kSortRole = Qt::UserRole + 1;
    static constexpr int kRunIdRole = Qt::UserRole + 2;

    explicit RunTableModel(QObject* parent = nullptr);

    void set_runs(std::vector<store::RunSummary> runs, std::map<std::int64_t, QString> datasets);
    // Metric columns: names matching `pattern` (a case-insensitive regular expression, or the
    // plain text when it is not one); empty shows every metric.
    void set_metric_filter(const QString& pattern);
    void set_show_last(bool last);  // last values instead of best
    void set_hparams(bool on);      // option columns for the options that differ
    const QStringList& metric_columns() const { return metrics_; }
    const QStringList& option_columns() const { return options_; }
    const store::RunSummary& run(int row) const { return runs_[static_cast<std::size_t>(row)]; }
    int column_of(const QString& header) const;  // -1 when not shown

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    void rebuild_metric_columns();
    QVariant cell(std::size_t row, int column, int role) const;

    std::vector<store::RunSummary> runs_;
    std::vector<std::map<std::string, Json>> flat_options_;  // per run
    std::map<std::int64_t, QString> datasets_;
    QString metric_pattern_;
    bool show_last_ = false, hparams_ = true;
    QStringList all_metrics_, metrics_;
    QStringList varying_, options_;  // options that differ between the runs; shown when hparams_
};

class RunTableView : public QWidget {
    Q_OBJECT
  public:
    explicit RunTableView(QWidget* parent = nullptr);

    void set_runs(std::vector<store::RunSummary> runs, std::map<std::int64_t, QString> datasets);
    std::vector<std::int64_t> selected_run_ids() const;
    // Selects the runs (by id) in the table, as a user's clicks would.
    void select_runs(const std::vector<std::int64_t>& ids);
    // The config diff of the two selected runs, shown in a dialog (a message when not two).
    void show_config_diff();

    RunTableModel* model() const { return model_; }
    QSortFilterProxyModel* proxy() const { return proxy_; }
    QTableView* table() const { return table_; }
    QLineEdit* filter_edit() const { return filter_; }
    QLineEdit* tag_edit() const { return tags_; }
    QCheckBox* last_values_box() const { return last_; }
    QCheckBox* hparams_box() const { return hparams_; }

  signals:
    void open_runs(const std::vector<std::int64_t>& ids);  // one monitor, curves overlaid
    // The row menu's actions on one run.
    void clone_requested(std::int64_t id);
    void preview_requested(std::int64_t id);
    void save_weights_requested(std::int64_t id);
    void export_onnx_requested(std::int64_t id);
    void delete_requested(std::int64_t id);
    // The selected runs' metrics as CSV (every run's when none is selected).
    void export_csv_requested(const std::vector<std::int64_t>& ids);
    void refresh_requested();

  private:
    void update_count();

    RunTableModel* model_ = nullptr;
    QSortFilterProxyModel* proxy_ = nullptr;
    QTableView* table_ = nullptr;
    QLineEdit* filter_ = nullptr;
    QLineEdit* tags_ = nullptr;
    QCheckBox* last_ = nullptr;
    QCheckBox* hparams_ = nullptr;
    QLabel* count_ = nullptr;
};

// What differs between two runs' setups: task, dataset version, then each option by key.
struct ConfigDifference {
    QString what, a, b;
};
std::vector<ConfigDifference> config_diff(const store::RunSummary& a, const store::RunSummary& b);
// "what: a → b" lines of config_diff (none: says the options are the same).
QString config_diff_text(const store::RunSummary& a, const store::RunSummary& b);

}  // namespace crucible::ui
