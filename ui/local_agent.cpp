#include "ui/local_agent.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QHostAddress>
#include <QTcpServer>
#include <chrono>
#include <thread>

#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/sha256.h"
#include "core/net/token_store.h"
#include "ui/background.h"

namespace crucible::ui {

LocalAgent::LocalAgent(QString agent, QString data_dir, QString worker, QObject* parent)
    : QObject(parent),
      agent_(std::move(agent)),
      data_dir_(std::move(data_dir)),
      worker_(std::move(worker)) {
    process_.setProcessChannelMode(QProcess::MergedChannels);
    connect(&process_, &QProcess::readyRead, this, [this] {
        output_ += QString::fromUtf8(process_.readAll());
        if (output_.size() > 20000) output_ = output_.right(10000);
    });
    connect(&process_, &QProcess::finished, this, [this](int code) {
        const bool was_ready = ready_;
        ready_ = false;
        if (!was_ready || code != 0)
            emit failed(tr("the local agent stopped (exit %1): %2")
                            .arg(code)
                            .arg(output_.right(2000).trimmed()));
    });
}

LocalAgent::~LocalAgent() {
    stop();
}

QString LocalAgent::find_program() {
    const QString dir = QCoreApplication::applicationDirPath();
    for (const QString& c :
         {dir + QStringLiteral("/crucible-agent"), dir + QStringLiteral("/crucible-agent.exe"),
          dir + QStringLiteral("/../agent/crucible-agent")})
        if (QFileInfo(c).isExecutable()) return QFileInfo(c).absoluteFilePath();
    return {};
}

// The private agent works for the person at this desk, on their own files: a job may name any
// path they can read, so its shared roots are every drive (on POSIX, "/"). A person's own
// agent.json with roots of its own is kept as it is.
void LocalAgent::share_this_computer(const std::filesystem::path& config_file) {
    Json config = Json::object();
    std::error_code ec;
    if (std::filesystem::exists(config_file, ec))
        config = parse_json(read_file_bytes(config_file), path_to_utf8(config_file));
    if (!config.is_object() || config.contains("roots")) return;
    Json roots = Json::array();
    for (const QFileInfo& drive : QDir::drives())
        roots.push_back(drive.absoluteFilePath().toStdString());
    config["roots"] = roots;
    write_file_atomically(config_file, config.dump(2) + "\n");
}

void LocalAgent::start() {
    if (running()) return;
    ready_ = false;
    output_.clear();
    int port = 0;
    {
        // A free loopback port (the agent binds it a moment later).
        QTcpServer probe;
        if (!probe.listen(QHostAddress::LocalHost, 0)) {
            emit failed(tr("no free port on 127.0.0.1"));
            return;
        }
        port = probe.serverPort();
    }
    try {
        QDir().mkpath(data_dir_);
        const std::string token = random_hex(32);
        net::TokenStore tokens(path_from_utf8(data_dir_.toStdString()) / "tokens.json");
        tokens.add_hashed("studio-local", sha256_hex(token));
        share_this_computer(path_from_utf8(data_dir_.toStdString()) / "agent.json");
        endpoint_ = {};
        endpoint_.url = "http://127.0.0.1:" + std::to_string(port);
        endpoint_.token = token;
    } catch (const std::exception& e) {
        emit failed(tr("cannot prepare the local agent: %1").arg(QString::fromUtf8(e.what())));
        return;
    }
    QStringList args = {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(port),
                        QStringLiteral("--data"), data_dir_};
    if (!worker_.isEmpty()) args << QStringLiteral("--worker") << worker_;
    process_.start(agent_, args);
    const auto endpoint = endpoint_;
    // Wait for /v1/health off the GUI thread (at most ~20 s).
    run_in_background<bool>(
        this,
        [endpoint] {
            for (int i = 0; i < 200 && !net::ApiClient::requests_stopped(); ++i) {
                try {
                    net::ApiClient(endpoint).health();
                    return true;
                } catch (const std::exception&) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                }
            }
            return false;
        },
        [this](bool ok, QString error) {
            if (!running()) return;  // `failed` was emitted by the exit handler
            if (!ok || !error.isEmpty()) {
                emit failed(tr("the local agent did not answer: %1").arg(output_.right(2000)));
                return;
            }
            ready_ = true;
            emit started_ok();
        });
}

void LocalAgent::stop() {
    if (!running()) return;
    ready_ = false;
    process_.blockSignals(true);
    process_.terminate();  // SIGTERM: the agent checkpoints its jobs and exits
    if (!process_.waitForFinished(10000)) {
        process_.kill();
        process_.waitForFinished(2000);
    }
    process_.blockSignals(false);
}

}  // namespace crucible::ui
