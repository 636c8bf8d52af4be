#pragma once
// "This computer": the studio's private crucible-agent on 127.0.0.1 (DESIGN.md "Processes"), used
// when the GUI runs on the GPU server itself (e.g. over RDP). The studio picks a free loopback
// port, gives the agent a fresh random token (only its hash is written, to the agent's token
// file; the token itself goes to the user's SecretStore), starts it detached and waits for
// /v1/health in the background. The studio then talks to it exactly as to a remote agent: one
// code path.
//
// The agent outlives the studio: training goes on when the window closes, and the agent ends by
// itself once it has had no job and no request for `idle_exit_s` (--idle-exit). The next studio
// adopts a running agent (its endpoint in <data>/studio-agent.json, its token in the
// SecretStore) instead of starting a second one; while the studio is open it calls the agent
// every minute, so the agent never idles out under it.
#include <QObject>
#include <QString>
#include <filesystem>

#include "core/net/api_client.h"

class QTimer;

namespace crucible::ui {

class LocalAgent : public QObject {
    Q_OBJECT
  public:
    static constexpr int kDefaultIdleExit = 900;  // seconds

    // `agent` is the crucible-agent executable; `data_dir` its data folder (jobs, blobs, tokens).
    // `extra_args` go to the agent as they are (tests: a fake NVML).
    LocalAgent(QString agent, QString data_dir, QString worker = {}, QObject* parent = nullptr,
               QStringList extra_args = {});
    // Leaves the agent running: its jobs go on (it ends by itself when idle).
    ~LocalAgent() override;

    // Adopts the agent a studio started before when it answers with the stored token;
    // otherwise starts a new one. started_ok or failed says how it went.
    void start();
    // Stops using the agent (the process ends by itself after idle_exit_s without work).
    void stop();
    void set_idle_exit(int seconds) { idle_exit_s_ = seconds; }
    bool running() const { return starting_ || ready_; }
    bool ready() const { return ready_; }
    bool adopted() const { return adopted_; }  // it was running before start()
    const net::RemoteEndpoint& endpoint() const { return endpoint_; }
    // The SecretStore key of this data folder's agent token.
    std::string secret_key() const;

  signals:
    void started_ok();
    void failed(const QString& message);

  private:
    static void share_this_computer(const std::filesystem::path& config_file);
    void spawn();
    void wait_until_ready(bool adopting);
    QString console_tail() const;

    QString agent_, data_dir_, worker_;
    QStringList extra_args_;
    int idle_exit_s_ = kDefaultIdleExit;
    net::RemoteEndpoint endpoint_;
    bool starting_ = false, ready_ = false, adopted_ = false;
    int attempt_ = 0;  // answers of an older start() are dropped
    QTimer* heartbeat_ = nullptr;
};

}  // namespace crucible::ui
