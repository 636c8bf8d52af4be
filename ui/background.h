#pragma once
// Long work off the GUI thread (DESIGN.md: the GUI thread never blocks on disk or network):
// run `work` on the global QThreadPool and hand its result to `done` on the GUI thread, unless
// `context` was destroyed meanwhile. Exceptions of `work` arrive as the error text.
// end_background_work() is the studio's last step: the pool is waited for when the application
// object goes, and a call to a stalled agent would hold the process that long.
#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QString>
#include <QThreadPool>
#include <chrono>
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

// Ends every agent call in flight (net::ApiClient::stop_all_requests: their `done` receives the
// error) and waits up to `limit` for the pool's work to end. Returns whether it did; disk work
// (a dataset import) ends at its own pace, and the pool waits for it when the application goes.
bool end_background_work(std::chrono::milliseconds limit = std::chrono::seconds(2));

}  // namespace crucible::ui
