#include "ui/plot_style.h"

#include <qcustomplot.h>

#include <QEvent>
#include <QObject>
#include <QPalette>

namespace crucible::ui {
namespace {

void apply_palette(QCustomPlot* plot) {
    const QPalette& p = plot->palette();
    const QColor text = p.color(QPalette::Text), grid = p.color(QPalette::Mid);
    plot->setBackground(p.brush(QPalette::Base));
    for (QCPAxisRect* rect : plot->axisRects()) {
        rect->setBackground(p.brush(QPalette::Base));
        for (QCPAxis* axis : rect->axes()) {
            axis->setBasePen(QPen(text));
            axis->setTickPen(QPen(text));
            axis->setSubTickPen(QPen(text));
            axis->setTickLabelColor(text);
            axis->setLabelColor(text);
            axis->grid()->setPen(QPen(grid, 0, Qt::DotLine));
        }
    }
    for (int i = 0; i < plot->plotLayout()->elementCount(); ++i)
        if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i)))
            title->setTextColor(text);
    plot->legend->setBrush(p.brush(QPalette::Base));
    plot->legend->setTextColor(text);
    plot->legend->setBorderPen(QPen(grid));
}

// Restyles its plot when the palette changes (the theme, or the system's).
class PaletteFollower : public QObject {
  public:
    explicit PaletteFollower(QCustomPlot* plot) : QObject(plot), plot_(plot) {}
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (watched == plot_ && event->type() == QEvent::PaletteChange) {
            apply_palette(plot_);
            plot_->replot(QCustomPlot::rpQueuedReplot);
        }
        return false;
    }

  private:
    QCustomPlot* plot_;
};

}  // namespace

void follow_palette(QCustomPlot* plot) {
    apply_palette(plot);
    plot->installEventFilter(new PaletteFollower(plot));
}

}  // namespace crucible::ui
