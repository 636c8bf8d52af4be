#include "ui/beside_studio.h"

#include <QCoreApplication>
#include <QFileInfo>

namespace crucible::ui {

QString find_beside_studio(const QString& program, const QString& build_folder) {
    const QString dir = QCoreApplication::applicationDirPath();
    for (const QString& candidate :
         {dir + QLatin1Char('/') + program,
          dir + QLatin1Char('/') + program + QStringLiteral(".exe"),
          dir + QStringLiteral("/../") + build_folder + QLatin1Char('/') + program})
        if (QFileInfo(candidate).isExecutable()) return QFileInfo(candidate).absoluteFilePath();
    return {};
}

}  // namespace crucible::ui
