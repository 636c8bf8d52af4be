#pragma once
// The annotation editor: draw, move, resize and delete boxes on one image, labelImg-style keys
// (W new box, A / D previous / next image, Del delete, Ctrl+Z / Ctrl+Y undo / redo through a
// QUndoStack, 1-9 pick a class (and give it to the selected box), Space marks the image
// verified), a class picker, Ctrl+wheel zoom and middle-button pan. Every edit is saved to the
// project at once (core/store), and undo / redo save the boxes they restore. The dataset's own
// label files get the edits on Ctrl+S; until then the editor says it has unwritten edits.
//
// Model-assisted labelling: a model's detections (a run's weights or any .pt, .safetensors or
// .onnx; PredictProcess next to the studio, RemotePredict on a server's GPU) shown as suggestions,
// dashed with their confidence, for the current image, the unlabelled images or all of them
// (progress bar, Cancel). Nothing is saved until a person accepts: Enter accepts the highlighted
// suggestion (Tab moves the highlight), Shift+Enter every shown one, X rejects; an accepted
// suggestion is an ordinary box, and undo brings the suggestion back. R opens the next image in
// review order: where the model disagrees most with the labels, then where it is least sure.
#include <QImage>
#include <QPointF>
#include <QUndoStack>
#include <QWidget>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "ui/annotation_store.h"
#include "ui/predict_process.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;

namespace crucible::store {
class Project;
}

namespace crucible::ui {

class AnnotationEditor;

// The drawing surface: paints the image and boxes, turns mouse drags into edits.
class AnnotationCanvas : public QWidget {
    Q_OBJECT
  public:
    explicit AnnotationCanvas(AnnotationEditor* editor);
    void set_image(const QImage& image, QSize nominal);
    void set_draw_mode(bool on);
    bool draw_mode() const { return draw_mode_; }
    // Where the image is drawn, in widget coordinates.
    QRectF image_rect() const;
    QPointF to_widget(double nx, double ny) const;
    QPointF to_normalized(QPointF widget) const;
    void zoom_by(double factor, QPointF around);
    void reset_view();

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;

  private:
    enum class Drag { None, Draw, Move, Resize, Pan };
    QRectF box_rect(const data::Box& b) const;
    data::Box box_from_rect(QRectF r, int cls) const;

    AnnotationEditor* editor_;
    QImage image_;
    QSize nominal_{640, 480};
    bool draw_mode_ = false;
    double zoom_ = 1.0;
    QPointF pan_;
    Drag drag_ = Drag::None;
    QPointF press_, last_;
    QPointF anchor_;  // fixed corner while resizing
    int drag_box_ = -1;
    std::optional<data::Box> preview_;
};

class AnnotationEditor : public QWidget {
    Q_OBJECT
  public:
    AnnotationEditor(store::Project& project, std::shared_ptr<DatasetContent> content,
                     QWidget* parent = nullptr);

    void open_image(int index);
    int current_index() const { return index_; }
    bool image_loaded() const { return loaded_; }
    const std::vector<data::Box>& boxes() const;
    int selected() const { return selected_; }
    void select(int box);
    int current_class() const;
    void set_current_class(int cls);
    AnnotationCanvas* canvas() const { return canvas_; }
    QUndoStack* undo_stack() const { return undo_; }
    const std::shared_ptr<DatasetContent>& content() const { return content_; }

    // Edits of the current image, each one undo step, saved at once.
    void add_box(const data::Box& box);
    void set_box(int i, const data::Box& box);
    void delete_box(int i);

    // Ctrl+S: the dataset's own label files get the labels edited here (YOLO and VOC datasets;
    // others are refused with a message), in the background; labels_written or failed says how
    // it went.
    void write_label_files();
    // Edits in the project that the dataset's label files do not have yet (YOLO and VOC
    // datasets: those are the files Ctrl+S writes).
    bool has_unwritten_edits() const { return unwritten_; }
    void mark_written() { set_unwritten(false); }  // the files were written elsewhere
    // Marks the current image's labels checked by a person (the "verified" tag), or not.
    void set_verified(bool on);
    bool verified() const;
    // The dataset's classes changed (class editor): the picker is rebuilt and the undo history
    // dropped, since its boxes name the old class numbers.
    void classes_changed();

    // Used by the undo commands: puts `boxes` on image `index` and saves them.
    void apply_boxes(int index, const std::vector<data::Box>& boxes);

    // ---- model-assisted labelling
    enum class PrelabelScope { CurrentImage, UnlabelledImages, AllImages };
    // Predicts with `weights` through `program` (the crucible command line) on the scope's
    // images in the background; prelabel_finished says how it went.
    void prelabel(const QString& program, const std::filesystem::path& weights, PrelabelScope scope,
                  QStringList extra_args = {});
    // The same with predictions from `make` (given the images and the editor as parent), e.g. a
    // RemotePredict on a server's GPU.
    using PredictorFactory =
        std::function<Predictor*(std::vector<std::filesystem::path> images, QObject* parent)>;
    void prelabel_with(const PredictorFactory& make, PrelabelScope scope);
    void cancel_prelabel();
    bool prelabel_running() const { return predict_ != nullptr; }
    // A model's detections for one image (any order; kept most confident first).
    void set_suggestions(int image_index, std::vector<Detection> suggestions);
    // The current image's suggestions at or above the threshold, most confident first.
    std::vector<Detection> shown_suggestions() const;
    int suggestion_count(int image_index) const;  // all, whatever their confidence
    double suggestion_threshold() const { return threshold_; }
    void set_suggestion_threshold(double conf);
    int highlighted_suggestion() const { return highlighted_; }  // in shown_suggestions; -1 none
    void highlight_suggestion(int i);
    // Each an undo step; false (and a message) when there is nothing to take or the model's
    // class is not one of the dataset's.
    bool accept_suggestion(int i);
    int accept_shown_suggestions();
    bool reject_suggestion(int i);
    // Image indexes with suggestions, the ones to look at first first.
    std::vector<int> review_order() const;
    void review_next();
    // Used by the undo commands.
    void apply_edit(int index, const std::vector<data::Box>& boxes,
                    const std::vector<Detection>& suggestions);

  signals:
    void edited(int image_index);
    void failed(const QString& message);
    void labels_written(int files);
    void image_changed(int image_index);
    void unwritten_changed(bool unwritten);
    void edit_classes();                           // the user asked for the class editor
    void prelabel_requested(PrelabelScope scope);  // the user asked; the window picks the model
    void prelabel_finished(bool ok, const QString& message);

  private:
    void push_edit(std::vector<data::Box> after, const QString& text);
    void update_title();
    void set_unwritten(bool unwritten);
    void fill_class_picker();
    // Replaces the current image's suggestions and boxes in one undo step.
    void push_suggestion_edit(std::vector<data::Box> boxes, std::vector<Detection> suggestions,
                              const QString& text);
    std::vector<Detection> without(const Detection& d) const;  // the current image's, less `d`

    store::Project& project_;
    std::shared_ptr<DatasetContent> content_;
    int index_ = -1;
    int selected_ = -1;
    bool loaded_ = false;
    int load_token_ = 0;
    QUndoStack* undo_ = nullptr;
    AnnotationCanvas* canvas_ = nullptr;
    QComboBox* class_picker_ = nullptr;
    QCheckBox* verified_ = nullptr;
    bool unwritten_ = false;
    QLabel* title_ = nullptr;

    std::map<int, std::vector<Detection>> suggestions_;  // by image index, most confident first
    double threshold_ = 0.25;
    int highlighted_ = -1;
    std::set<int> reviewed_;  // images review_next has opened
    Predictor* predict_ = nullptr;
    std::vector<int> predicting_;  // the image indexes predict_ works on, in its order
    QDoubleSpinBox* threshold_box_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancel_ = nullptr;
};

}  // namespace crucible::ui
