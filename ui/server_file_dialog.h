#pragma once
// Picks a file (or folder) on a GPU server through the agent's /v1/fs: the folders its
// agent.json shares ('roots') and what they hold. Used by path options of a run that goes to a
// remote server, e.g. pretrained weights that already live there.
#include <QDialog>
#include <QString>

#include "core/base/json.h"
#include "core/net/api_client.h"

class QLabel;
class QListWidget;
class QListWidgetItem;

namespace crucible::ui {

class ServerFileDialog : public QDialog {
    Q_OBJECT
  public:
    ServerFileDialog(net::RemoteEndpoint endpoint, QWidget* parent = nullptr);

    // Shows the shared roots ("" ) or a folder on the server; the listing arrives in the
    // background and `listed` is emitted (or the error is shown).
    void open_folder(const QString& path);
    QString folder() const { return folder_; }
    QString selected_path() const { return selected_; }
    // Names shown for the current folder ("../" first when there is a parent, folders end in /).
    QStringList entry_names() const;
    // Chooses an entry by its shown name: a folder opens, a file is selected and the dialog
    // accepted.
    void choose(const QString& name);

    // Runs the dialog; the chosen server path or an empty string.
    static QString pick(const net::RemoteEndpoint& endpoint, QWidget* parent);

  signals:
    void listed();

  private:
    void show_listing(const net::FolderListing& listing);

    net::RemoteEndpoint endpoint_;
    QLabel* where_ = nullptr;
    QLabel* error_ = nullptr;
    QListWidget* list_ = nullptr;
    QString folder_, selected_;
    QStringList roots_;
};

}  // namespace crucible::ui
