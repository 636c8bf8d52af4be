#pragma once
// The studio's companion programs (crucible, crucible-agent, crucible-worker): beside the studio
// as installed, or in the build tree's app/<folder>/ next to app/studio/.
#include <QString>

namespace crucible::ui {

// The program's absolute path ("crucible-agent"; ".exe" is tried too), or empty when there is
// none; `build_folder` is its folder under app/ in a build tree ("agent").
QString find_beside_studio(const QString& program, const QString& build_folder);

}  // namespace crucible::ui
