#include "ui/log_console.h"

#include <QDateTime>
#include <QMetaObject>
#include <QThread>

#include "ui/theme.h"

namespace crucible::ui {

LogConsole::LogConsole(QWidget* parent) : QPlainTextEdit(parent) {
    setReadOnly(true);
    setMaximumBlockCount(5000);
    setLineWrapMode(QPlainTextEdit::NoWrap);
    setFont(fixed_width_font());
}

void LogConsole::append_line(const QString& level, const QString& message) {
    if (QThread::currentThread() != thread()) {
        QMetaObject::invokeMethod(
            this, [this, level, message] { append_line(level, message); }, Qt::QueuedConnection);
        return;
    }
    const QString time = QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss"));
    appendPlainText(QStringLiteral("%1 [%2] %3").arg(time, level, message));
}

}  // namespace crucible::ui
