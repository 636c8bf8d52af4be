#pragma once
// Light and dark themes for the studio: Qt's Fusion style with a palette, so both look the same
// on Windows, in an RDP session and under the offscreen platform (no OpenGL, no native style).
#include <QString>

class QApplication;

namespace crucible::ui {

enum class Theme { Light, Dark };

Theme theme_from_name(const QString& name);  // "dark" -> Dark, anything else -> Light
QString theme_name(Theme theme);
void apply_theme(QApplication& app, Theme theme);

}  // namespace crucible::ui
