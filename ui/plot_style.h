#pragma once
// QCustomPlot draws in its own colours (white background, black axes) whatever the theme; the
// studio's plots take theirs from the palette instead, and follow it when the theme changes
// (View ▸ Dark theme), so a dark studio has no white charts.
class QCustomPlot;

namespace crucible::ui {

// Colours `plot` from its palette now (background from Base, axes, ticks, labels, titles and
// legend text from Text, grid lines from Mid) and again on every palette change.
void follow_palette(QCustomPlot* plot);

}  // namespace crucible::ui
