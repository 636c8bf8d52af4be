#include "ui/server_file_dialog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>
#include <map>

#include "ui/background.h"

namespace crucible::ui {

namespace {

constexpr int kPathRole = Qt::UserRole;
constexpr int kIsDirRole = Qt::UserRole + 1;

QString join_path(const QString& folder, const QString& name) {
    return folder.endsWith('/') || folder.endsWith('\\') ? folder + name
                                                         : folder + QStringLiteral("/") + name;
}

void add_entry(QListWidget* list, const QString& shown, const QString& path, bool is_dir) {
    auto* item = new QListWidgetItem(shown, list);
    item->setData(kPathRole, path);
    item->setData(kIsDirRole, is_dir);
}

}  // namespace

ServerFileDialog::ServerFileDialog(net::RemoteEndpoint endpoint, QWidget* parent)
    : QDialog(parent), endpoint_(std::move(endpoint)) {
    setWindowTitle(tr("Choose a file on the server"));
    auto* layout = new QVBoxLayout(this);
    where_ = new QLabel(this);
    where_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    list_ = new QListWidget(this);
    list_->setObjectName(QStringLiteral("entries"));
    error_ = new QLabel(this);
    error_->setObjectName(QStringLiteral("error"));
    error_->setWordWrap(true);
    error_->setStyleSheet(QStringLiteral("color: #c0392b"));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    layout->addWidget(where_);
    layout->addWidget(list_, 1);
    layout->addWidget(error_);
    layout->addWidget(buttons);
    connect(list_, &QListWidget::itemActivated, this,
            [this](QListWidgetItem* item) { choose(item->text()); });
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        // OK on a folder picks the folder itself (a dataset folder, say).
        auto* item = list_->currentItem();
        if (!item || item->text() == QStringLiteral("../")) return;
        selected_ = item->data(kPathRole).toString();
        accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    resize(560, 420);
    open_folder({});
}

void ServerFileDialog::open_folder(const QString& path) {
    error_->clear();
    where_->setText(path.isEmpty() ? tr("Shared folders of the server") : path);
    const auto endpoint = endpoint_;
    const std::string folder = path.toStdString();
    run_in_background<net::FolderListing>(
        this, [endpoint, folder] { return net::ApiClient(endpoint).list_folder(folder); },
        [this, path](net::FolderListing listing, QString error) {
            if (!error.isEmpty()) {
                error_->setText(error);
                emit listed();
                return;
            }
            folder_ = path;
            show_listing(listing);
            emit listed();
        });
}

void ServerFileDialog::show_listing(const net::FolderListing& listing) {
    list_->clear();
    if (folder_.isEmpty()) {
        roots_.clear();
        for (const auto& r : listing.roots)
            roots_ << QString::fromStdString(r);
        for (const QString& r : roots_)
            add_entry(list_, r.endsWith('/') ? r : r + QStringLiteral("/"), r, true);
        if (roots_.isEmpty())
            error_->setText(
                tr("This server shares no folders: add them to 'roots' in the "
                   "agent's agent.json."));
        return;
    }
    const bool at_root = roots_.contains(folder_);
    const qsizetype slash = folder_.lastIndexOf('/');
    // Up one folder; above a shared root is the list of roots.
    add_entry(list_, QStringLiteral("../"), at_root || slash <= 0 ? QString() : folder_.left(slash),
              true);
    for (const auto& e : listing.entries) {
        const QString name = QString::fromStdString(e.name);
        add_entry(list_, e.dir ? name + QStringLiteral("/") : name, join_path(folder_, name),
                  e.dir);
    }
}

QStringList ServerFileDialog::entry_names() const {
    QStringList names;
    for (int i = 0; i < list_->count(); ++i)
        names << list_->item(i)->text();
    return names;
}

void ServerFileDialog::choose(const QString& name) {
    for (int i = 0; i < list_->count(); ++i) {
        const QListWidgetItem* item = list_->item(i);
        if (item->text() != name) continue;
        if (item->data(kIsDirRole).toBool()) {
            open_folder(item->data(kPathRole).toString());
        } else {
            selected_ = item->data(kPathRole).toString();
            accept();
        }
        return;
    }
}

QString ServerFileDialog::pick(const net::RemoteEndpoint& endpoint, QWidget* parent) {
    ServerFileDialog dialog(endpoint, parent);
    return dialog.exec() == QDialog::Accepted ? dialog.selected_path() : QString();
}

}  // namespace crucible::ui
