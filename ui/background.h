#pragma once
// Long work off the GUI thread (DESIGN.md: the GUI thread never blocks on disk or network):
// run `work` on the global QThreadPool and hand its result to `done` on the GUI thread, unless
// `context` was destroyed meanwhile. Exceptions of `work` arrive as the error text.
#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QString>
#include <QThreadPool>
#include <exception>
#include <functional>
#include <memory>

namespace crucible::ui {

template <class Result>
void run_in_background(QObject* context, std::function<Result()> work,
                       std::function<void(Result result, QString error)> done) {
    QPointer<QObject> guard(context);
    QThreadPool::globalInstance()->start([guard, work = std::move(work), done = std::move(done)] {
        auto result = std::make_shared<Result>();
        QString error;
        try {
            *result = work();
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        } catch (...) {
            error = QStringLiteral("unknown error");
        }
        // Posted to the application object (which outlives every window) and checked there, on
        // the GUI thread, so a window closed meanwhile is never touched.
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [guard, done, result, error] {
                if (guard) done(std::move(*result), error);
            },
            Qt::QueuedConnection);
    });
}

}  // namespace crucible::ui
