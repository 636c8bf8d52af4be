#pragma once
// Predict preview of a run (Ultralytics HUB's "Preview"): the run's weights on images the person
// picks, through PredictProcess (the command line next to the studio). Every detection down to
// confidence 0.001 is kept; the confidence slider picks which are drawn without predicting
// again. The command's output lands in the line under the pictures when it fails.
#include <QString>
#include <QWidget>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ui/predict_process.h"

class QLabel;
class QListWidget;
class QSlider;

namespace crucible::ui {

class PredictPreview : public QWidget {
    Q_OBJECT
  public:
    static constexpr double kLowestConfidence = PredictProcess::kLowestConfidence;

    // `program`: the crucible command line; `task`: the run's task id; `extra_args`: more
    // key=value words for the command (the run's image size).
    PredictPreview(QString program, QString task, std::filesystem::path weights,
                   std::vector<std::filesystem::path> images, std::vector<std::string> class_names,
                   QStringList extra_args = {}, QWidget* parent = nullptr);
    ~PredictPreview() override;

    void start();
    bool finished() const { return predict_->finished(); }
    QString error() const { return predict_->error(); }
    void set_confidence(double conf);
    double confidence() const { return confidence_; }
    // Detections drawn at the current confidence, over every image.
    int shown_detections() const;
    const std::vector<std::vector<Detection>>& detections() const { return predict_->detections(); }
    QListWidget* pictures() const { return pictures_; }

  signals:
    void done(bool ok);

  private:
    void redraw();

    std::vector<std::string> class_names_;
    PredictProcess* predict_ = nullptr;  // the images and their detections
    double confidence_ = 0.25;
    QListWidget* pictures_ = nullptr;
    QSlider* slider_ = nullptr;
    QLabel* status_ = nullptr;
};

}  // namespace crucible::ui
