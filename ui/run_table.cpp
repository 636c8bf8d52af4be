#include "ui/run_table.h"

#include <QCheckBox>
#include <QDateTime>
#include <QDialog>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <set>

#include "ui/run_model.h"

namespace crucible::ui {

namespace {

enum FixedColumn { kName, kState, kTask, kDataset, kServer, kCreated, kDuration, kFixedColumns };

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

QString option_text(const Json& value) {
    if (value.is_null()) return QStringLiteral("—");
    if (value.is_string()) return qs(value.get<std::string>());
    return qs(value.dump(-1, ' ', false, Json::error_handler_t::replace));
}

QVariant option_sort_value(const Json& value) {
    if (value.is_number()) return value.get<double>();
    if (value.is_boolean()) return value.get<bool>() ? 1.0 : 0.0;
    if (value.is_null()) return {};
    return option_text(value);
}

QString metric_text(double v) {
    return std::isfinite(v) ? QString::number(v, 'g', 4) : QStringLiteral("—");
}

}  // namespace

RunTableModel::RunTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunTableModel::set_runs(std::vector<store::RunSummary> runs,
                             std::map<std::int64_t, QString> datasets) {
    beginResetModel();
    runs_ = std::move(runs);
    datasets_ = std::move(datasets);
    flat_options_.clear();
    std::set<std::string> names;
    for (const auto& r : runs_) {
        flat_options_.push_back(store::flatten_options(r.info.setup.options));
        for (const auto& [name, m] : r.metrics)
            names.insert(name);
    }
    all_metrics_.clear();
    for (const auto& n : names)
        all_metrics_ << qs(n);
    // What runs are compared by first (mAP, precision: metric_rank 2), then losses and
    // validation, learning rates last.
    auto table_rank = [](const QString& m) {
        const int rank = metric_rank(m);
        return rank == 2 ? -1 : rank;
    };
    std::stable_sort(
        all_metrics_.begin(), all_metrics_.end(),
        [&](const QString& a, const QString& b) { return table_rank(a) < table_rank(b); });
    varying_.clear();
    for (const auto& key : store::varying_keys(flat_options_))
        varying_ << qs(key);
    options_ = hparams_ ? varying_ : QStringList();
    rebuild_metric_columns();
    endResetModel();
}

void RunTableModel::set_metric_filter(const QString& pattern) {
    beginResetModel();
    metric_pattern_ = pattern.trimmed();
    rebuild_metric_columns();
    endResetModel();
}

void RunTableModel::set_show_last(bool last) {
    beginResetModel();
    show_last_ = last;
    endResetModel();
}

void RunTableModel::set_hparams(bool on) {
    beginResetModel();
    hparams_ = on;
    options_ = hparams_ ? varying_ : QStringList();
    endResetModel();
}

void RunTableModel::rebuild_metric_columns() {
    metrics_.clear();
    QRegularExpression re(metric_pattern_, QRegularExpression::CaseInsensitiveOption);
    for (const auto& m : all_metrics_) {
        if (metric_pattern_.isEmpty() ||
            (re.isValid() ? re.match(m).hasMatch()
                          : m.contains(metric_pattern_, Qt::CaseInsensitive)))
            metrics_ << m;
    }
}

int RunTableModel::column_of(const QString& header) const {
    for (int c = 0; c < columnCount(); ++c)
        if (headerData(c, Qt::Horizontal, Qt::DisplayRole).toString() == header) return c;
    return -1;
}

int RunTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}

int RunTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0
                            : kFixedColumns + static_cast<int>(options_.size() + metrics_.size());
}

QVariant RunTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return {};
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
    static const char* const fixed[] = {"Name",   "State",   "Task",    "Dataset",
                                        "Server", "Created", "Duration"};
    if (section < kFixedColumns) return tr(fixed[section]);
    section -= kFixedColumns;
    if (section < options_.size()) return options_[section];
    section -= static_cast<int>(options_.size());
    if (section >= metrics_.size()) return {};
    if (role == Qt::ToolTipRole)
        return show_last_ ? tr("%1: last value").arg(metrics_[section])
                          : tr("%1: best value (%2)")
                                .arg(metrics_[section],
                                     store::lower_is_better(metrics_[section].toStdString())
                                         ? tr("lowest")
                                         : tr("highest"));
    return metrics_[section];
}

QVariant RunTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    if (role == kRunIdRole)
        return QVariant::fromValue<qlonglong>(runs_[static_cast<std::size_t>(index.row())].info.id);
    if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole &&
        role != Qt::TextAlignmentRole)
        return {};
    return cell(static_cast<std::size_t>(index.row()), index.column(), role);
}

QVariant RunTableModel::cell(std::size_t row, int column, int role) const {
    const store::RunSummary& run = runs_[row];
    const bool sort = role == kSortRole;
    const auto& setup = run.info.setup;
    if (role == Qt::TextAlignmentRole)
        return column >= kDuration ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    switch (column) {
        case kName:
            return role == Qt::ToolTipRole
                       ? tr("run %1 · %2 events").arg(run.info.id).arg(run.info.events)
                       : QVariant(qs(setup.name));
        case kState:
            return qs(setup.state);
        case kTask:
            return qs(setup.task);
        case kDataset: {
            if (!setup.dataset_id) return {};
            auto it = datasets_.find(*setup.dataset_id);
            const QString name =
                it != datasets_.end() ? it->second : tr("dataset %1").arg(*setup.dataset_id);
            if (role == Qt::ToolTipRole)
                return tr("%1, version %2").arg(name, qs(setup.dataset_hash.substr(0, 12)));
            return name;
        }
        case kServer:
            return setup.server.empty() ? tr("this computer") : qs(setup.server);
        case kCreated:
            if (sort) return run.info.created_at;
            return QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(run.info.created_at * 1000))
                .toString(QStringLiteral("yyyy-MM-dd hh:mm"));
        case kDuration: {
            const double d = run.duration_s();
            if (sort) return std::isfinite(d) ? QVariant(d) : QVariant();
            return format_duration(d);
        }
        default:
            break;
    }
    int c = column - kFixedColumns;
    if (c < options_.size()) {
        const auto& flat = flat_options_[row];
        auto it = flat.find(options_[c].toStdString());
        const Json value = it == flat.end() ? Json() : it->second;
        return sort ? option_sort_value(value) : QVariant(option_text(value));
    }
    c -= static_cast<int>(options_.size());
    if (c >= metrics_.size()) return {};
    const std::string name = metrics_[c].toStdString();
    auto it = run.metrics.find(name);
    if (it == run.metrics.end()) return {};
    const store::MetricSummary& m = it->second;
    const double v = show_last_ ? m.last : store::best_value(name, m);
    if (sort) return std::isfinite(v) ? QVariant(v) : QVariant();
    if (role == Qt::ToolTipRole)
        return tr("best %1 · last %2 at step %3 · %4 points")
            .arg(metric_text(store::best_value(name, m)), metric_text(m.last))
            .arg(m.last_step)
            .arg(m.points);
    return metric_text(v);
}

std::vector<ConfigDifference> config_diff(const store::RunSummary& a, const store::RunSummary& b) {
    std::vector<ConfigDifference> out;
    const auto& sa = a.info.setup;
    const auto& sb = b.info.setup;
    if (sa.task != sb.task) out.push_back({QObject::tr("task"), qs(sa.task), qs(sb.task)});
    if (sa.dataset_hash != sb.dataset_hash)
        out.push_back({QObject::tr("dataset version"), qs(sa.dataset_hash.substr(0, 12)),
                       qs(sb.dataset_hash.substr(0, 12))});
    for (const auto& d : store::differing_options(sa.options, sb.options))
        out.push_back({qs(d.key), option_text(d.a), option_text(d.b)});
    return out;
}

QString config_diff_text(const store::RunSummary& a, const store::RunSummary& b) {
    QStringList lines;
    for (const auto& d : config_diff(a, b))
        lines << QStringLiteral("%1: %2 → %3").arg(d.what, d.a, d.b);
    if (lines.isEmpty())
        return QObject::tr("%1 and %2 have the same options")
            .arg(qs(a.info.setup.name), qs(b.info.setup.name));
    return lines.join(QLatin1Char('\n'));
}

RunTableView::RunTableView(QWidget* parent) : QWidget(parent) {
    model_ = new RunTableModel(this);
    proxy_ = new QSortFilterProxyModel(this);
    proxy_->setSourceModel(model_);
    proxy_->setSortRole(RunTableModel::kSortRole);
    proxy_->setFilterKeyColumn(-1);
    proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);

    filter_ = new QLineEdit(this);
    filter_->setPlaceholderText(tr("Filter runs (name, state, task, options…)"));
    filter_->setClearButtonEnabled(true);
    tags_ = new QLineEdit(this);
    tags_->setPlaceholderText(tr("Metrics (regex, e.g. mAP|val/)"));
    tags_->setClearButtonEnabled(true);
    last_ = new QCheckBox(tr("Last values"), this);
    last_->setToolTip(tr("Show each metric's last value instead of its best"));
    hparams_ = new QCheckBox(tr("Options that differ"), this);
    hparams_->setChecked(true);
    count_ = new QLabel(this);
    auto* compare = new QPushButton(tr("Compare"), this);
    compare->setToolTip(tr("Open the selected runs in one monitor, curves overlaid"));
    auto* diff = new QPushButton(tr("Config diff"), this);
    diff->setToolTip(tr("The options that differ between the two selected runs"));
    auto* refresh = new QPushButton(tr("Refresh"), this);

    table_ = new QTableView(this);
    table_->setModel(proxy_);
    table_->setSortingEnabled(true);
    table_->sortByColumn(kCreated, Qt::DescendingOrder);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setAlternatingRowColors(true);
    table_->verticalHeader()->hide();
    table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
    table_->horizontalHeader()->setSectionsMovable(true);
    table_->horizontalHeader()->setDefaultSectionSize(110);

    auto* bar = new QHBoxLayout;
    bar->addWidget(filter_, 2);
    bar->addWidget(tags_, 2);
    bar->addWidget(last_);
    bar->addWidget(hparams_);
    bar->addWidget(compare);
    bar->addWidget(diff);
    bar->addWidget(refresh);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addWidget(table_, 1);
    layout->addWidget(count_);

    connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
        proxy_->setFilterFixedString(text);
        update_count();
    });
    connect(tags_, &QLineEdit::textChanged, model_, &RunTableModel::set_metric_filter);
    connect(last_, &QCheckBox::toggled, model_, &RunTableModel::set_show_last);
    connect(hparams_, &QCheckBox::toggled, model_, &RunTableModel::set_hparams);
    connect(compare, &QPushButton::clicked, this, [this] {
        const auto ids = selected_run_ids();
        if (!ids.empty()) emit open_runs(ids);
    });
    connect(diff, &QPushButton::clicked, this, &RunTableView::show_config_diff);
    connect(refresh, &QPushButton::clicked, this, &RunTableView::refresh_requested);
    connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        emit open_runs({index.data(RunTableModel::kRunIdRole).toLongLong()});
    });
    connect(model_, &QAbstractItemModel::modelReset, this, &RunTableView::update_count);
    table_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(table_, &QTableView::customContextMenuRequested, this, [this](const QPoint& pos) {
        const QModelIndex index = table_->indexAt(pos);
        if (!index.isValid()) return;
        const std::int64_t id = index.data(RunTableModel::kRunIdRole).toLongLong();
        QMenu menu;
        menu.addAction(tr("Open"), this, [this, id] { emit open_runs({id}); });
        menu.addAction(tr("Compare selected"), this, [this] {
            const auto ids = selected_run_ids();
            if (!ids.empty()) emit open_runs(ids);
        });
        menu.addAction(tr("Config diff"), this, &RunTableView::show_config_diff);
        menu.addSeparator();
        menu.addAction(tr("Clone…"), this, [this, id] { emit clone_requested(id); });
        menu.addAction(tr("Predict preview…"), this, [this, id] { emit preview_requested(id); });
        menu.addAction(tr("Save weights…"), this, [this, id] { emit save_weights_requested(id); });
        menu.addAction(tr("Export ONNX…"), this, [this, id] { emit export_onnx_requested(id); });
        menu.addAction(tr("Delete…"), this, [this, id] { emit delete_requested(id); });
        menu.addSeparator();
        menu.addAction(tr("Export metrics as CSV…"), this,
                       [this] { emit export_csv_requested(selected_run_ids()); });
        menu.exec(table_->viewport()->mapToGlobal(pos));
    });
}

void RunTableView::set_runs(std::vector<store::RunSummary> runs,
                            std::map<std::int64_t, QString> datasets) {
    const auto selected = selected_run_ids();
    const bool first = model_->rowCount() == 0;
    model_->set_runs(std::move(runs), std::move(datasets));
    if (first) table_->resizeColumnToContents(kName);
    select_runs(selected);  // a refresh keeps the selection
}

void RunTableView::update_count() {
    count_->setText(tr("%1 of %2 runs").arg(proxy_->rowCount()).arg(model_->rowCount()));
}

std::vector<std::int64_t> RunTableView::selected_run_ids() const {
    std::vector<std::int64_t> ids;
    for (const QModelIndex& index : table_->selectionModel()->selectedRows())
        ids.push_back(index.data(RunTableModel::kRunIdRole).toLongLong());
    return ids;
}

void RunTableView::select_runs(const std::vector<std::int64_t>& ids) {
    QItemSelection selection;
    for (int row = 0; row < proxy_->rowCount(); ++row) {
        const QModelIndex index = proxy_->index(row, 0);
        if (std::find(ids.begin(), ids.end(), index.data(RunTableModel::kRunIdRole).toLongLong()) !=
            ids.end())
            selection.select(index, index);
    }
    table_->selectionModel()->select(
        selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

void RunTableView::show_config_diff() {
    const QModelIndexList rows = table_->selectionModel()->selectedRows();
    if (rows.size() != 2) {
        QMessageBox::information(this, tr("Config diff"),
                                 tr("Select two runs to see the options that differ."));
        return;
    }
    const auto& a = model_->run(proxy_->mapToSource(rows[0]).row());
    const auto& b = model_->run(proxy_->mapToSource(rows[1]).row());
    QDialog dialog(this);
    dialog.setWindowTitle(
        tr("Config diff: %1 vs %2").arg(qs(a.info.setup.name), qs(b.info.setup.name)));
    auto* layout = new QVBoxLayout(&dialog);
    const auto diff = config_diff(a, b);
    auto* list = new QTableWidget(static_cast<int>(diff.size()), 3, &dialog);
    list->setObjectName(QStringLiteral("config_diff"));
    list->setHorizontalHeaderLabels({tr("Option"), qs(a.info.setup.name), qs(b.info.setup.name)});
    list->verticalHeader()->hide();
    list->setEditTriggers(QAbstractItemView::NoEditTriggers);
    for (int i = 0; i < static_cast<int>(diff.size()); ++i) {
        const auto& d = diff[static_cast<std::size_t>(i)];
        list->setItem(i, 0, new QTableWidgetItem(d.what));
        list->setItem(i, 1, new QTableWidgetItem(d.a));
        list->setItem(i, 2, new QTableWidgetItem(d.b));
    }
    if (diff.empty()) layout->addWidget(new QLabel(config_diff_text(a, b), &dialog));
    list->horizontalHeader()->setStretchLastSection(true);
    list->resizeColumnsToContents();
    layout->addWidget(list);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dialog);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog.resize(640, 400);
    dialog.exec();
}

}  // namespace crucible::ui
