#pragma once
// A thin RAII layer over the SQLite C API: Database (one connection), Statement (a prepared
// statement with typed binds and column reads) and Transaction (BEGIN IMMEDIATE ... COMMIT, rolled
// back by the destructor unless committed). SQL text never carries values: every value is bound.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace crucible::store {

class Database;

class Statement {
  public:
    Statement(Database& db, std::string_view sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    Statement(Statement&& other) noexcept;
    Statement& operator=(Statement&& other) noexcept;

    // Parameters are numbered from 1, as in SQLite.
    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
    Statement& bind(int index, double value);
    Statement& bind(int index, std::string_view text);
    Statement& bind(int index, const std::string& text) {
        return bind(index, std::string_view(text));
    }
    Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
    Statement& bind_blob(int index, std::string_view bytes);
    Statement& bind_null(int index);
    template <class T>
    Statement& bind(int index, const std::optional<T>& value) {
        return value ? bind(index, *value) : bind_null(index);
    }
    // Binds every argument in order, starting at parameter 1.
    template <class... Args>
    Statement& bind_all(const Args&... args) {
        int i = 0;
        (bind(++i, args), ...);
        return *this;
    }

    // Runs one step: true when a row is available, false when done. Throws Error otherwise.
    bool step();
    // Runs to completion (for statements without rows); returns the number of changed rows.
    int run();
    // Resets for re-execution and clears bindings.
    void reset();

    bool is_null(int column) const;
    std::int64_t column_int64(int column) const;
    int column_int(int column) const { return static_cast<int>(column_int64(column)); }
    double column_double(int column) const;
    std::string column_text(int column) const;
    std::string_view column_text_view(int column) const;  // valid until the next step/reset
    std::string_view column_blob_view(int column) const;  // valid until the next step/reset
    std::optional<std::string> column_optional_text(int column) const;

  private:
    Database* db_ = nullptr;
    sqlite3_stmt* stmt_ = nullptr;
};

enum class OpenFlags { ReadOnly, ReadWrite, Create };

class Database {
  public:
    // Opens (or, with Create, creates) the file. Foreign keys are switched on and a busy timeout
    // set. Throws InputError naming the file when it cannot be opened.
    Database(const std::filesystem::path& path, OpenFlags flags);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    void exec(std::string_view sql);  // one or more statements without parameters (DDL, PRAGMA)
    Statement prepare(std::string_view sql) { return Statement(*this, sql); }
    // First column of the first row of a query without parameters; nullopt when no row.
    std::optional<std::int64_t> query_int(std::string_view sql);
    std::optional<std::string> query_text(std::string_view sql);

    std::int64_t last_insert_rowid() const;
    int changes() const;
    bool in_transaction() const;
    bool read_only() const { return flags_ == OpenFlags::ReadOnly; }
    const std::filesystem::path& path() const { return path_; }
    sqlite3* handle() const { return db_; }

    // Throws Error with SQLite's message, prefixed with the file name and `what`.
    [[noreturn]] void fail(const std::string& what, int rc) const;

  private:
    sqlite3* db_ = nullptr;
    std::filesystem::path path_;
    OpenFlags flags_;
};

// BEGIN IMMEDIATE (takes the write lock at once, so a busy database fails here, not mid-way);
// the destructor rolls back unless commit() was called.
class Transaction {
  public:
    explicit Transaction(Database& db);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

  private:
    Database& db_;
    bool done_ = false;
};

// Copies the whole database `from` into `to` with SQLite's online backup API.
void backup_database(Database& from, Database& to);

}  // namespace crucible::store
