#pragma once
// "This computer": the studio's private crucible-agent on 127.0.0.1 (DESIGN.md "Processes"), used
// when the GUI runs on the GPU server itself (e.g. over RDP). The studio picks a free loopback
// port, gives the agent a fresh random token (only its hash is written, to the agent's token
// file), starts it, waits for /v1/health in the background, and stops it on exit. The studio then
// talks to it exactly as to a remote agent: one code path.
#include <QObject>
#include <QProcess>
#include <QString>
#include <filesystem>

#include "core/net/api_client.h"

namespace crucible::ui {

class LocalAgent : public QObject {
    Q_OBJECT
  public:
    // `agent` is the crucible-agent executable; `data_dir` its data folder (jobs, blobs, tokens).
    LocalAgent(QString agent, QString data_dir, QString worker = {}, QObject* parent = nullptr);
    ~LocalAgent() override;

    void start();
    void stop();
    bool running() const { return process_.state() != QProcess::NotRunning; }
    bool ready() const { return ready_; }
    const net::RemoteEndpoint& endpoint() const { return endpoint_; }

    // crucible-agent next to the studio (installed layout) or in the build tree; empty if none.
    static QString find_program();

  signals:
    void started_ok();
    void failed(const QString& message);

  private:
    static void share_this_computer(const std::filesystem::path& config_file);

    QString agent_, data_dir_, worker_;
    QProcess process_;
    net::RemoteEndpoint endpoint_;
    bool ready_ = false;
    QString output_;
};

}  // namespace crucible::ui
