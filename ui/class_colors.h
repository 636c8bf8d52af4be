#pragma once
// One colour per class index, the same in the annotation editor and on the dataset's thumbnails,
// so a class looks the same wherever its boxes are drawn.
#include <QColor>
#include <string>
#include <vector>

namespace crucible::ui {

QColor class_color(int cls);
// The class's own colour when the dataset gives one ("#rrggbb", store::set_class_color), else
// the palette's.
QColor class_color(int cls, const std::vector<std::string>& own_colors);

}  // namespace crucible::ui
