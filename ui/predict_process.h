#pragma once
// How the studio predicts: `crucible predict <task> source=… model=… save_txt=true` (the command
// line next to the studio, so this works where LibTorch is, e.g. on the GPU server over RDP) on
// chosen images, in the background (QProcess). The images are staged in a temporary folder
// (hard links where the file system allows), every detection down to confidence 0.001 is read
// back per image, and the command's "image n/N" lines report progress. The predict preview and
// model-assisted labelling both use it.
#include <QObject>
#include <QString>
#include <QStringList>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

class QProcess;
class QTemporaryDir;

namespace crucible::ui {

struct Detection {
    int cls = 0;
    double cx = 0, cy = 0, w = 0, h = 0;  // normalized, as label files hold them
    double conf = 0;
};

// Rows `class cx cy w h conf` of a predictions label file; rows that do not read are skipped.
std::vector<Detection> parse_detections(const std::string& text);

class PredictProcess : public QObject {
    Q_OBJECT
  public:
    static constexpr double kLowestConfidence = 0.001;  // what is predicted; views filter

    // `program`: the crucible command line; `task`: the task id; `extra_args`: more key=value
    // words for the command (an image size).
    PredictProcess(QString program, QString task, std::filesystem::path weights,
                   std::vector<std::filesystem::path> images, QStringList extra_args = {},
                   QObject* parent = nullptr);
    ~PredictProcess() override;

    void start();
    // Stops the command; done(false) follows with error() "canceled".
    void cancel();
    bool finished() const { return finished_; }
    QString error() const { return error_; }
    // Per image, in the order given (empty for an image the command skipped).
    const std::vector<std::vector<Detection>>& detections() const { return detections_; }
    const std::vector<std::filesystem::path>& images() const { return images_; }

  signals:
    void progress(int done, int total);
    void done(bool ok);

  private:
    void fail(const QString& message);
    void read_results();

    QString program_, task_;
    std::filesystem::path weights_;
    std::vector<std::filesystem::path> images_;
    QStringList extra_args_;
    std::unique_ptr<QTemporaryDir> work_;
    QProcess* process_ = nullptr;
    bool finished_ = false, canceled_ = false;
    QString error_;
    QByteArray pending_output_;
    QString output_;
    std::vector<std::vector<Detection>> detections_;
};

}  // namespace crucible::ui
