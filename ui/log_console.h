#pragma once
// The studio's log console (a dock): timestamped lines with a level, capped so a chatty run
// never grows the widget without bound. Safe to call from any thread (queued to the GUI).
#include <QPlainTextEdit>
#include <QString>

namespace crucible::ui {

class LogConsole : public QPlainTextEdit {
    Q_OBJECT
  public:
    explicit LogConsole(QWidget* parent = nullptr);
    // level: log_level_name() of core/base/log.h ("info", "warning", "error", "debug").
    void append_line(const QString& level, const QString& message);
    int line_count() const { return blockCount(); }
};

}  // namespace crucible::ui
