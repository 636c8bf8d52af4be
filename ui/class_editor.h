#pragma once
// The class editor of a detection dataset (labelImg's predefined classes, CVAT's label editor):
// the classes with their colour, hotkey (1-9) and box count; add, rename, merge one class into
// another (its boxes move, the classes after it move down a number) and colour. Each change is
// one store edit (core/store/dataset_edit.h); `changed` tells the main window to reload the
// dataset's views and editors.
#include <QColor>
#include <QDialog>
#include <cstdint>
#include <functional>

class QListWidget;

namespace crucible::store {
class Project;
}

namespace crucible::ui {

class ClassEditor : public QDialog {
    Q_OBJECT
  public:
    ClassEditor(store::Project& project, std::int64_t dataset_id, QWidget* parent = nullptr);

    QListWidget* list() const { return list_; }
    // The edits, as the buttons make them after asking; false (and `failed`) when refused.
    bool add_class(const QString& name);
    bool rename_class(int index, const QString& name);
    bool merge_class(int from, int into);
    bool set_color(int index, const QColor& color);  // invalid: back to the palette's

  signals:
    void changed();
    void failed(const QString& message);

  private:
    void reload();
    bool apply(const std::function<void()>& edit);
    void ask_add();
    void ask_rename();
    void ask_merge();
    void ask_color();

    store::Project& project_;
    std::int64_t dataset_id_;
    QListWidget* list_ = nullptr;
};

}  // namespace crucible::ui
