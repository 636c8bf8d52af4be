#pragma once
// Predict preview of a run (Ultralytics HUB's "Preview"): the run's weights on images the person
// picks, through `crucible predict <task> source=… model=… save_txt=true` (the command line next
// to the studio, so this works where LibTorch is, e.g. on the GPU server over RDP). Every
// detection down to confidence 0.001 is kept; the confidence slider picks which are drawn
// without predicting again. The command runs in the background (QProcess); its output lands in
// the log line under the pictures when it fails.
#include <QString>
#include <QTemporaryDir>
#include <QWidget>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

class QLabel;
class QListWidget;
class QProcess;
class QSlider;

namespace crucible::ui {

struct Detection {
    int cls = 0;
    double cx = 0, cy = 0, w = 0, h = 0;  // normalized, as label files hold them
    double conf = 0;
};

// Rows `class cx cy w h conf` of a predictions label file; rows that do not read are skipped.
std::vector<Detection> parse_detections(const std::string& text);

class PredictPreview : public QWidget {
    Q_OBJECT
  public:
    static constexpr double kLowestConfidence = 0.001;  // what is predicted; the slider filters

    // `program`: the crucible command line; `task`: the run's task id; `extra_args`: more
    // key=value words for the command (the run's image size).
    PredictPreview(QString program, QString task, std::filesystem::path weights,
                   std::vector<std::filesystem::path> images, std::vector<std::string> class_names,
                   QStringList extra_args = {}, QWidget* parent = nullptr);
    ~PredictPreview() override;

    void start();
    bool finished() const { return finished_; }
    QString error() const { return error_; }
    void set_confidence(double conf);
    double confidence() const { return confidence_; }
    // Detections drawn at the current confidence, over every image.
    int shown_detections() const;
    const std::vector<std::vector<Detection>>& detections() const { return detections_; }
    QListWidget* pictures() const { return pictures_; }

  signals:
    void done(bool ok);

  private:
    void read_results();
    void redraw();

    QString program_, task_;
    std::filesystem::path weights_;
    std::vector<std::filesystem::path> images_;
    std::vector<std::string> class_names_;
    QStringList extra_args_;
    std::unique_ptr<QTemporaryDir> work_;
    QProcess* process_ = nullptr;
    bool finished_ = false;
    QString error_;
    double confidence_ = 0.25;
    std::vector<std::vector<Detection>> detections_;  // per image
    QListWidget* pictures_ = nullptr;
    QSlider* slider_ = nullptr;
    QLabel* status_ = nullptr;
};

}  // namespace crucible::ui
