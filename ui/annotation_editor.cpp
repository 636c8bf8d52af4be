#include "ui/annotation_editor.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QIcon>
#include <QImageReader>
#include <QLabel>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QPixmap>
#include <QProgressBar>
#include <QPushButton>
#include <QUndoCommand>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "core/base/file_io.h"
#include "core/store/dataset_edit.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "ui/background.h"
#include "ui/class_colors.h"

namespace crucible::ui {

namespace {

class BoxEditCommand : public QUndoCommand {
  public:
    BoxEditCommand(AnnotationEditor* editor, int image, std::vector<data::Box> before,
                   std::vector<data::Box> after, const QString& text)
        : QUndoCommand(text),
          editor_(editor),
          image_(image),
          before_(std::move(before)),
          after_(std::move(after)) {}
    void redo() override { editor_->apply_boxes(image_, after_); }
    void undo() override { editor_->apply_boxes(image_, before_); }

  private:
    AnnotationEditor* editor_;
    int image_;
    std::vector<data::Box> before_, after_;
};

// Accepting or rejecting suggestions: the image's boxes and suggestions before and after.
class SuggestionCommand : public QUndoCommand {
  public:
    SuggestionCommand(AnnotationEditor* editor, int image, std::vector<data::Box> boxes_before,
                      std::vector<data::Box> boxes_after, std::vector<Detection> before,
                      std::vector<Detection> after, const QString& text)
        : QUndoCommand(text),
          editor_(editor),
          image_(image),
          boxes_before_(std::move(boxes_before)),
          boxes_after_(std::move(boxes_after)),
          before_(std::move(before)),
          after_(std::move(after)) {}
    void redo() override { editor_->apply_edit(image_, boxes_after_, after_); }
    void undo() override { editor_->apply_edit(image_, boxes_before_, before_); }

  private:
    AnnotationEditor* editor_;
    int image_;
    std::vector<data::Box> boxes_before_, boxes_after_;
    std::vector<Detection> before_, after_;
};

bool same_detection(const Detection& a, const Detection& b) {
    return a.cls == b.cls && a.cx == b.cx && a.cy == b.cy && a.w == b.w && a.h == b.h &&
           a.conf == b.conf;
}

double iou(const data::Box& a, const Detection& b) {
    const double ix = std::max(
        0.0, std::min(a.cx + a.w / 2, b.cx + b.w / 2) - std::max(a.cx - a.w / 2, b.cx - b.w / 2));
    const double iy = std::max(
        0.0, std::min(a.cy + a.h / 2, b.cy + b.h / 2) - std::max(a.cy - a.h / 2, b.cy - b.h / 2));
    const double inter = ix * iy;
    const double uni = a.w * a.h + b.w * b.h - inter;
    return uni > 0 ? inter / uni : 0;
}

const std::vector<data::Box> kNoBoxes;
const std::vector<Detection> kNoSuggestions;

}  // namespace

// ---------------------------------------------------------------- canvas

AnnotationCanvas::AnnotationCanvas(AnnotationEditor* editor) : QWidget(editor), editor_(editor) {
    setMinimumSize(320, 240);
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setAutoFillBackground(true);
}

void AnnotationCanvas::set_image(const QImage& image, QSize nominal) {
    image_ = image;
    nominal_ = !image.isNull() ? image.size() : (nominal.isEmpty() ? QSize(640, 480) : nominal);
    preview_.reset();
    drag_ = Drag::None;
    update();
}

void AnnotationCanvas::set_draw_mode(bool on) {
    draw_mode_ = on;
    setCursor(on ? Qt::CrossCursor : Qt::ArrowCursor);
}

void AnnotationCanvas::reset_view() {
    zoom_ = 1.0;
    pan_ = {};
    update();
}

QRectF AnnotationCanvas::image_rect() const {
    const double iw = nominal_.width(), ih = nominal_.height();
    const double fit = std::min((width() - 8) / iw, (height() - 8) / ih);
    const double s = std::max(fit, 1e-3) * zoom_;
    const QSizeF size(iw * s, ih * s);
    const QPointF centre = QPointF(width() / 2.0, height() / 2.0) + pan_;
    return {centre - QPointF(size.width() / 2, size.height() / 2), size};
}

QPointF AnnotationCanvas::to_widget(double nx, double ny) const {
    QRectF r = image_rect();
    return {r.left() + nx * r.width(), r.top() + ny * r.height()};
}

QPointF AnnotationCanvas::to_normalized(QPointF p) const {
    QRectF r = image_rect();
    return {(p.x() - r.left()) / r.width(), (p.y() - r.top()) / r.height()};
}

QRectF AnnotationCanvas::box_rect(const data::Box& b) const {
    return QRectF(to_widget(b.cx - b.w / 2, b.cy - b.h / 2),
                  to_widget(b.cx + b.w / 2, b.cy + b.h / 2));
}

data::Box AnnotationCanvas::box_from_rect(QRectF r, int cls) const {
    r = r.normalized();
    QPointF a = to_normalized(r.topLeft()), b = to_normalized(r.bottomRight());
    const double x0 = std::clamp(a.x(), 0.0, 1.0), y0 = std::clamp(a.y(), 0.0, 1.0);
    const double x1 = std::clamp(b.x(), 0.0, 1.0), y1 = std::clamp(b.y(), 0.0, 1.0);
    data::Box box;
    box.cls = cls;
    box.cx = (x0 + x1) / 2;
    box.cy = (y0 + y1) / 2;
    box.w = x1 - x0;
    box.h = y1 - y0;
    return box;
}

void AnnotationCanvas::zoom_by(double factor, QPointF around) {
    const double new_zoom = std::clamp(zoom_ * factor, 0.2, 40.0);
    factor = new_zoom / zoom_;
    // Keep the point under the cursor fixed.
    const QPointF centre = QPointF(width() / 2.0, height() / 2.0) + pan_;
    pan_ += (centre - around) * (factor - 1);
    zoom_ = new_zoom;
    update();
}

void AnnotationCanvas::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Base));
    const QRectF r = image_rect();
    if (!image_.isNull())
        p.drawImage(r, image_);
    else
        p.fillRect(r, QColor(80, 80, 80));
    const auto& boxes = editor_->boxes();
    const auto& names = editor_->content()->class_names;
    for (int i = 0; i < static_cast<int>(boxes.size()); ++i) {
        data::Box b = boxes[static_cast<std::size_t>(i)];
        if (preview_ && i == drag_box_ && drag_ != Drag::Draw) b = *preview_;
        const QRectF br = box_rect(b);
        const bool sel = i == editor_->selected();
        QColor c = class_color(b.cls, editor_->content()->class_colors);
        p.setPen(QPen(c, sel ? 2.5 : 1.5));
        QColor fill = c;
        fill.setAlpha(sel ? 50 : 20);
        p.setBrush(fill);
        p.drawRect(br);
        const QString label = b.cls >= 0 && static_cast<std::size_t>(b.cls) < names.size()
                                  ? QString::fromStdString(names[static_cast<std::size_t>(b.cls)])
                                  : QString::number(b.cls);
        p.fillRect(QRectF(br.topLeft() - QPointF(0, 16),
                          QSizeF(p.fontMetrics().horizontalAdvance(label) + 6, 16)),
                   c);
        p.setPen(Qt::black);
        p.drawText(br.topLeft() + QPointF(3, -4), label);
        if (sel) {
            p.setBrush(Qt::white);
            p.setPen(QPen(c, 1));
            for (QPointF corner : {br.topLeft(), br.topRight(), br.bottomLeft(), br.bottomRight()})
                p.drawRect(QRectF(corner - QPointF(4, 4), QSizeF(8, 8)));
        }
    }
    // The model's suggestions: dashed, with their confidence; the highlighted one thicker.
    const auto suggestions = editor_->shown_suggestions();
    for (int i = 0; i < static_cast<int>(suggestions.size()); ++i) {
        const Detection& d = suggestions[static_cast<std::size_t>(i)];
        const QRectF br = box_rect({d.cls, d.cx, d.cy, d.w, d.h});
        const bool lit = i == editor_->highlighted_suggestion();
        const QColor c = class_color(d.cls, editor_->content()->class_colors);
        p.setPen(QPen(c, lit ? 2.5 : 1.2, Qt::DashLine));
        p.setBrush(Qt::NoBrush);
        p.drawRect(br);
        const QString name = d.cls >= 0 && static_cast<std::size_t>(d.cls) < names.size()
                                 ? QString::fromStdString(names[static_cast<std::size_t>(d.cls)])
                                 : QString::number(d.cls);
        const QString label = QStringLiteral("%1 %2%3")
                                  .arg(name)
                                  .arg(d.conf, 0, 'f', 2)
                                  .arg(lit ? QStringLiteral(" ⏎") : QString());
        p.setPen(c);
        p.drawText(br.bottomLeft() + QPointF(3, 14), label);
    }
    if (preview_ && drag_ == Drag::Draw) {
        p.setPen(
            QPen(class_color(preview_->cls, editor_->content()->class_colors), 1.5, Qt::DashLine));
        p.setBrush(Qt::NoBrush);
        p.drawRect(box_rect(*preview_));
    }
}

void AnnotationCanvas::mousePressEvent(QMouseEvent* e) {
    setFocus();
    press_ = last_ = e->position();
    preview_.reset();
    if (e->button() == Qt::MiddleButton) {
        drag_ = Drag::Pan;
        return;
    }
    if (e->button() != Qt::LeftButton) return;
    const auto& boxes = editor_->boxes();
    if (!draw_mode_) {
        // A corner of the selected box resizes it; inside a box selects and moves it.
        const int sel = editor_->selected();
        if (sel >= 0 && sel < static_cast<int>(boxes.size())) {
            const QRectF br = box_rect(boxes[static_cast<std::size_t>(sel)]);
            const QPointF corners[] = {br.topLeft(), br.topRight(), br.bottomLeft(),
                                       br.bottomRight()};
            const QPointF opposite[] = {br.bottomRight(), br.bottomLeft(), br.topRight(),
                                        br.topLeft()};
            for (int c = 0; c < 4; ++c)
                if (QLineF(corners[c], press_).length() <= 7) {
                    drag_ = Drag::Resize;
                    drag_box_ = sel;
                    anchor_ = opposite[c];
                    return;
                }
        }
        for (int i = static_cast<int>(boxes.size()) - 1; i >= 0; --i)
            if (box_rect(boxes[static_cast<std::size_t>(i)]).contains(press_)) {
                editor_->select(i);
                drag_ = Drag::Move;
                drag_box_ = i;
                return;
            }
        editor_->select(-1);
    }
    drag_ = Drag::Draw;
    drag_box_ = -1;
}

void AnnotationCanvas::mouseMoveEvent(QMouseEvent* e) {
    const QPointF pos = e->position();
    const auto& boxes = editor_->boxes();
    switch (drag_) {
        case Drag::None:
            return;
        case Drag::Pan:
            pan_ += pos - last_;
            break;
        case Drag::Draw:
            preview_ = box_from_rect(QRectF(press_, pos), editor_->current_class());
            break;
        case Drag::Resize:
            if (drag_box_ < static_cast<int>(boxes.size()))
                preview_ = box_from_rect(QRectF(anchor_, pos),
                                         boxes[static_cast<std::size_t>(drag_box_)].cls);
            break;
        case Drag::Move: {
            if (drag_box_ >= static_cast<int>(boxes.size())) break;
            data::Box b = boxes[static_cast<std::size_t>(drag_box_)];
            const QRectF r = image_rect();
            const QPointF d = pos - press_;
            b.cx = std::clamp(b.cx + d.x() / r.width(), b.w / 2, 1 - b.w / 2);
            b.cy = std::clamp(b.cy + d.y() / r.height(), b.h / 2, 1 - b.h / 2);
            preview_ = b;
            break;
        }
    }
    last_ = pos;
    update();
}

void AnnotationCanvas::mouseReleaseEvent(QMouseEvent* e) {
    mouseMoveEvent(e);
    const Drag drag = drag_;
    drag_ = Drag::None;
    auto preview = preview_;
    preview_.reset();
    const bool moved = QLineF(press_, e->position()).length() >= 3;
    if (preview && moved) {
        if (drag == Drag::Draw) {
            const QRectF br = box_rect(*preview);
            if (br.width() >= 3 && br.height() >= 3 && preview->w > 0 && preview->h > 0) {
                editor_->add_box(*preview);
                set_draw_mode(false);
            }
        } else if ((drag == Drag::Move || drag == Drag::Resize) && drag_box_ >= 0 &&
                   preview->w > 0 && preview->h > 0) {
            editor_->set_box(drag_box_, *preview);
        }
    }
    update();
}

void AnnotationCanvas::wheelEvent(QWheelEvent* e) {
    if (e->modifiers() & Qt::ControlModifier) {
        zoom_by(std::pow(1.0015, e->angleDelta().y()), e->position());
        e->accept();
        return;
    }
    pan_ += QPointF(e->angleDelta().x(), e->angleDelta().y()) / 4.0;
    update();
}

// ---------------------------------------------------------------- editor

AnnotationEditor::AnnotationEditor(store::Project& project, std::shared_ptr<DatasetContent> content,
                                   QWidget* parent)
    : QWidget(parent), project_(project), content_(std::move(content)) {
    undo_ = new QUndoStack(this);
    auto* outer = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    title_ = new QLabel(this);
    class_picker_ = new QComboBox(this);
    fill_class_picker();
    auto* classes = new QPushButton(tr("Classes…"), this);
    classes->setToolTip(tr("Add, rename, merge or colour the dataset's classes"));
    verified_ = new QCheckBox(tr("Verified (Space)"), this);
    verified_->setToolTip(tr("A person checked this image's labels"));
    verified_->setFocusPolicy(Qt::NoFocus);
    auto* prev = new QPushButton(tr("◀ Prev (A)"), this);
    auto* next = new QPushButton(tr("Next (D) ▶"), this);
    auto* draw = new QPushButton(tr("New box (W)"), this);
    auto* undo_button = new QPushButton(tr("Undo"), this);
    auto* redo_button = new QPushButton(tr("Redo"), this);
    for (QPushButton* b : {prev, next, draw, undo_button, redo_button, classes})
        b->setFocusPolicy(Qt::NoFocus);
    bar->addWidget(title_, 1);
    bar->addWidget(new QLabel(tr("Class"), this));
    bar->addWidget(class_picker_);
    bar->addWidget(classes);
    bar->addWidget(verified_);
    bar->addWidget(draw);
    bar->addWidget(undo_button);
    bar->addWidget(redo_button);
    bar->addWidget(prev);
    bar->addWidget(next);
    outer->addLayout(bar);
    // Model-assisted labelling.
    auto* assist = new QHBoxLayout;
    auto* prelabel_button = new QPushButton(tr("Pre-label ▾"), this);
    prelabel_button->setToolTip(tr("A model's detections as suggestions to accept or reject"));
    auto* prelabel_menu = new QMenu(prelabel_button);
    prelabel_menu->addAction(tr("This image…"), this,
                             [this] { emit prelabel_requested(PrelabelScope::CurrentImage); });
    prelabel_menu->addAction(tr("Every unlabelled image…"), this,
                             [this] { emit prelabel_requested(PrelabelScope::UnlabelledImages); });
    prelabel_menu->addAction(tr("Every image…"), this,
                             [this] { emit prelabel_requested(PrelabelScope::AllImages); });
    prelabel_button->setMenu(prelabel_menu);
    threshold_box_ = new QDoubleSpinBox(this);
    threshold_box_->setRange(PredictProcess::kLowestConfidence, 1.0);
    threshold_box_->setDecimals(3);
    threshold_box_->setSingleStep(0.05);
    threshold_box_->setValue(threshold_);
    threshold_box_->setToolTip(tr("Suggestions at or above this confidence are shown"));
    auto* review = new QPushButton(tr("Review next (R)"), this);
    review->setToolTip(
        tr("The image where the model disagrees most with the labels, then where "
           "it is least sure"));
    progress_ = new QProgressBar(this);
    progress_->setVisible(false);
    cancel_ = new QPushButton(tr("Cancel"), this);
    cancel_->setVisible(false);
    for (QPushButton* b : {prelabel_button, review, cancel_})
        b->setFocusPolicy(Qt::NoFocus);
    threshold_box_->setFocusPolicy(Qt::ClickFocus);
    assist->addWidget(prelabel_button);
    assist->addWidget(new QLabel(tr("Show suggestions ≥"), this));
    assist->addWidget(threshold_box_);
    assist->addWidget(review);
    assist->addWidget(progress_, 1);
    assist->addWidget(cancel_);
    assist->addStretch();
    outer->addLayout(assist);
    connect(threshold_box_, &QDoubleSpinBox::valueChanged, this,
            [this](double v) { set_suggestion_threshold(v); });
    connect(review, &QPushButton::clicked, this, [this] { review_next(); });
    connect(cancel_, &QPushButton::clicked, this, [this] { cancel_prelabel(); });
    canvas_ = new AnnotationCanvas(this);
    outer->addWidget(canvas_, 1);
    outer->addWidget(new QLabel(tr("W new box · drag a box to move, a corner to resize · Del "
                                   "delete · 1-9 class · Space verified · A/D previous/next · "
                                   "Ctrl+Z/Ctrl+Y undo/redo · Ctrl+S write the dataset's label "
                                   "files · Ctrl+wheel zoom, middle drag pan · suggestions: Tab "
                                   "next, Enter accept, Shift+Enter accept all shown, X reject, "
                                   "R review next"),
                                this));

    auto shortcut = [this](const QList<QKeySequence>& keys, auto fn) {
        auto* a = new QAction(this);
        a->setShortcuts(keys);
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        connect(a, &QAction::triggered, this, fn);
        addAction(a);
        return a;
    };
    shortcut({QKeySequence(Qt::Key_W)}, [this] { canvas_->set_draw_mode(true); });
    shortcut({QKeySequence(Qt::Key_A)}, [this] { open_image(index_ - 1); });
    shortcut({QKeySequence(Qt::Key_D)}, [this] { open_image(index_ + 1); });
    shortcut({QKeySequence::Delete, QKeySequence(Qt::Key_Backspace)},
             [this] { delete_box(selected_); });
    shortcut({QKeySequence(Qt::Key_Escape)}, [this] {
        canvas_->set_draw_mode(false);
        select(-1);
    });
    shortcut({QKeySequence(Qt::CTRL | Qt::Key_0)}, [this] { canvas_->reset_view(); });
    shortcut({QKeySequence::Save}, [this] { write_label_files(); });
    shortcut({QKeySequence(Qt::Key_Space)}, [this] { set_verified(!verified()); });
    shortcut({QKeySequence(Qt::Key_Tab)}, [this] {
        const int n = static_cast<int>(shown_suggestions().size());
        if (n > 0) highlight_suggestion((highlighted_ + 1) % n);
    });
    shortcut({QKeySequence(Qt::Key_Return), QKeySequence(Qt::Key_Enter)},
             [this] { accept_suggestion(highlighted_); });
    shortcut({QKeySequence(Qt::SHIFT | Qt::Key_Return), QKeySequence(Qt::SHIFT | Qt::Key_Enter)},
             [this] { accept_shown_suggestions(); });
    shortcut({QKeySequence(Qt::Key_X)}, [this] { reject_suggestion(highlighted_); });
    shortcut({QKeySequence(Qt::Key_R)}, [this] { review_next(); });
    for (int k = 1; k <= 9; ++k)
        shortcut({QKeySequence(Qt::Key_0 + k)}, [this, k] {
            if (k <= class_picker_->count()) set_current_class(k - 1);
        });
    QAction* undo_action = undo_->createUndoAction(this);
    undo_action->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Z)});
    undo_action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    addAction(undo_action);
    QAction* redo_action = undo_->createRedoAction(this);
    redo_action->setShortcuts(
        {QKeySequence(Qt::CTRL | Qt::Key_Y), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z)});
    redo_action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    addAction(redo_action);
    connect(undo_button, &QPushButton::clicked, undo_, &QUndoStack::undo);
    connect(redo_button, &QPushButton::clicked, undo_, &QUndoStack::redo);
    connect(undo_, &QUndoStack::canUndoChanged, undo_button, &QPushButton::setEnabled);
    connect(undo_, &QUndoStack::canRedoChanged, redo_button, &QPushButton::setEnabled);
    undo_button->setEnabled(false);
    redo_button->setEnabled(false);
    connect(prev, &QPushButton::clicked, this, [this] { open_image(index_ - 1); });
    connect(next, &QPushButton::clicked, this, [this] { open_image(index_ + 1); });
    connect(draw, &QPushButton::clicked, this, [this] {
        canvas_->set_draw_mode(true);
        canvas_->setFocus();
    });
    connect(classes, &QPushButton::clicked, this, &AnnotationEditor::edit_classes);
    connect(verified_, &QCheckBox::toggled, this, &AnnotationEditor::set_verified);
    connect(class_picker_, &QComboBox::currentIndexChanged, this, [this](int cls) {
        if (selected_ < 0 || cls < 0) return;
        data::Box b = boxes()[static_cast<std::size_t>(selected_)];
        if (b.cls != cls) {
            b.cls = cls;
            set_box(selected_, b);
        }
    });
    if (!content_->images.empty()) open_image(0);
}

const std::vector<data::Box>& AnnotationEditor::boxes() const {
    if (index_ < 0 || index_ >= static_cast<int>(content_->images.size())) return kNoBoxes;
    return content_->images[static_cast<std::size_t>(index_)].boxes;
}

void AnnotationEditor::write_label_files() {
    const auto project_file = project_.path();
    const std::int64_t dataset = content_->dataset_id;
    // Off the GUI thread, on a read-only connection of its own (edits are in the project already).
    run_in_background<std::size_t>(
        this,
        [project_file, dataset] {
            return store::write_labels_to_files(*store::Project::open_for_reading(project_file),
                                                dataset);
        },
        [this](std::size_t written, QString error) {
            if (!error.isEmpty()) {
                emit failed(tr("labels not written: %1").arg(error));
                return;
            }
            set_unwritten(false);
            emit labels_written(static_cast<int>(written));
        });
}

void AnnotationEditor::set_unwritten(bool unwritten) {
    // Only YOLO and VOC files are written back; other datasets train from the project's
    // snapshot.
    unwritten = unwritten && (content_->format == "yolo" || content_->format == "voc");
    if (unwritten == unwritten_) return;
    unwritten_ = unwritten;
    emit unwritten_changed(unwritten_);
}

bool AnnotationEditor::verified() const {
    if (index_ < 0) return false;
    const auto& tags = content_->images[static_cast<std::size_t>(index_)].tags;
    auto it = tags.find(store::kVerifiedTag);
    return it != tags.end() && !it->second.empty();
}

void AnnotationEditor::set_verified(bool on) {
    if (index_ < 0 || on == verified()) return;
    auto& img = content_->images[static_cast<std::size_t>(index_)];
    try {
        store::set_image_tag(project_, img.id, store::kVerifiedTag, on ? "yes" : "");
    } catch (const std::exception& e) {
        emit failed(tr("verified flag not saved: %1").arg(QString::fromUtf8(e.what())));
        return;
    }
    if (on)
        img.tags[store::kVerifiedTag] = "yes";
    else
        img.tags.erase(store::kVerifiedTag);
    QSignalBlocker block(verified_);
    verified_->setChecked(on);
    update_title();
    emit edited(index_);
}

void AnnotationEditor::fill_class_picker() {
    QSignalBlocker block(class_picker_);
    const int current = class_picker_->currentIndex();
    class_picker_->clear();
    for (std::size_t i = 0; i < content_->class_names.size(); ++i) {
        QPixmap swatch(12, 12);
        swatch.fill(class_color(static_cast<int>(i), content_->class_colors));
        const QString key = i < 9 ? QStringLiteral("%1  ").arg(i + 1) : QStringLiteral("   ");
        class_picker_->addItem(QIcon(swatch),
                               key + QString::fromStdString(content_->class_names[i]));
    }
    class_picker_->setCurrentIndex(std::clamp(current, 0, class_picker_->count() - 1));
}

void AnnotationEditor::classes_changed() {
    fill_class_picker();
    undo_->clear();
    suggestions_.clear();  // they name the model's class numbers, which no longer match
    if (index_ >= static_cast<int>(content_->images.size())) index_ = -1;
    select(-1);
    set_unwritten(true);
    update_title();
    canvas_->update();
}

void AnnotationEditor::open_image(int index) {
    if (index < 0 || index >= static_cast<int>(content_->images.size())) return;
    index_ = index;
    selected_ = -1;
    highlighted_ = shown_suggestions().empty() ? -1 : 0;
    loaded_ = false;
    const auto& img = content_->images[static_cast<std::size_t>(index)];
    canvas_->set_image({}, QSize(img.width, img.height));
    canvas_->reset_view();
    {
        QSignalBlocker block(verified_);
        verified_->setChecked(verified());
    }
    update_title();
    const int token = ++load_token_;
    const QString file = QString::fromStdString(path_to_utf8(img.path));
    run_in_background<QImage>(
        this,
        [file] {
            QImageReader reader(file);
            reader.setAutoTransform(true);
            return reader.read();
        },
        [this, token, file](QImage image, QString error) {
            if (token != load_token_) return;  // another image was opened meanwhile
            if (image.isNull())
                emit failed(tr("cannot read %1%2").arg(file, error.isEmpty() ? "" : ": " + error));
            const auto& rec = content_->images[static_cast<std::size_t>(index_)];
            canvas_->set_image(image, QSize(rec.width, rec.height));
            loaded_ = true;
        });
    emit image_changed(index);
}

void AnnotationEditor::update_title() {
    if (index_ < 0) {
        title_->clear();
        return;
    }
    const auto& img = content_->images[static_cast<std::size_t>(index_)];
    title_->setText(tr("%1 / %2 · %3 · %4 · %5 boxes%6")
                        .arg(index_ + 1)
                        .arg(content_->images.size())
                        .arg(QString::fromStdString(path_to_utf8(img.path.filename())),
                             QString::fromStdString(img.split))
                        .arg(img.boxes.size())
                        .arg(verified() ? tr(" · verified ✓") : QString()));
}

void AnnotationEditor::select(int box) {
    selected_ = box >= 0 && box < static_cast<int>(boxes().size()) ? box : -1;
    if (selected_ >= 0) {
        QSignalBlocker block(class_picker_);
        class_picker_->setCurrentIndex(boxes()[static_cast<std::size_t>(selected_)].cls);
    }
    canvas_->update();
}

int AnnotationEditor::current_class() const {
    return std::max(0, class_picker_->currentIndex());
}

void AnnotationEditor::set_current_class(int cls) {
    class_picker_->setCurrentIndex(cls);
}

void AnnotationEditor::push_edit(std::vector<data::Box> after, const QString& text) {
    if (index_ < 0) return;
    undo_->push(new BoxEditCommand(this, index_, boxes(), std::move(after), text));
}

void AnnotationEditor::add_box(const data::Box& box) {
    auto after = boxes();
    after.push_back(box);
    push_edit(std::move(after), tr("new box"));
    select(static_cast<int>(boxes().size()) - 1);
}

void AnnotationEditor::set_box(int i, const data::Box& box) {
    if (i < 0 || i >= static_cast<int>(boxes().size())) return;
    auto after = boxes();
    after[static_cast<std::size_t>(i)] = box;
    push_edit(std::move(after), tr("edit box"));
}

void AnnotationEditor::delete_box(int i) {
    if (i < 0 || i >= static_cast<int>(boxes().size())) return;
    auto after = boxes();
    after.erase(after.begin() + i);
    push_edit(std::move(after), tr("delete box"));
}

void AnnotationEditor::apply_boxes(int index, const std::vector<data::Box>& boxes) {
    if (index < 0 || index >= static_cast<int>(content_->images.size())) return;
    auto& img = content_->images[static_cast<std::size_t>(index)];
    try {
        store::save_image_boxes(project_, content_->dataset_id, img.id, boxes);
        img.boxes = boxes;
    } catch (const std::exception& e) {
        emit failed(tr("boxes not saved: %1").arg(QString::fromUtf8(e.what())));
        return;
    }
    set_unwritten(true);
    if (index != index_) open_image(index);  // undo of an edit on another image shows it
    if (selected_ >= static_cast<int>(img.boxes.size())) selected_ = -1;
    update_title();
    canvas_->update();
    emit edited(index);
}

// ---------------------------------------------------------------- model-assisted labelling

void AnnotationEditor::prelabel(const QString& program, const std::filesystem::path& weights,
                                PrelabelScope scope, QStringList extra_args) {
    prelabel_with(
        [program, weights, extra_args](std::vector<std::filesystem::path> images,
                                       QObject* parent) -> Predictor* {
            return new PredictProcess(program, QStringLiteral("detect"), weights, std::move(images),
                                      extra_args, parent);
        },
        scope);
}

void AnnotationEditor::prelabel_with(const PredictorFactory& make, PrelabelScope scope) {
    if (predict_) {
        emit prelabel_finished(false, tr("a pre-labelling is already running"));
        return;
    }
    std::vector<int> indexes;
    for (int i = 0; i < static_cast<int>(content_->images.size()); ++i) {
        const auto& img = content_->images[static_cast<std::size_t>(i)];
        if ((scope == PrelabelScope::CurrentImage && i == index_) ||
            (scope == PrelabelScope::UnlabelledImages && img.boxes.empty()) ||
            scope == PrelabelScope::AllImages)
            indexes.push_back(i);
    }
    if (indexes.empty()) {
        emit prelabel_finished(false, scope == PrelabelScope::UnlabelledImages
                                          ? tr("every image has labels already")
                                          : tr("no image to pre-label"));
        return;
    }
    std::vector<std::filesystem::path> images;
    for (int i : indexes)
        images.push_back(content_->images[static_cast<std::size_t>(i)].path);
    predicting_ = indexes;
    predict_ = make(std::move(images), this);
    progress_->setRange(0, static_cast<int>(indexes.size()));
    progress_->setValue(0);
    progress_->setFormat(tr("pre-labelling %v / %m"));
    progress_->setVisible(true);
    cancel_->setVisible(true);
    connect(predict_, &Predictor::progress, this, [this](int done, int total) {
        progress_->setMaximum(std::max(total, 1));
        progress_->setValue(done);
    });
    connect(predict_, &Predictor::done, this, [this](bool ok) {
        Predictor* finished = predict_;
        predict_ = nullptr;
        progress_->setVisible(false);
        cancel_->setVisible(false);
        QString message;
        if (ok) {
            int suggested = 0;
            for (std::size_t k = 0; k < predicting_.size(); ++k) {
                auto found = k < finished->detections().size() ? finished->detections()[k]
                                                               : std::vector<Detection>{};
                suggested += static_cast<int>(found.size());
                set_suggestions(predicting_[k], std::move(found));
            }
            message = tr("%1 suggestion(s) on %2 image(s); those at or above %3 are shown")
                          .arg(suggested)
                          .arg(predicting_.size())
                          .arg(threshold_);
        } else {
            message = finished->error();
        }
        finished->deleteLater();
        predicting_.clear();
        emit prelabel_finished(ok, message);
    });
    predict_->start();
}

void AnnotationEditor::cancel_prelabel() {
    if (predict_) predict_->cancel();
}

void AnnotationEditor::set_suggestions(int image_index, std::vector<Detection> suggestions) {
    std::stable_sort(suggestions.begin(), suggestions.end(),
                     [](const Detection& a, const Detection& b) { return a.conf > b.conf; });
    if (suggestions.empty())
        suggestions_.erase(image_index);
    else
        suggestions_[image_index] = std::move(suggestions);
    if (image_index == index_) {
        highlighted_ = shown_suggestions().empty() ? -1 : 0;
        canvas_->update();
    }
}

std::vector<Detection> AnnotationEditor::shown_suggestions() const {
    std::vector<Detection> out;
    const auto it = suggestions_.find(index_);
    if (it == suggestions_.end()) return out;
    for (const auto& d : it->second)
        if (d.conf >= threshold_) out.push_back(d);
    return out;
}

int AnnotationEditor::suggestion_count(int image_index) const {
    const auto it = suggestions_.find(image_index);
    return it == suggestions_.end() ? 0 : static_cast<int>(it->second.size());
}

void AnnotationEditor::set_suggestion_threshold(double conf) {
    threshold_ = std::clamp(conf, PredictProcess::kLowestConfidence, 1.0);
    if (threshold_box_->value() != threshold_) {
        QSignalBlocker block(threshold_box_);
        threshold_box_->setValue(threshold_);
    }
    highlighted_ = shown_suggestions().empty() ? -1 : 0;
    canvas_->update();
}

void AnnotationEditor::highlight_suggestion(int i) {
    const int n = static_cast<int>(shown_suggestions().size());
    highlighted_ = i >= 0 && i < n ? i : -1;
    canvas_->update();
}

std::vector<Detection> AnnotationEditor::without(const Detection& d) const {
    std::vector<Detection> rest;
    const auto it = suggestions_.find(index_);
    if (it == suggestions_.end()) return rest;
    bool dropped = false;
    for (const auto& s : it->second) {
        if (!dropped && same_detection(s, d)) {
            dropped = true;
            continue;
        }
        rest.push_back(s);
    }
    return rest;
}

void AnnotationEditor::push_suggestion_edit(std::vector<data::Box> after,
                                            std::vector<Detection> suggestions,
                                            const QString& text) {
    const auto it = suggestions_.find(index_);
    undo_->push(new SuggestionCommand(this, index_, boxes(), std::move(after),
                                      it == suggestions_.end() ? kNoSuggestions : it->second,
                                      std::move(suggestions), text));
}

bool AnnotationEditor::accept_suggestion(int i) {
    const auto shown = shown_suggestions();
    if (i < 0 || i >= static_cast<int>(shown.size())) return false;
    const Detection& d = shown[static_cast<std::size_t>(i)];
    if (d.cls < 0 || d.cls >= static_cast<int>(content_->class_names.size())) {
        emit failed(tr("the model's class %1 is not one of this dataset's %2 classes")
                        .arg(d.cls)
                        .arg(content_->class_names.size()));
        return false;
    }
    auto after = boxes();
    after.push_back({d.cls, d.cx, d.cy, d.w, d.h});
    push_suggestion_edit(std::move(after), without(d), tr("accept suggestion"));
    return true;
}

int AnnotationEditor::accept_shown_suggestions() {
    const auto shown = shown_suggestions();
    auto after = boxes();
    std::vector<Detection> rest;
    const auto it = suggestions_.find(index_);
    int taken = 0;
    for (const auto& d : it == suggestions_.end() ? kNoSuggestions : it->second) {
        if (d.conf >= threshold_ && d.cls >= 0 &&
            d.cls < static_cast<int>(content_->class_names.size())) {
            after.push_back({d.cls, d.cx, d.cy, d.w, d.h});
            ++taken;
        } else {
            rest.push_back(d);
        }
    }
    if (taken == 0) return 0;
    push_suggestion_edit(std::move(after), std::move(rest),
                         tr("accept %n suggestion(s)", nullptr, taken));
    return taken;
}

bool AnnotationEditor::reject_suggestion(int i) {
    const auto shown = shown_suggestions();
    if (i < 0 || i >= static_cast<int>(shown.size())) return false;
    push_suggestion_edit(boxes(), without(shown[static_cast<std::size_t>(i)]),
                         tr("reject suggestion"));
    return true;
}

void AnnotationEditor::apply_edit(int index, const std::vector<data::Box>& boxes_after,
                                  const std::vector<Detection>& suggestions) {
    if (index < 0 || index >= static_cast<int>(content_->images.size())) return;
    if (content_->images[static_cast<std::size_t>(index)].boxes != boxes_after)
        apply_boxes(index, boxes_after);
    if (index != index_) open_image(index);
    set_suggestions(index, suggestions);
}

std::vector<int> AnnotationEditor::review_order() const {
    // Disagreement: labels no confident suggestion of their class overlaps (IoU >= 0.5), plus
    // confident suggestions no label of their class overlaps. Doubt: how near 0.5 the least
    // sure suggestion above 0.05 is (1 at 0.5, 0 at 0 or 1).
    struct Rank {
        int index;
        int disagreement;
        double doubt;
    };
    std::vector<Rank> ranks;
    for (const auto& [index, all] : suggestions_) {
        const auto& labels = content_->images[static_cast<std::size_t>(index)].boxes;
        const auto matches = [](const data::Box& b, const Detection& d) {
            return b.cls == d.cls && iou(b, d) >= 0.5;
        };
        int disagreement = 0;
        for (const auto& b : labels)
            disagreement += std::none_of(all.begin(), all.end(), [&](const Detection& d) {
                return d.conf >= threshold_ && matches(b, d);
            });
        double doubt = 0;
        for (const auto& d : all) {
            if (d.conf >= threshold_)
                disagreement += std::none_of(labels.begin(), labels.end(),
                                             [&](const data::Box& b) { return matches(b, d); }) &&
                                !labels.empty();
            if (d.conf >= 0.05) doubt = std::max(doubt, 1 - std::abs(2 * d.conf - 1));
        }
        ranks.push_back({index, disagreement, doubt});
    }
    std::stable_sort(ranks.begin(), ranks.end(), [](const Rank& a, const Rank& b) {
        return a.disagreement != b.disagreement ? a.disagreement > b.disagreement
                                                : a.doubt > b.doubt;
    });
    std::vector<int> out;
    for (const auto& r : ranks)
        out.push_back(r.index);
    return out;
}

void AnnotationEditor::review_next() {
    for (int index : review_order())
        if (!reviewed_.count(index) && index != index_) {
            reviewed_.insert(index);
            open_image(index);
            return;
        }
    emit failed(tr("no more images to review: pre-label some first, or every one was opened"));
}

}  // namespace crucible::ui
