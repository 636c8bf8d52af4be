#include "ui/theme.h"

#include <QApplication>
#include <QFontDatabase>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

namespace crucible::ui {

Theme theme_from_name(const QString& name) {
    return name.compare(QStringLiteral("dark"), Qt::CaseInsensitive) == 0 ? Theme::Dark
                                                                          : Theme::Light;
}

QString theme_name(Theme theme) {
    return theme == Theme::Dark ? QStringLiteral("dark") : QStringLiteral("light");
}

void apply_theme(QApplication& app, Theme theme) {
    if (QStyle* fusion = QStyleFactory::create(QStringLiteral("Fusion"))) app.setStyle(fusion);
    if (theme == Theme::Light) {
        app.setPalette(app.style()->standardPalette());
        return;
    }
    QPalette p;
    const QColor window(45, 45, 48), base(30, 30, 32), text(220, 220, 220), accent(42, 130, 218);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, window);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::red);
    p.setColor(QPalette::Link, accent);
    p.setColor(QPalette::Highlight, accent);
    p.setColor(QPalette::HighlightedText, Qt::black);
    p.setColor(QPalette::PlaceholderText, QColor(130, 130, 130));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(120, 120, 120));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(120, 120, 120));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(120, 120, 120));
    app.setPalette(p);
}

QFont fixed_width_font() {
    return QFontDatabase::systemFont(QFontDatabase::FixedFont);
}

}  // namespace crucible::ui
