#include "ui/peer_picker.h"

#include <QLabel>
#include <QListWidget>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/background.h"

namespace crucible::ui {

PeerPicker::PeerPicker(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    list_ = new QListWidget(this);
    list_->setObjectName(QStringLiteral("peers"));
    note_ = new QLabel(tr("Each ticked server trains as many ranks as this one, on one run with "
                          "one set of curves."),
                       this);
    note_->setWordWrap(true);
    note_->setStyleSheet(QStringLiteral("color:gray"));
    layout->addWidget(list_);
    layout->addWidget(note_);
    connect(list_, &QListWidget::itemChanged, this, [this] {
        wanted_ = chosen();
        emit choice_changed();
    });
    hide();
}

void PeerPicker::set_endpoint(std::optional<net::RemoteEndpoint> endpoint) {
    endpoint_ = std::move(endpoint);
    wanted_.clear();
    const int generation = ++generation_;
    show_peers({});
    if (!endpoint_) return;
    run_in_background<std::vector<std::string>>(
        this, [endpoint = *endpoint_] { return net::ApiClient(endpoint).info().peers; },
        [this, generation](std::vector<std::string> peers, QString error) {
            if (generation != generation_) return;  // asked of a server no longer chosen
            // An agent that cannot be reached says so in the GPU row already.
            show_peers(error.isEmpty() ? peers : std::vector<std::string>{});
            emit refreshed();
        });
}

void PeerPicker::show_peers(const std::vector<std::string>& peers) {
    {
        const QSignalBlocker quiet(list_);
        list_->clear();
        for (const auto& name : peers) {
            auto* item = new QListWidgetItem(QString::fromStdString(name), list_);
            item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
            item->setCheckState(wanted_.contains(QString::fromStdString(name)) ? Qt::Checked
                                                                               : Qt::Unchecked);
            item->setToolTip(tr("Also train this run's ranks on the server's peer %1")
                                 .arg(QString::fromStdString(name)));
        }
    }
    // As tall as its rows, up to five (a long peer list scrolls).
    const int rows = std::min(list_->count(), 5);
    if (rows > 0)
        list_->setFixedHeight(rows * list_->sizeHintForRow(0) + 2 * list_->frameWidth() + 2);
    setVisible(!peers.empty());
}

QStringList PeerPicker::peers() const {
    QStringList names;
    for (int i = 0; i < list_->count(); ++i)
        names << list_->item(i)->text();
    return names;
}

void PeerPicker::choose(const QStringList& names) {
    wanted_ = names;
    const QSignalBlocker quiet(list_);  // itemChanged would take the half-applied ticks as wanted
    for (int i = 0; i < list_->count(); ++i)
        list_->item(i)->setCheckState(names.contains(list_->item(i)->text()) ? Qt::Checked
                                                                             : Qt::Unchecked);
    emit choice_changed();
}

QStringList PeerPicker::chosen() const {
    QStringList names;
    for (int i = 0; i < list_->count(); ++i)
        if (list_->item(i)->checkState() == Qt::Checked) names << list_->item(i)->text();
    return names;
}

std::vector<net::ServerRanks> PeerPicker::submit_servers() const {
    std::vector<net::ServerRanks> servers;
    for (const QString& name : chosen())
        servers.push_back({name.toStdString(), std::nullopt, {}});
    return servers;
}

}  // namespace crucible::ui
