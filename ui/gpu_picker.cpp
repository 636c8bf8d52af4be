#include "ui/gpu_picker.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QSignalBlocker>
#include <QStandardItemModel>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

#include "core/base/error.h"
#include "ui/background.h"

namespace crucible::ui {

namespace {

enum ChoiceIndex { kGpu = 0, kCpu = 1 };
// Item data of the "K GPUs" entries (the "GPU <n> only" entries keep the index as their data).
constexpr int kCountRole = Qt::UserRole + 1;
constexpr int kSetRole = Qt::UserRole + 2;  // the entry of the GPUs ticked in the list

QString gib(std::uint64_t bytes) {
    return QString::number(static_cast<double>(bytes) / (1ull << 30), 'f', 1);
}

}  // namespace

QString describe_gpu(const net::GpuInfo& g) {
    QString text = QStringLiteral("GPU %1 · %2 · %3 GiB free of %4 GiB · %5 % busy")
                       .arg(g.index)
                       .arg(g.name.empty() ? QStringLiteral("?") : QString::fromStdString(g.name))
                       .arg(gib(g.memory_free()), gib(g.memory_total))
                       .arg(g.utilization);
    if (g.temperature > 0) text += QStringLiteral(" · %1 °C").arg(g.temperature);
    if (!g.mig.empty()) text += QStringLiteral(" · %1 MIG instances").arg(g.mig.size());
    return text;
}

GpuPicker::GpuPicker(QWidget* parent, int refresh_ms) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* row = new QHBoxLayout;
    choice_ = new QComboBox(this);
    choice_->setObjectName(QStringLiteral("device"));
    choice_->addItem(tr("A free GPU (the server assigns one)"));
    choice_->addItem(tr("CPU"));
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    row->addWidget(choice_);
    row->addWidget(status_, 1);
    layout->addLayout(row);
    list_ = new QListWidget(this);
    list_->setObjectName(QStringLiteral("gpus"));
    list_->setSelectionMode(QAbstractItemView::NoSelection);
    list_->setMaximumHeight(90);
    list_->hide();
    layout->addWidget(list_);
    timer_ = new QTimer(this);
    timer_->setInterval(refresh_ms);
    connect(timer_, &QTimer::timeout, this, &GpuPicker::refresh);
    connect(choice_, &QComboBox::activated, this, [this](int index) {
        if (choice_->itemData(index, kSetRole).isValid()) return;  // the ticked GPUs, as they are
        cpu_chosen_ = index == kCpu;
        pinned_gpu_.reset();
        ticked_.clear();
        gpu_count_ = 1;
        const QVariant count = choice_->itemData(index, kCountRole);
        if (count.isValid())
            gpu_count_ = count.toInt();
        else if (index > kCpu)
            pinned_gpu_ = choice_->itemData(index).toInt();
        show_listing();  // the ticks follow
        emit choice_changed();
    });
    // Ticking GPUs in the list picks exactly those.
    connect(list_, &QListWidget::itemChanged, this, [this](QListWidgetItem*) {
        std::vector<int> ticked;
        for (int i = 0; i < list_->count(); ++i)
            if (list_->item(i)->checkState() == Qt::Checked)
                ticked.push_back(list_->item(i)->data(Qt::UserRole).toInt());
        // Queued: choosing rebuilds the list, which must not delete the item being changed.
        QMetaObject::invokeMethod(
            this,
            [this, ticked = std::move(ticked)] {
                choose_gpus(ticked);
                emit choice_changed();
            },
            Qt::QueuedConnection);
    });
    show_listing();
}

void GpuPicker::set_endpoint(std::optional<net::RemoteEndpoint> endpoint) {
    const bool same =
        endpoint.has_value() == endpoint_.has_value() &&
        (!endpoint || (endpoint->url == endpoint_->url && endpoint->token == endpoint_->token &&
                       endpoint->fingerprint == endpoint_->fingerprint));
    if (same) return;
    endpoint_ = std::move(endpoint);
    ++generation_;
    busy_ = false;
    refused_ = false;
    known_ = false;
    listing_ = {};
    show_listing();
    if (isVisible()) refresh();
}

void GpuPicker::set_refresh_interval(int ms) {
    timer_->setInterval(ms);
}

namespace {

// A GPU listing, or the server's refusal of the token (told apart from other failures, which
// arrive as errors).
struct GpuAnswer {
    net::GpuReport report;
    QString refusal;
};

}  // namespace

void GpuPicker::refresh() {
    if (!endpoint_ || busy_ || refused_) return;
    busy_ = true;
    const int generation = generation_;
    const net::RemoteEndpoint endpoint = *endpoint_;
    run_in_background<GpuAnswer>(
        this,
        [endpoint] {
            GpuAnswer answer;
            try {
                answer.report = net::ApiClient(endpoint).gpus();
            } catch (const net::ApiError& e) {
                const QString why = QString::fromUtf8(e.what());
                if (e.kind() == net::ApiErrorKind::RateLimited)
                    answer.refusal =
                        tr("this address is slowed down after wrong tokens: %1").arg(why);
                else if (e.kind() == net::ApiErrorKind::Unauthorized ||
                         e.kind() == net::ApiErrorKind::Forbidden)
                    answer.refusal = tr("the server refused the token: %1").arg(why);
                else
                    throw;
            }
            return answer;
        },
        [this, generation](GpuAnswer answer, QString error) {
            if (generation != generation_) return;  // asked of a server no longer selected
            busy_ = false;
            refused_ = !answer.refusal.isEmpty();
            if (refused_) {
                show_error(answer.refusal);
            } else if (!error.isEmpty()) {
                show_error(error);
            } else {
                listing_ = std::move(answer.report);
                known_ = true;
                show_listing();
            }
            emit refreshed();
        });
}

void GpuPicker::show_listing() {
    // Ticked GPUs that left the listing, or are no longer whole, are dropped.
    std::erase_if(ticked_, [this](int index) {
        return std::none_of(listing_.gpus.begin(), listing_.gpus.end(), [&](const auto& g) {
            return g.index == index && !g.mig_enabled && g.mig.empty();
        });
    });
    if (known_ && ticked_.size() < 2) ticked_.clear();
    {
        const QSignalBlocker quiet(list_);  // rebuilding is not the person ticking
        list_->clear();
        for (const auto& g : listing_.gpus) {
            auto* item = new QListWidgetItem(describe_gpu(g), list_);
            item->setData(Qt::UserRole, g.index);
            const bool whole = !g.mig_enabled && g.mig.empty();
            item->setFlags(whole ? Qt::ItemIsEnabled | Qt::ItemIsUserCheckable : Qt::ItemIsEnabled);
            if (whole) {
                const bool ticked =
                    std::find(ticked_.begin(), ticked_.end(), g.index) != ticked_.end() ||
                    (!cpu_chosen_ && pinned_gpu_ == g.index);
                item->setCheckState(ticked ? Qt::Checked : Qt::Unchecked);
                item->setToolTip(tr("Tick GPUs to train on exactly those, one rank each"));
            }
        }
    }
    list_->setVisible(!listing_.gpus.empty());
    const bool gpus = !listing_.gpus.empty();
    // One entry per listed GPU after "a free GPU" and "CPU"; a pinned GPU that left the listing
    // (driver reset, MIG change) falls back to "a free GPU".
    while (choice_->count() > kCpu + 1)
        choice_->removeItem(choice_->count() - 1);
    // Several GPUs, one rank each: all the whole GPUs first, then smaller counts.
    const int whole = whole_gpus();
    if (gpu_count_ > std::max(whole, 1)) gpu_count_ = 1;
    int count_entry = -1;
    for (int k = whole; k >= 2; --k) {
        choice_->addItem(k == whole ? tr("All %1 GPUs (one rank each)").arg(k)
                                    : tr("%1 free GPUs (one rank each)").arg(k));
        choice_->setItemData(choice_->count() - 1, k, kCountRole);
        if (gpu_count_ == k) count_entry = choice_->count() - 1;
    }
    int set_entry = -1;
    if (ticked_.size() >= 2) {
        QStringList names;
        for (const int g : ticked_)
            names << QString::number(g);
        choice_->addItem(tr("GPUs %1 (one rank each)").arg(names.join(QStringLiteral(", "))));
        choice_->setItemData(choice_->count() - 1, true, kSetRole);
        set_entry = choice_->count() - 1;
    }
    int pinned_entry = -1;
    for (const auto& g : listing_.gpus) {
        choice_->addItem(tr("GPU %1 only (%2)").arg(g.index).arg(QString::fromStdString(g.name)),
                         g.index);
        if (pinned_gpu_ == g.index) pinned_entry = choice_->count() - 1;
    }
    if (known_ && pinned_entry < 0) pinned_gpu_.reset();
    // Only a server that answered without GPUs is "CPU only"; unknown keeps both choices.
    choice_->setCurrentIndex(cpu_chosen_ || (known_ && !gpus) ? kCpu
                             : set_entry >= 0                 ? set_entry
                             : pinned_entry >= 0              ? pinned_entry
                             : count_entry >= 0               ? count_entry
                                                              : kGpu);
    if (auto* model = qobject_cast<QStandardItemModel*>(choice_->model()))
        if (auto* item = model->item(kGpu)) item->setEnabled(!known_ || gpus);
    if (!endpoint_)
        status_->setText(
            tr("GPUs unknown: no agent for this computer (start one, or run the "
               "command here)"));
    else if (!known_)
        status_->setText(tr("asking the server for its GPUs…"));
    else if (!gpus)
        status_->setText(tr("CPU only") + (listing_.note.empty()
                                               ? QString()
                                               : QStringLiteral(" (%1)").arg(
                                                     QString::fromStdString(listing_.note))));
    else
        status_->setText(tr("%n GPU(s)", nullptr, static_cast<int>(listing_.gpus.size())));
}

void GpuPicker::show_error(const QString& error) {
    status_->setText(tr("GPUs unknown: %1").arg(error));
}

QStringList GpuPicker::gpu_lines() const {
    QStringList out;
    for (int i = 0; i < list_->count(); ++i)
        out << list_->item(i)->text();
    return out;
}

QString GpuPicker::status_text() const {
    return status_->text();
}

bool GpuPicker::use_gpu() const {
    return !cpu_chosen_ && (!known_ || !listing_.gpus.empty());
}

void GpuPicker::choose_cpu(bool cpu) {
    cpu_chosen_ = cpu;
    if (cpu) {
        pinned_gpu_.reset();
        ticked_.clear();
    }
    show_listing();
}

void GpuPicker::choose_gpu(std::optional<int> index) {
    pinned_gpu_ = index;
    ticked_.clear();
    if (index) {
        cpu_chosen_ = false;
        gpu_count_ = 1;
    }
    show_listing();
}

void GpuPicker::choose_gpus(std::vector<int> indices) {
    std::sort(indices.begin(), indices.end());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
    if (indices.size() < 2) {
        choose_gpu(indices.empty() ? std::nullopt : std::optional<int>(indices.front()));
        return;
    }
    ticked_ = std::move(indices);
    pinned_gpu_.reset();
    cpu_chosen_ = false;
    gpu_count_ = 1;
    show_listing();
}

void GpuPicker::choose_gpu_count(int count) {
    gpu_count_ = std::max(count, 1);
    cpu_chosen_ = false;
    pinned_gpu_.reset();
    ticked_.clear();
    show_listing();
}

int GpuPicker::whole_gpus() const {
    int n = 0;
    for (const auto& g : listing_.gpus)
        n += !g.mig_enabled && g.mig.empty();
    return n;
}

std::optional<int> GpuPicker::submit_gpu() const {
    if (!use_gpu()) return std::nullopt;
    return pinned_gpu_;
}

std::vector<int> GpuPicker::submit_gpu_list() const {
    if (!use_gpu()) return {};
    if (!ticked_.empty()) return ticked_;
    return pinned_gpu_ ? std::vector<int>{*pinned_gpu_} : std::vector<int>{};
}

std::optional<int> GpuPicker::submit_gpus() const {
    if (!known_) return std::nullopt;
    if (!use_gpu()) return 0;
    return !ticked_.empty() ? static_cast<int>(ticked_.size()) : pinned_gpu_ ? 1 : gpu_count_;
}

void GpuPicker::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    refresh();
    timer_->start();
}

void GpuPicker::hideEvent(QHideEvent* event) {
    QWidget::hideEvent(event);
    timer_->stop();
}

}  // namespace crucible::ui
