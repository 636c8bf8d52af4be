#pragma once
// The project file's schema: a version number (PRAGMA user_version), an application id and a
// meta row that mark the file as a Crucible project, and forward migrations. A new file is made
// by running the version-1 DDL and then every migration, so new and upgraded files always match.
#include <cstdint>
#include <string>

#include "core/store/sqlite_db.h"

namespace crucible::store {

inline constexpr std::int32_t kApplicationId = 0x43524342;  // "CRCB" in the SQLite header
inline constexpr int kSchemaVersion = 7;
inline constexpr const char* kProjectFormat = "crucible-project";

// The DDL of schema version 1, as shipped. Kept verbatim so that tests can build old files.
const char* schema_v1_ddl();

// Creates a fresh schema in an empty database (one transaction).
void create_schema(Database& db);

// Checks that `db` is a Crucible project this build can read. Throws InputError naming the file
// with a clear message: not an SQLite database, an SQLite database that is not a Crucible
// project, a project from a newer Crucible. Returns the file's schema version.
int check_project_identity(Database& db);

// Applies every migration from the file's version up to kSchemaVersion, each in one transaction.
void migrate_schema(Database& db);

}  // namespace crucible::store
