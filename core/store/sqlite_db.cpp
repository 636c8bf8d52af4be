#include "core/store/sqlite_db.h"

#include <sqlite3.h>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::store {

// ---- Statement ---------------------------------------------------------------------------

Statement::Statement(Database& db, std::string_view sql) : db_(&db) {
    int rc =
        sqlite3_prepare_v2(db.handle(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
    if (rc != SQLITE_OK) db.fail("cannot prepare \"" + std::string(sql.substr(0, 80)) + "\"", rc);
}

Statement::~Statement() {
    if (stmt_) sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
    other.stmt_ = nullptr;
}

Statement& Statement::operator=(Statement&& other) noexcept {
    if (this != &other) {
        if (stmt_) sqlite3_finalize(stmt_);
        db_ = other.db_;
        stmt_ = other.stmt_;
        other.stmt_ = nullptr;
    }
    return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
    int rc = sqlite3_bind_int64(stmt_, index, value);
    if (rc != SQLITE_OK) db_->fail("bind", rc);
    return *this;
}

Statement& Statement::bind(int index, double value) {
    int rc = sqlite3_bind_double(stmt_, index, value);
    if (rc != SQLITE_OK) db_->fail("bind", rc);
    return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
    int rc =
        sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    if (rc != SQLITE_OK) db_->fail("bind", rc);
    return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
    int rc = sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) db_->fail("bind", rc);
    return *this;
}

Statement& Statement::bind_null(int index) {
    int rc = sqlite3_bind_null(stmt_, index);
    if (rc != SQLITE_OK) db_->fail("bind", rc);
    return *this;
}

bool Statement::step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    db_->fail("query failed", rc);
}

int Statement::run() {
    while (step()) {
    }
    int n = sqlite3_changes(db_->handle());
    reset();
    return n;
}

void Statement::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const {
    return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::int64_t Statement::column_int64(int column) const {
    return sqlite3_column_int64(stmt_, column);
}

double Statement::column_double(int column) const {
    return sqlite3_column_double(stmt_, column);
}

std::string_view Statement::column_text_view(int column) const {
    const unsigned char* text = sqlite3_column_text(stmt_, column);
    int n = sqlite3_column_bytes(stmt_, column);
    if (!text) return {};
    return std::string_view(reinterpret_cast<const char*>(text), static_cast<std::size_t>(n));
}

std::string_view Statement::column_blob_view(int column) const {
    const void* bytes = sqlite3_column_blob(stmt_, column);
    int n = sqlite3_column_bytes(stmt_, column);
    if (!bytes) return {};
    return std::string_view(static_cast<const char*>(bytes), static_cast<std::size_t>(n));
}

std::string Statement::column_text(int column) const {
    return std::string(column_text_view(column));
}

std::optional<std::string> Statement::column_optional_text(int column) const {
    if (is_null(column)) return std::nullopt;
    return column_text(column);
}

// ---- Database ----------------------------------------------------------------------------

Database::Database(const std::filesystem::path& path, OpenFlags flags)
    : path_(path), flags_(flags) {
    int open_flags = SQLITE_OPEN_NOMUTEX;
    switch (flags) {
        case OpenFlags::ReadOnly:
            open_flags |= SQLITE_OPEN_READONLY;
            break;
        case OpenFlags::ReadWrite:
            open_flags |= SQLITE_OPEN_READWRITE;
            break;
        case OpenFlags::Create:
            open_flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
            break;
    }
    std::string name = path_to_utf8(path);
    int rc = sqlite3_open_v2(name.c_str(), &db_, open_flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        if (db_) sqlite3_close(db_);
        db_ = nullptr;
        throw InputError(name, "cannot open: " + msg);
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, 5000);
}

Database::~Database() {
    if (db_) sqlite3_close_v2(db_);
}

void Database::fail(const std::string& what, int rc) const {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    if ((rc & 0xff) == SQLITE_NOTADB)
        throw InputError(path_to_utf8(path_), "is not a Crucible project (not an SQLite database)");
    throw Error(path_to_utf8(path_) + ": " + what + ": " + msg);
}

void Database::exec(std::string_view sql) {
    std::string text(sql);
    char* err = nullptr;
    int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        if ((rc & 0xff) == SQLITE_NOTADB)
            throw InputError(path_to_utf8(path_),
                             "is not a Crucible project (not an SQLite database)");
        throw Error(path_to_utf8(path_) + ": " + msg);
    }
}

std::optional<std::int64_t> Database::query_int(std::string_view sql) {
    Statement s(*this, sql);
    if (!s.step() || s.is_null(0)) return std::nullopt;
    return s.column_int64(0);
}

std::optional<std::string> Database::query_text(std::string_view sql) {
    Statement s(*this, sql);
    if (!s.step() || s.is_null(0)) return std::nullopt;
    return s.column_text(0);
}

std::int64_t Database::last_insert_rowid() const {
    return sqlite3_last_insert_rowid(db_);
}
int Database::changes() const {
    return sqlite3_changes(db_);
}
bool Database::in_transaction() const {
    return sqlite3_get_autocommit(db_) == 0;
}

// ---- Transaction -------------------------------------------------------------------------

Transaction::Transaction(Database& db) : db_(db) {
    db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
    if (!done_) {
        // Never throws from a destructor; a failed rollback leaves SQLite to roll back on close.
        sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
}

void Transaction::commit() {
    db_.exec("COMMIT");
    done_ = true;
}

void backup_database(Database& from, Database& to) {
    sqlite3_backup* b = sqlite3_backup_init(to.handle(), "main", from.handle(), "main");
    if (!b) to.fail("cannot start backup", sqlite3_errcode(to.handle()));
    int rc = sqlite3_backup_step(b, -1);
    int finish = sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) to.fail("backup failed", rc);
    if (finish != SQLITE_OK) to.fail("backup failed", finish);
}

}  // namespace crucible::store
