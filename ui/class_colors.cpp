#include "ui/class_colors.h"

namespace crucible::ui {
namespace {

// Ten distinct colours that stay readable on photos (from Sasha Trubetskoy's list).
const QColor kClassColors[] = {QColor(230, 25, 75),  QColor(60, 180, 75),  QColor(255, 225, 25),
                               QColor(0, 130, 200),  QColor(245, 130, 48), QColor(145, 30, 180),
                               QColor(70, 240, 240), QColor(240, 50, 230), QColor(210, 245, 60),
                               QColor(250, 190, 212)};

}  // namespace

QColor class_color(int cls) {
    const int n = static_cast<int>(sizeof kClassColors / sizeof kClassColors[0]);
    return kClassColors[((cls % n) + n) % n];
}

QColor class_color(int cls, const std::vector<std::string>& own_colors) {
    if (cls >= 0 && cls < static_cast<int>(own_colors.size())) {
        const QColor own(QString::fromStdString(own_colors[static_cast<std::size_t>(cls)]));
        if (own.isValid()) return own;
    }
    return class_color(cls);
}

}  // namespace crucible::ui
