#pragma once
// What the studio's predictions come from, whichever machine makes them: `crucible predict` next
// to the studio (PredictProcess) or a job on a server's GPU (RemotePredict). Both stage the chosen
// images in one folder under numbered names and read back one label file per image (`class cx
// cy w h conf`, normalized), down to confidence 0.001; the views filter.
#include <QObject>
#include <QString>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/base/json.h"

class QTemporaryDir;

namespace crucible::ui {

struct Detection {
    int cls = 0;
    double cx = 0, cy = 0, w = 0, h = 0;  // normalized, as label files hold them
    double conf = 0;
};

// Rows `class cx cy w h conf` of a predictions label file; rows that do not read are skipped.
std::vector<Detection> parse_detections(const std::string& text);

// Links (copies where the file system has none) `images` into `folder` as "<i>_<name>": two
// pictures of one name from different folders stay apart.
void stage_images(const std::vector<std::filesystem::path>& images,
                  const std::filesystem::path& folder);
// The label file `crucible predict save_txt=true` writes for staged image `i`: "<i>_<stem>.txt".
std::filesystem::path staged_label_name(std::size_t i, const std::filesystem::path& image);

class Predictor : public QObject {
    Q_OBJECT
  public:
    static constexpr double kLowestConfidence = 0.001;  // what is predicted; views filter
    static constexpr const char* kOutputName = "out";   // the command's output folder's name

    Predictor(std::vector<std::filesystem::path> images, QObject* parent);
    ~Predictor() override;

    virtual void start() = 0;
    // Stops the work; done(false) follows with error() "canceled".
    virtual void cancel() = 0;

    bool finished() const { return finished_; }
    QString error() const { return error_; }
    // Per image, in the order given (empty for an image the command skipped).
    const std::vector<std::vector<Detection>>& detections() const { return detections_; }
    const std::vector<std::filesystem::path>& images() const { return images_; }

  signals:
    void progress(int done, int total);
    void done(bool ok);

  protected:
    // Makes the temporary folder and stages the images in its "images" folder; false (after
    // fail()) when it cannot.
    bool stage();
    std::filesystem::path work_folder() const;
    std::filesystem::path staged_folder() const { return work_folder() / "images"; }
    // The predict command's options for the staged images: every detection down to
    // kLowestConfidence, label files only, into the output folder "out".
    Json command_options(const std::filesystem::path& model) const;

    void fail(const QString& message);
    void succeed();
    // Fills detections() from the label files in `labels` (missing ones: no detections).
    void read_labels(const std::filesystem::path& labels);

    std::vector<std::filesystem::path> images_;

  private:
    std::unique_ptr<QTemporaryDir> work_;
    bool finished_ = false;
    QString error_;
    std::vector<std::vector<Detection>> detections_;
};

}  // namespace crucible::ui
