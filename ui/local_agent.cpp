#include "ui/local_agent.h"

#include <QDir>
#include <QFileInfo>
#include <QHostAddress>
#include <QProcess>
#include <QTcpServer>
#include <QTimer>
#include <chrono>
#include <thread>

#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/secret_store.h"
#include "core/base/sha256.h"
#include "core/net/token_store.h"
#include "ui/background.h"

namespace crucible::ui {

namespace {

constexpr int kHeartbeatMs = 60 * 1000;  // well under any idle exit a person would set

std::filesystem::path endpoint_file(const QString& data_dir) {
    return path_from_utf8(data_dir.toStdString()) / "studio-agent.json";
}

std::filesystem::path console_file(const QString& data_dir) {
    return path_from_utf8(data_dir.toStdString()) / "agent-console.log";
}

}  // namespace

LocalAgent::LocalAgent(QString agent, QString data_dir, QString worker, QObject* parent,
                       QStringList extra_args)
    : QObject(parent),
      agent_(std::move(agent)),
      data_dir_(std::move(data_dir)),
      worker_(std::move(worker)),
      extra_args_(std::move(extra_args)) {
    heartbeat_ = new QTimer(this);
    heartbeat_->setInterval(kHeartbeatMs);
    connect(heartbeat_, &QTimer::timeout, this, [this] {
        if (!ready_) return;
        const auto endpoint = endpoint_;
        const int attempt = attempt_;
        run_in_background<bool>(
            this,
            [endpoint] {
                net::ApiClient(endpoint).info();  // a request with the token: not idle
                return true;
            },
            [this, attempt](bool, QString error) {
                if (attempt != attempt_ || error.isEmpty() || !ready_) return;
                ready_ = false;
                heartbeat_->stop();
                emit failed(tr("the local agent stopped answering: %1").arg(error));
            });
    });
}

LocalAgent::~LocalAgent() = default;

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

std::string LocalAgent::secret_key() const {
    return "local-agent:" + QDir(data_dir_).absolutePath().toStdString();
}

QString LocalAgent::console_tail() const {
    try {
        const std::string text = read_file_bytes(console_file(data_dir_));
        return QString::fromStdString(text.substr(text.size() > 2000 ? text.size() - 2000 : 0))
            .trimmed();
    } catch (const std::exception&) {
        return {};
    }
}

void LocalAgent::start() {
    if (running()) return;
    starting_ = true;
    adopted_ = false;
    ++attempt_;
    // The agent of an earlier studio, when it still answers with the token kept for it.
    try {
        std::error_code ec;
        const auto file = endpoint_file(data_dir_);
        if (std::filesystem::exists(file, ec)) {
            const Json j = parse_json(read_file_bytes(file), path_to_utf8(file));
            endpoint_ = {};
            endpoint_.url = j.value("url", std::string());
            // Without its token an agent still running there is told apart from none.
            endpoint_.token = SecretStore::open_default()->get(secret_key()).value_or("");
            if (!endpoint_.url.empty()) {
                wait_until_ready(true);
                return;
            }
        }
    } catch (const std::exception&) {
        // Nothing to adopt: a new agent is started.
    }
    spawn();
}

void LocalAgent::spawn() {
    int port = 0;
    {
        // A free loopback port (the agent binds it a moment later).
        QTcpServer probe;
        if (!probe.listen(QHostAddress::LocalHost, 0)) {
            starting_ = false;
            emit failed(tr("no free port on 127.0.0.1"));
            return;
        }
        port = probe.serverPort();
    }
    try {
        QDir().mkpath(data_dir_);
        const std::string token = random_hex(32);
        const auto data = path_from_utf8(data_dir_.toStdString());
        net::TokenStore tokens(data / "tokens.json");
        tokens.add_hashed("studio-local", sha256_hex(token));
        share_this_computer(data / "agent.json");
        endpoint_ = {};
        endpoint_.url = "http://127.0.0.1:" + std::to_string(port);
        endpoint_.token = token;
        SecretStore::open_default()->put(secret_key(), token);
        write_file_atomically(endpoint_file(data_dir_), Json{{"url", endpoint_.url}}.dump() + "\n");
    } catch (const std::exception& e) {
        starting_ = false;
        emit failed(tr("cannot prepare the local agent: %1").arg(QString::fromUtf8(e.what())));
        return;
    }
    QStringList args = {QStringLiteral("--listen"),    QStringLiteral("127.0.0.1:%1").arg(port),
                        QStringLiteral("--data"),      data_dir_,
                        QStringLiteral("--idle-exit"), QString::number(idle_exit_s_)};
    if (!worker_.isEmpty()) args << QStringLiteral("--worker") << worker_;
    args << extra_args_;
    // Detached: its output goes to a file and it is nobody's child, so it keeps training when
    // the studio closes.
    QProcess process;
    process.setProgram(agent_);
    process.setArguments(args);
    process.setStandardInputFile(QProcess::nullDevice());
    const QString console = QString::fromStdString(path_to_utf8(console_file(data_dir_)));
    process.setStandardOutputFile(console, QIODevice::Append);
    process.setStandardErrorFile(console, QIODevice::Append);
    if (!process.startDetached()) {
        starting_ = false;
        emit failed(tr("cannot start %1: %2").arg(agent_, process.errorString()));
        return;
    }
    wait_until_ready(false);
}

void LocalAgent::wait_until_ready(bool adopting) {
    const auto endpoint = endpoint_;
    const int attempt = attempt_;
    // An agent being adopted answers at once or not at all; a new one gets ~20 s to start.
    const int tries = adopting ? 1 : 200;
    enum class Answer { Ours, Other, None };
    run_in_background<Answer>(
        this,
        [endpoint, tries] {
            for (int i = 0; i < tries && !net::ApiClient::requests_stopped(); ++i) {
                try {
                    net::ApiClient(endpoint).info();  // with the token: it is ours
                    return Answer::Ours;
                } catch (const std::exception&) {
                    if (i + 1 < tries) std::this_thread::sleep_for(std::chrono::milliseconds(100));
                }
            }
            try {
                net::ApiClient(endpoint).health();  // answers without a token
                return Answer::Other;
            } catch (const std::exception&) {
                return Answer::None;
            }
        },
        [this, attempt, adopting](Answer answer, QString error) {
            if (attempt != attempt_ || !starting_) return;  // stopped or restarted meanwhile
            if (adopting && answer == Answer::Other) {
                // An agent runs there but refuses the kept token: a second one on the same data
                // folder would run the same jobs twice.
                starting_ = false;
                emit failed(
                    tr("an agent from before answers at %1 but not to the token kept for "
                       "it; stop it (it ends by itself when idle) or remove %2")
                        .arg(QString::fromStdString(endpoint_.url),
                             QString::fromStdString(path_to_utf8(endpoint_file(data_dir_)))));
                return;
            }
            if (answer != Answer::Ours || !error.isEmpty()) {
                if (adopting) return spawn();  // gone: a new one
                starting_ = false;
                emit failed(tr("the local agent did not answer: %1").arg(console_tail()));
                return;
            }
            starting_ = false;
            ready_ = true;
            adopted_ = adopting;
            heartbeat_->start();
            emit started_ok();
        });
}

void LocalAgent::stop() {
    ++attempt_;
    starting_ = false;
    ready_ = false;
    heartbeat_->stop();
}

}  // namespace crucible::ui
