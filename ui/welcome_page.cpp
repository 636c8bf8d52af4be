#include "ui/welcome_page.h"

#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace crucible::ui {

namespace {

QPushButton* action_button(const QString& title, const QString& detail, QWidget* parent) {
    auto* b = new QPushButton(title + QStringLiteral("\n") + detail, parent);
    b->setMinimumHeight(64);
    b->setStyleSheet(QStringLiteral("text-align: left; padding: 8px 14px;"));
    return b;
}

}  // namespace

WelcomePage::WelcomePage(const QStringList& recent_projects, QWidget* parent) : QWidget(parent) {
    auto* title = new QLabel(tr("<h1>Crucible Studio</h1>"
                                "<p>Build datasets, train YOLO detectors and LoRA adapters on "
                                "this computer or a GPU server, and watch them learn.</p>"),
                             this);
    title->setWordWrap(true);

    struct Entry {
        QString title, detail;
        void (WelcomePage::*signal)();
    };
    const Entry entries[] = {
        {tr("New project…"), tr("An empty project file (Ctrl+N)"), &WelcomePage::new_project},
        {tr("Open project…"), tr("A .crucible file (Ctrl+O)"), &WelcomePage::open_project},
        {tr("Open the demo"), tr("A small synthetic dataset and three example runs to compare"),
         &WelcomePage::open_demo},
        {tr("Import a dataset…"), tr("A YOLO, COCO or VOC folder; a project is made for it"),
         &WelcomePage::import_dataset},
        {tr("Connect a server…"), tr("A GPU server running crucible-agent"),
         &WelcomePage::add_server},
    };
    auto* actions = new QVBoxLayout;
    for (const Entry& e : entries) {
        auto* button = action_button(e.title, e.detail, this);
        button->setObjectName(e.title);
        connect(button, &QPushButton::clicked, this, e.signal);
        actions->addWidget(button);
    }
    actions->addStretch(1);

    recent_ = new QListWidget(this);
    recent_->setObjectName(QStringLiteral("recent_projects"));
    for (const QString& file : recent_projects) {
        auto* item = new QListWidgetItem(QFileInfo(file).fileName() + QStringLiteral("\n") + file);
        item->setData(Qt::UserRole, file);
        item->setToolTip(file);
        if (!QFileInfo::exists(file)) {
            item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
            item->setToolTip(tr("%1 (no longer there)").arg(file));
        }
        recent_->addItem(item);
    }
    if (recent_projects.isEmpty()) recent_->addItem(tr("No recent projects yet"));
    connect(recent_, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
        const QString file = item->data(Qt::UserRole).toString();
        if (!file.isEmpty()) emit open_recent(file);
    });

    auto* grid = new QGridLayout;
    grid->addLayout(actions, 0, 0);
    auto* recent_box = new QVBoxLayout;
    recent_box->addWidget(new QLabel(tr("<b>Recent projects</b>"), this));
    recent_box->addWidget(recent_, 1);
    grid->addLayout(recent_box, 0, 1);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(48, 32, 48, 32);
    layout->addWidget(title);
    layout->addSpacing(16);
    layout->addLayout(grid, 1);
    auto* hint = new QLabel(tr("Tip: drop a dataset folder on the window to import it."), this);
    hint->setEnabled(false);
    layout->addWidget(hint);
}

}  // namespace crucible::ui
