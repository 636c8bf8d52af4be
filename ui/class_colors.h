#pragma once
// One colour per class index, the same in the annotation editor and on the dataset's thumbnails,
// so a class looks the same wherever its boxes are drawn.
#include <QColor>

namespace crucible::ui {

QColor class_color(int cls);

}  // namespace crucible::ui
