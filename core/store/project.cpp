#include "core/store/project.h"

#include <spdlog/spdlog.h>

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/store/platform.h"
#include "core/store/schema.h"

namespace crucible::store {

namespace fs = std::filesystem;

JournalMode parse_journal_mode(const std::string& text) {
    if (text == "auto") return JournalMode::Auto;
    if (text == "wal") return JournalMode::Wal;
    if (text == "rollback" || text == "delete") return JournalMode::Rollback;
    throw InputError("journal", "expected auto, wal or rollback, got '" + text + "'");
}

fs::path project_lock_file(const fs::path& project) {
    fs::path lock = project;
    lock += ".lock";
    return lock;
}

namespace {

fs::path absolute_normal(const fs::path& path) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
    if (ec) p = fs::absolute(path).lexically_normal();
    return p;
}

// How the project stores `abs`: relative to `folder` where it lies below it, otherwise
// absolute; '/'-separated UTF-8 either way.
std::string stored_form(const fs::path& abs, const fs::path& folder) {
    const fs::path rel = abs.lexically_relative(folder);
    return path_to_generic_utf8(rel.empty() ? abs : rel);
}

}  // namespace

Project::Project(fs::path path, const OpenOptions& options)
    : path_(absolute_normal(path)), options_(options) {}

Project::~Project() {
    release();
}

void Project::release() {
    if (db_ && lock_record_written_) {
        try {
            db_->exec("DELETE FROM session_lock");
        } catch (const std::exception& e) {
            spdlog::warn("{}: could not clear the lock record: {}", path_to_utf8(path_), e.what());
        }
    }
    lock_record_written_ = false;
    db_.reset();  // close the database before dropping the OS lock
    os_lock_.reset();
    metric_name_ids_.clear();
}

std::unique_ptr<Project> Project::create(const fs::path& path, const OpenOptions& options) {
    if (options.read_only)
        throw InputError(path_to_utf8(path), "cannot create a project read-only");
    std::error_code ec;
    if (fs::exists(path, ec))
        throw InputError(path_to_utf8(path), "already exists; choose another name or open it");
    std::unique_ptr<Project> p(new Project(path, options));
    p->open_file(true);
    return p;
}

std::unique_ptr<Project> Project::open_for_reading(const fs::path& path) {
    OpenOptions options;
    options.read_only = true;
    return open(path, options);
}

std::unique_ptr<Project> Project::open(const fs::path& path, const OpenOptions& options) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw InputError(path_to_utf8(path), "no such project file");
    if (fs::is_directory(path, ec))
        throw InputError(path_to_utf8(path), "is a folder, not a Crucible project file");
    std::unique_ptr<Project> p(new Project(path, options));
    p->open_file(false);
    return p;
}

void Project::open_file(bool create) {
    const std::string name = path_to_utf8(path_);
    if (!options_.read_only) {
        os_lock_ = platform::try_lock_file(project_lock_file(path_));
        if (!os_lock_) {
            std::string owner = platform::read_lock_owner(project_lock_file(path_));
            // Prefer the record inside the project; the side file is the fallback.
            try {
                Database peek(path_, OpenFlags::ReadOnly);
                auto s = peek.prepare("SELECT pid, host FROM session_lock WHERE id = 1");
                if (s.step())
                    owner =
                        "pid " + std::to_string(s.column_int64(0)) + " on host " + s.column_text(1);
            } catch (const std::exception&) {
            }
            if (owner.empty()) owner = "another process";
            throw Error(name + ": opened by another Crucible (" + owner +
                        "); close it there first, or open it read-only");
        }
    }
    if (create) {
        db_ = std::make_unique<Database>(path_, OpenFlags::Create);
        // A new file takes the page size and journal settings before any table exists.
        create_schema(*db_);
    } else {
        db_ = std::make_unique<Database>(
            path_, options_.read_only ? OpenFlags::ReadOnly : OpenFlags::ReadWrite);
        int version = check_project_identity(*db_);
        if (version < kSchemaVersion) {
            if (options_.read_only)
                throw InputError(name, "was written by an older Crucible (project schema version " +
                                           std::to_string(version) +
                                           "); open it for writing once to upgrade it");
            spdlog::info("{}: upgrading project schema {} -> {}", name, version, kSchemaVersion);
            migrate_schema(*db_);
        }
    }
    db_->exec("PRAGMA foreign_keys = ON");
    db_->exec("PRAGMA cache_size = -32768");  // 32 MiB: plot series of long runs stay cached
    if (options_.read_only) return;

    bool wal = options_.journal == JournalMode::Wal ||
               (options_.journal == JournalMode::Auto && !platform::is_network_filesystem(path_));
    std::string mode =
        db_->query_text(wal ? "PRAGMA journal_mode = WAL" : "PRAGMA journal_mode = DELETE")
            .value_or("");
    db_->exec(wal ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL");
    if (wal && mode != "wal")
        spdlog::warn("{}: WAL not available here (journal mode '{}')", name, mode);

    // Lock record: the OS lock is free, so any record left in the file is from a dead process.
    Transaction tx(*db_);
    {
        auto s = db_->prepare("SELECT pid, host FROM session_lock WHERE id = 1");
        if (s.step()) {
            stale_lock_ =
                "pid " + std::to_string(s.column_int64(0)) + " on host " + s.column_text(1);
            spdlog::warn("{}: taking over the lock of {} (that process is gone)", name,
                         stale_lock_);
        }
    }
    db_->prepare("INSERT OR REPLACE INTO session_lock(id, pid, host, opened_at) VALUES(1, ?, ?, ?)")
        .bind_all(static_cast<std::int64_t>(crucible::platform::process_id()),
                  crucible::platform::host_name(), unix_time_now())
        .run();
    tx.commit();
    lock_record_written_ = true;
    os_lock_->write_owner("pid " + std::to_string(crucible::platform::process_id()) + " on host " +
                          crucible::platform::host_name());
}

int Project::schema_version() {
    return static_cast<int>(db_->query_int("PRAGMA user_version").value_or(0));
}

std::string Project::journal_mode() {
    return db_->query_text("PRAGMA journal_mode").value_or("");
}

void Project::require_writable(const char* what) const {
    if (options_.read_only) throw Error(path_to_utf8(path_) + ": opened read-only; cannot " + what);
}

std::string Project::to_stored_path(const fs::path& file) const {
    return stored_form(absolute_normal(file), folder());
}

fs::path Project::resolve_stored_path(const std::string& stored) const {
    fs::path p = path_from_utf8(stored);
    if (p.is_absolute()) return p;
    return (folder() / p).lexically_normal();
}

void Project::save_as(const fs::path& new_path) {
    require_writable("save as");
    fs::path target = absolute_normal(new_path);
    const std::string name = path_to_utf8(target);
    std::error_code ec;
    if (fs::exists(target, ec)) throw InputError(name, "already exists; choose another name");
    if (target == path_) throw InputError(name, "is the project itself");

    auto target_lock = platform::try_lock_file(project_lock_file(target));
    if (!target_lock) throw Error(name + ": opened by another Crucible");
    const fs::path old_folder = folder();
    const fs::path new_folder = target.parent_path();
    {
        Database out(target, OpenFlags::Create);
        try {
            backup_database(*db_, out);
            out.exec("PRAGMA foreign_keys = ON");
            Transaction tx(out);
            auto rebase = [&](const std::string& stored) -> std::string {
                fs::path p = path_from_utf8(stored);
                if (p.is_absolute() || stored.empty()) return stored;
                return stored_form((old_folder / p).lexically_normal(), new_folder);
            };
            if (old_folder != new_folder) {
                auto read = out.prepare("SELECT id, path FROM images");
                auto write = out.prepare("UPDATE images SET path = ? WHERE id = ?");
                while (read.step())
                    write.bind_all(rebase(read.column_text(1)), read.column_int64(0)).run();
                auto read_ds = out.prepare("SELECT id, source FROM datasets");
                auto write_ds = out.prepare("UPDATE datasets SET source = ? WHERE id = ?");
                while (read_ds.step())
                    write_ds.bind_all(rebase(read_ds.column_text(1)), read_ds.column_int64(0))
                        .run();
            }
            out.exec("DELETE FROM session_lock");
            tx.commit();
        } catch (...) {
            fs::remove(target, ec);
            throw;
        }
    }
    target_lock.reset();
    // Switch to the copy.
    release();
    path_ = target;
    open_file(false);
}

}  // namespace crucible::store
