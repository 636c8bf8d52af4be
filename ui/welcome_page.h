#pragma once
// The first thing the studio shows when no project is open: what a person can start with (a new
// project, an existing one, the demo, a dataset folder to import, a server to connect) and the
// recent projects. It only says what was chosen; the main window does it.
#include <QStringList>
#include <QWidget>

class QListWidget;

namespace crucible::ui {

class WelcomePage : public QWidget {
    Q_OBJECT
  public:
    explicit WelcomePage(const QStringList& recent_projects, QWidget* parent = nullptr);
    QListWidget* recent_list() const { return recent_; }

  signals:
    void new_project();
    void open_project();
    void open_demo();
    void import_dataset();
    void add_server();
    void open_recent(const QString& file);

  private:
    QListWidget* recent_ = nullptr;
};

}  // namespace crucible::ui
