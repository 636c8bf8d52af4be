#pragma once
// Light and dark themes for the studio: Qt's Fusion style with a palette, so both look the same
// on Windows, in an RDP session and under the offscreen platform (no OpenGL, no native style).
#include <QFont>
#include <QString>

class QApplication;

namespace crucible::ui {

enum class Theme { Light, Dark };

Theme theme_from_name(const QString& name);  // "dark" -> Dark, anything else -> Light
QString theme_name(Theme theme);
void apply_theme(QApplication& app, Theme theme);
// The system's fixed-width font, for logs: columns of numbers line up, as in a terminal.
QFont fixed_width_font();

}  // namespace crucible::ui
