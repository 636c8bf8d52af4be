#pragma once
// How the studio predicts: `crucible predict <task> source=… model=… save_txt=true` (the command
// line next to the studio, so this works where LibTorch is, e.g. on the GPU server over RDP) on
// chosen images, in the background (QProcess). The images are staged in a temporary folder
// (predictor.h), every detection down to confidence 0.001 is read back per image, and the
// command's "image n/N" lines report progress. The predict preview and model-assisted labelling
// both use it; RemotePredict (remote_predict.h) does the same on a server's GPU.
#include <QString>
#include <QStringList>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ui/predictor.h"

class QProcess;

namespace crucible::ui {

class PredictProcess : public Predictor {
    Q_OBJECT
  public:
    // `program`: the crucible command line; `task`: the task id; `extra_args`: more key=value
    // words for the command (an image size).
    PredictProcess(QString program, QString task, std::filesystem::path weights,
                   std::vector<std::filesystem::path> images, QStringList extra_args = {},
                   QObject* parent = nullptr);
    ~PredictProcess() override;

    void start() override;
    void cancel() override;

  private:
    QString program_, task_;
    std::filesystem::path weights_;
    QStringList extra_args_;
    QProcess* process_ = nullptr;
    bool canceled_ = false;
    QByteArray pending_output_;
    QString output_;
};

}  // namespace crucible::ui
