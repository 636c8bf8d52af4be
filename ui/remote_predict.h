#pragma once
// Predictions on a server's GPU, for pre-labelling when the person works from a workstation: the
// chosen images (staged in one folder, see predictor.h) and the model go up as the inputs of a
// job that runs the task's `predict` command on the agent (content-addressed, so images and
// weights the agent has already are not sent again), and the label files come back from the
// job's artifacts. Progress is the count of label files the job has written; cancel cancels the
// job. Every call to the agent runs off the GUI thread (background.h).
#include <QString>
#include <QStringList>
#include <memory>

#include "core/net/api_client.h"
#include "ui/predictor.h"

class QTimer;

namespace crucible::ui {

class RemotePredict : public Predictor {
    Q_OBJECT
  public:
    // `server` names the agent in messages; `extra_args` are more key=value words for the
    // command (an image size).
    RemotePredict(net::RemoteEndpoint endpoint, QString server, QString task,
                  std::filesystem::path weights, std::vector<std::filesystem::path> images,
                  QStringList extra_args = {}, QObject* parent = nullptr);
    ~RemotePredict() override;

    void start() override;
    void cancel() override;

    const std::string& job_id() const { return job_; }

  private:
    void poll();
    void fetch_results();
    void cancel_job();

    net::RemoteEndpoint endpoint_;
    QString server_, task_;
    std::filesystem::path weights_;
    QStringList extra_args_;
    QTimer* timer_ = nullptr;
    std::string job_;
    bool polling_ = false, canceled_ = false;
    int failed_polls_ = 0;  // in a row
};

}  // namespace crucible::ui
