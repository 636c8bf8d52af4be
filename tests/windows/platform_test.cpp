// The Windows platform code, run under wine in CI (CTest's wine.* tests) and on Windows itself:
// paths with Chinese, spaces and over 260 characters, file replacement while a reader holds the
// file, UTF-8 arguments and environment across a process boundary, the stop request a console
// program hears, the job object that ends a worker with its agent, process identity, the
// Credential Manager. What wine cannot show is in docs/windows-checklist.md.
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
// After windows.h (lean: without the older winsock.h).
#include <winsock2.h>
#include <ws2tcpip.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/base/child_process.h"
#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/event_log.h"
#include "core/base/file_io.h"
#include "core/base/folder_access.h"
#include "core/base/long_paths.h"
#include "core/base/mapped_file.h"
#include "core/base/process_info.h"
#include "core/base/secret_store.h"
#include "core/base/shared_read_file.h"
#include "core/base/stop_signal.h"
#include "core/base/tcp_listeners.h"
#include "core/jobs/sysmem_fallback.h"

namespace crucible {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A fresh folder whose name has Chinese, accents and spaces, removed afterwards.
class WineTest : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               path_from_utf8(std::string("crucible wine 测试 José ") + info->name());
        remove_tree(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { remove_tree(dir_); }
    // Through the \\?\ form: mingw's std::filesystem::remove_all cannot remove a tree deeper
    // than 260 characters by its plain name (LongerThan260Characters makes one).
    static void remove_tree(const fs::path& dir) {
        std::error_code ec;
        fs::remove_all(fs::path(L"\\\\?\\" + fs::absolute(dir).wstring()), ec);
    }
    static fs::path helper() { return this_executable().parent_path() / "wine_helper.exe"; }
    std::unique_ptr<ChildProcess> start_helper(std::vector<std::string> args) {
        ChildOptions child;
        child.program = helper();
        child.args = std::move(args);
        child.log_file = dir_ / "helper.log";
        return ChildProcess::start(child);
    }
    // Waits up to `limit` for `file` to appear.
    static bool appears(const fs::path& file, std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (!fs::exists(file)) {
            if (std::chrono::steady_clock::now() > deadline) return false;
            std::this_thread::sleep_for(20ms);
        }
        return true;
    }
    fs::path dir_;
};

using Paths = WineTest;

TEST_F(Paths, ChineseAndSpacesRoundTrip) {
    const fs::path file = dir_ / path_from_utf8("数据 集") / path_from_utf8("标签 ü.txt");
    fs::create_directories(file.parent_path());
    write_file_atomically(file, "第一行\n");
    EXPECT_EQ(read_file_bytes(file), "第一行\n");
    EXPECT_EQ(path_to_utf8(file.filename()), "标签 ü.txt");
    write_file_atomically(file, "second");  // replace in place
    EXPECT_EQ(read_file_bytes(file), "second");
}

TEST_F(Paths, LongerThan260Characters) {
    fs::path deep = dir_;
    while (deep.wstring().size() < 300)
        deep /= path_from_utf8("深层文件夹 folder");
    fs::create_directories(deep);
    const fs::path file = deep / "weights.safetensors";
    ASSERT_GT(file.wstring().size(), 260u);
    write_file_atomically(file, "bytes");
    EXPECT_EQ(read_file_bytes(file), "bytes");
    {
        MappedFile mapped(file);
        EXPECT_EQ(mapped.size(), 5u);
    }
    // Removed bottom-up through the \\?\ form (see remove_tree).
    const auto extended = [](const fs::path& p) { return L"\\\\?\\" + p.wstring(); };
    EXPECT_TRUE(DeleteFileW(extended(file).c_str()));
    for (fs::path d = deep; d != dir_; d = d.parent_path())
        EXPECT_TRUE(RemoveDirectoryW(extended(d).c_str())) << GetLastError();
}

TEST_F(Paths, ErrorTextIsUtf8WithoutLineBreak) {
    const std::string text = platform::windows_error_text(ERROR_FILE_NOT_FOUND);
    ASSERT_FALSE(text.empty());
    EXPECT_NE(text.back(), '\n');
    EXPECT_NE(text.back(), '\r');
    try {
        read_file_bytes(dir_ / path_from_utf8("不存在.txt"));
        FAIL() << "a missing file was read";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("不存在.txt"), std::string::npos) << e.what();
    }
}

using Files = WineTest;

// Holds `file` open for reading without FILE_SHARE_DELETE, as a download in progress or a virus
// scanner does, for `hold` (joined when destroyed, so a failing test still ends cleanly).
class HeldOpen {
  public:
    HeldOpen(const fs::path& file, std::chrono::milliseconds hold) {
        HANDLE h = CreateFileW(file.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                               FILE_ATTRIBUTE_NORMAL, nullptr);
        opened_ = h != INVALID_HANDLE_VALUE;
        thread_ = std::thread([h, hold] {
            std::this_thread::sleep_for(hold);
            CloseHandle(h);
        });
    }
    ~HeldOpen() { thread_.join(); }
    bool opened() const { return opened_; }

  private:
    bool opened_ = false;
    std::thread thread_;
};

TEST_F(Files, ReplaceWaitsForAReaderToLetGo) {
    const fs::path target = dir_ / "results.csv", next = dir_ / "results.csv.tmp";
    write_file_atomically(target, "old");
    write_file_atomically(next, "new");
    std::chrono::steady_clock::duration waited{};
    {
        HeldOpen reader(target, 400ms);
        ASSERT_TRUE(reader.opened());
        const auto t0 = std::chrono::steady_clock::now();
        EXPECT_NO_THROW(platform::replace_file(next, target));
        waited = std::chrono::steady_clock::now() - t0;
    }
    EXPECT_EQ(read_file_bytes(target), "new");
    // The rename cannot have happened while the reader held the file.
    EXPECT_GE(waited, 300ms);
}

TEST_F(Files, ReplaceGivesUpWithTheReasonAfterItsRetries) {
    const fs::path target = dir_ / "last.safetensors", next = dir_ / "last.safetensors.tmp";
    write_file_atomically(target, "old");
    write_file_atomically(next, "new");
    {
        HeldOpen reader(target, std::chrono::milliseconds(platform::kReplaceRetryMs + 2000));
        ASSERT_TRUE(reader.opened());
        try {
            platform::replace_file(next, target);
            ADD_FAILURE() << "replaced a file another program held";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("last.safetensors: replace failed after"),
                      std::string::npos)
                << e.what();
        }
    }
    EXPECT_EQ(read_file_bytes(target), "old");
}

// True under wine, which has no POSIX-semantics rename (FileRenameInfoEx): there a reader that
// holds a file blocks its replacement as on Windows before 1709 (docs/windows-checklist.md has
// the step that shows the real thing).
bool running_under_wine() {
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    return ntdll && GetProcAddress(ntdll, "wine_get_version") != nullptr;
}

TEST_F(Files, ReplaceWhileASharedReaderReadsKeepsItsVersion) {
    const fs::path target = dir_ / "best.safetensors", next = dir_ / "best.safetensors.tmp";
    write_file_atomically(target, "old bytes");
    SharedReadFile reader(target);  // a download in progress
    write_file_atomically(next, "new");
    const auto t0 = std::chrono::steady_clock::now();
    if (running_under_wine()) {
        try {
            platform::replace_file(next, target);
            ADD_FAILURE() << "wine renamed over an open file: this test's premise changed";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("replace failed after"), std::string::npos)
                << e.what();
        }
        EXPECT_EQ(read_file_bytes(target), "old bytes");
    } else {
        platform::replace_file(next, target);
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << "the reader blocked the replace";
        EXPECT_EQ(read_file_bytes(target), "new");
    }
    char buffer[16] = {};
    EXPECT_EQ(reader.size(), 9u);
    ASSERT_EQ(reader.read_at(4, buffer, sizeof buffer), 5u);
    EXPECT_EQ(std::string(buffer, 5), "bytes");
    EXPECT_EQ(reader.read_at(9, buffer, sizeof buffer), 0u);
}

using Arguments = WineTest;

TEST_F(Arguments, ReachAChildAsUtf8ThroughQuotingAndShellCharacters) {
    const std::vector<std::string> sent = {"José",       "中文 文件夹", "Program Files (x86)",
                                           "a&b^c|d<e>", "quote\"in",   "trailing\\",
                                           "",           "%PATH%"};
    std::vector<std::string> args = {"args", path_to_utf8(dir_ / "args.txt")};
    args.insert(args.end(), sent.begin(), sent.end());
    auto child = start_helper(args);
    auto exit = child->wait_for(30s);
    ASSERT_TRUE(exit.has_value());
    ASSERT_EQ(exit->code, 0) << read_file_bytes(dir_ / "helper.log");
    std::string expected;
    for (const auto& a : sent)
        expected += a + "\n";
    EXPECT_EQ(read_file_bytes(dir_ / "args.txt"), expected);
}

using Environment = WineTest;

TEST_F(Environment, Utf8VariablesReachThisProcessAndChildren) {
    set_environment_variable("CRUCIBLE_测试", "值 José");
    EXPECT_EQ(environment_variable("CRUCIBLE_测试"), "值 José");
    EXPECT_FALSE(environment_variable("CRUCIBLE_NOT_SET_ANYWHERE").has_value());
    set_environment_variable("CRUCIBLE_测试", "其他", false);  // no overwrite
    EXPECT_EQ(environment_variable("CRUCIBLE_测试"), "值 José");
    set_environment_variable("CRUCIBLE_EMPTY", "");
    EXPECT_FALSE(nonempty_environment_variable("CRUCIBLE_EMPTY").has_value());

    auto child = start_helper({"env", "CRUCIBLE_测试", path_to_utf8(dir_ / "env.txt")});
    ASSERT_TRUE(child->wait_for(30s).has_value());
    EXPECT_EQ(read_file_bytes(dir_ / "env.txt"), "值 José");

    ChildOptions overridden;
    overridden.program = helper();
    overridden.args = {"env", "CRUCIBLE_测试", path_to_utf8(dir_ / "env2.txt")};
    overridden.env = {{"CRUCIBLE_测试", "覆盖"}};
    ASSERT_TRUE(ChildProcess::start(overridden)->wait_for(30s).has_value());
    EXPECT_EQ(read_file_bytes(dir_ / "env2.txt"), "覆盖");
}

TEST_F(Environment, UtcTimeAndConfigFolder) {
    EXPECT_EQ(utc_time_text(0, "%Y-%m-%d %H:%M:%S"), "1970-01-01 00:00:00");
    EXPECT_EQ(utc_time_text(1700000000, "%Y%m%d-%H%M%S"), "20231114-221320");
    set_environment_variable("CRUCIBLE_CONFIG_DIR", path_to_utf8(dir_ / "配置"));
    EXPECT_EQ(user_config_dir(), dir_ / "配置");
    set_environment_variable("CRUCIBLE_CONFIG_DIR", "");
    EXPECT_EQ(user_config_dir().filename(), "Crucible");  // %APPDATA%\Crucible
}

using Stop = WineTest;

TEST_F(Stop, TheNamedEventStopsAListeningProcessCleanly) {
    const fs::path ready = dir_ / "ready", stopped = dir_ / "stopped";
    auto child = start_helper({"wait-stop", path_to_utf8(ready), path_to_utf8(stopped)});
    ASSERT_TRUE(appears(ready, 20s)) << read_file_bytes(dir_ / "helper.log");
    EXPECT_TRUE(request_process_stop(child->pid()));
    auto exit = child->wait_for(10s);
    ASSERT_TRUE(exit.has_value()) << "the helper did not stop within 10 s";
    EXPECT_EQ(exit->code, 0);
    EXPECT_EQ(read_file_bytes(stopped), "stopped");
}

TEST_F(Stop, AProcessThatDoesNotListenIsNotStoppedThisWay) {
    auto child = start_helper({"sleep"});
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(request_process_stop(child->pid()));
    EXPECT_FALSE(child->poll().has_value());
    child->kill();
    ASSERT_TRUE(child->wait_for(10s).has_value());
}

TEST_F(Stop, ThisProcessHearsItsOwnEvent) {
    set_stop_requested(false);
    listen_for_stop_requests();
    EXPECT_FALSE(stop_requested());
    EXPECT_TRUE(request_process_stop(platform::process_id()));
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!stop_requested() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(stop_requested());
    set_stop_requested(false);
}

TEST_F(Stop, LogoffAndShutdownReachTheHiddenWindowWhichWaitsForTheCheckpoint) {
    set_stop_requested(false);
    listen_for_stop_requests();
    HWND window = nullptr;  // made by listen_for_stop_requests' own thread
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!(window = FindWindowW(kSessionEndWindowClass, nullptr)) &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(20ms);
    ASSERT_NE(window, nullptr) << "no hidden window of class crucible-session-end";
    // Windows asks first: the session may end.
    EXPECT_EQ(SendMessageW(window, WM_QUERYENDSESSION, 0, ENDSESSION_LOGOFF), TRUE);
    EXPECT_FALSE(stop_requested()) << "a question only: the user may still cancel the logoff";
    // Then it ends: the window asks for the stop and holds Windows until the program is done.
    std::thread program([] {
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (!stop_requested() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(10ms);
        std::this_thread::sleep_for(300ms);  // the checkpoint
        stop_finished();
    });
    const auto start = std::chrono::steady_clock::now();
    SendMessageW(window, WM_ENDSESSION, TRUE, ENDSESSION_LOGOFF);
    const auto held = std::chrono::steady_clock::now() - start;
    program.join();
    EXPECT_TRUE(stop_requested());
    EXPECT_GE(held, 250ms) << "the window returned before the program's checkpoint";
    EXPECT_LT(held, kStopGrace);
    set_stop_requested(false);
}

using JobObject = WineTest;

TEST_F(JobObject, AGrandchildEndsWithItsParent) {
    const fs::path pid_file = dir_ / "grandchild.pid";
    auto child = start_helper({"spawn-grandchild", path_to_utf8(pid_file)});
    ASSERT_TRUE(appears(pid_file, 20s)) << read_file_bytes(dir_ / "helper.log");
    std::this_thread::sleep_for(100ms);  // written atomically, but be sure it is complete
    const long grandchild = std::stol(read_file_bytes(pid_file));
    ASSERT_TRUE(process_alive(grandchild));
    kill_process(child->pid());  // the parent dies without any chance to clean up
    ASSERT_TRUE(child->wait_for(10s).has_value());
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (process_alive(grandchild) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(process_alive(grandchild)) << "the worker outlived its agent";
    if (process_alive(grandchild)) kill_process(grandchild);
}

using ProcessInfo = WineTest;

TEST_F(ProcessInfo, ResidentMemoryGrowsWithWrittenPagesAndThePeakFollows) {
    const std::int64_t before = resident_bytes();
    ASSERT_GT(before, 0);
    std::vector<char> block(64 << 20, 1);  // written: resident
    const std::int64_t after = resident_bytes();
    EXPECT_GT(after - before, 48 << 20) << before << " -> " << after;
    EXPECT_GE(peak_resident_bytes(), after);
    EXPECT_EQ(block[12345], 1);
}

TEST_F(ProcessInfo, IdentityOfARunningAndAnEndedProcess) {
    const long self = platform::process_id();
    EXPECT_TRUE(process_alive(self));
    const std::string token = process_start_token(self);
    EXPECT_FALSE(token.empty());
    EXPECT_EQ(process_start_token(self), token);
    EXPECT_TRUE(is_same_process(self, token));
    EXPECT_FALSE(is_same_process(self, token + "0"));

    auto child = start_helper({"sleep"});
    const long pid = child->pid();
    EXPECT_TRUE(process_alive(pid));
    EXPECT_NE(process_start_token(pid), token);
    kill_process(pid);
    auto exit = child->wait_for(10s);
    ASSERT_TRUE(exit.has_value());
    EXPECT_EQ(exit->code, 137);
    EXPECT_FALSE(process_alive(pid));
}

using Manifest = WineTest;

// crucible.manifest makes the ANSI code page UTF-8, so narrow strings that libraries hand to
// the system (OpenSSL's file names, spdlog's log file) are read as UTF-8.
TEST_F(Manifest, ActiveCodePageIsUtf8AndVersionResourceIsThere) {
    EXPECT_EQ(GetACP(), 65001u) << "the application manifest was not applied";
    const std::wstring self = this_executable().wstring();
    DWORD ignored = 0;
    const DWORD size = GetFileVersionInfoSizeW(self.c_str(), &ignored);
    ASSERT_GT(size, 0u) << "no version resource";
    std::vector<char> info(size);
    ASSERT_TRUE(GetFileVersionInfoW(self.c_str(), 0, size, info.data()));
    wchar_t* text = nullptr;
    UINT length = 0;
    ASSERT_TRUE(VerQueryValueW(info.data(), L"\\StringFileInfo\\040904b0\\ProductName",
                               reinterpret_cast<void**>(&text), &length));
    EXPECT_EQ(std::wstring(text), L"Crucible");
    // A narrow-string file API now takes UTF-8 names.
    const fs::path file = dir_ / path_from_utf8("窄 文件.txt");
    write_file_atomically(file, "x");
    EXPECT_NE(GetFileAttributesA(path_to_utf8(file).c_str()), INVALID_FILE_ATTRIBUTES);
}

using Acl = WineTest;

bool has_account_ending(const FolderAccess& access, const std::string& tail) {
    for (const auto& a : access.accounts)
        if (a.size() >= tail.size() && a.compare(a.size() - tail.size(), tail.size(), tail) == 0)
            return true;
    return false;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names)
        out += n + "; ";
    return out;
}

TEST_F(Acl, PrivateFolderAllowsOnlySystemAdministratorsAndItsUser) {
    // The DACL as built: SYSTEM, Administrators, this user; nothing inherited.
    const FolderAccess planned = private_folder_access();
    EXPECT_FALSE(planned.inherits_from_parent);
    ASSERT_EQ(planned.accounts.size(), 3u) << joined(planned.accounts);
    EXPECT_TRUE(has_account_ending(planned, "\\SYSTEM")) << joined(planned.accounts);
    EXPECT_TRUE(has_account_ending(planned, "\\Administrators")) << joined(planned.accounts);
    EXPECT_FALSE(has_account_ending(planned, "Everyone"));
    EXPECT_FALSE(has_account_ending(planned, "Users"));
    try {
        private_folder_access({"NoSuchAccount-crucible-test"});
        ADD_FAILURE() << "an unknown account was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("NoSuchAccount-crucible-test"), std::string::npos)
            << e.what();
    }

    const fs::path data = dir_ / path_from_utf8("数据 agent");
    fs::create_directories(data / "jobs");
    write_file_atomically(data / "tokens.json", "{}");  // there before: it inherits too
    make_folder_private(data);
    if (running_under_wine()) return;  // wine accepts a DACL but keeps Unix modes instead
    // On Windows: the DACL as applied, on the folder and what it holds before and after.
    const FolderAccess after = folder_access(data);
    EXPECT_FALSE(after.inherits_from_parent) << "the DACL must not inherit from C:\\";
    EXPECT_EQ(after.accounts, planned.accounts) << joined(after.accounts);
    for (const fs::path& inside : {data / "tokens.json", data / "jobs"})
        EXPECT_EQ(folder_access(inside).accounts, planned.accounts) << path_to_utf8(inside);
    write_file_atomically(data / "agent.json", "{}");  // made afterwards
    EXPECT_EQ(folder_access(data / "agent.json").accounts, planned.accounts);
}

TEST_F(Acl, AServiceAccountIsNamedBeforeItsServiceExists) {
    // Set-up makes the data folder private before it installs the service, when Windows cannot
    // yet look the account up: its SID comes from the name (what `sc showsid` prints).
    const FolderAccess planned =
        private_folder_access({"NT SERVICE\\TrustedInstaller", "nt service\\crucible-agent"});
    ASSERT_EQ(planned.accounts.size(), 5u) << joined(planned.accounts);
    // Shown by name where Windows knows the account, else as the SID itself.
    EXPECT_TRUE(has_account_ending(planned, "\\TrustedInstaller") ||
                has_account_ending(
                    planned, "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"))
        << joined(planned.accounts);
    EXPECT_TRUE(
        has_account_ending(planned, "\\crucible-agent") ||
        has_account_ending(planned, "S-1-5-80-1035277480-14019733-4120021967-2161494688-818785236"))
        << joined(planned.accounts);
}

TEST_F(Acl, ASecretFileIsClosedAloneAndReplaced) {
    const fs::path file = dir_ / path_from_utf8("管理 admin.token");
    write_secret_file(file, "first\n");
    write_secret_file(file, "second\n");
    EXPECT_EQ(read_file_bytes(file), "second\n");
    if (running_under_wine()) return;  // wine accepts a DACL but keeps Unix modes instead
    const FolderAccess access = folder_access(file);
    EXPECT_FALSE(access.inherits_from_parent);
    EXPECT_EQ(access.accounts, private_folder_access().accounts) << joined(access.accounts);
    EXPECT_TRUE(folder_access(dir_).inherits_from_parent) << "the folder is left as it was";
}

using EventLog = WineTest;

TEST_F(EventLog, RegisteredSourceShowsEachEventsOwnText) {
    const std::string source = "crucible-wine-test";
    ASSERT_EQ(register_event_source(source, this_executable()), "");
    // What Event Viewer reads to find the text.
    const std::wstring key =
        L"SYSTEM\\CurrentControlSet\\Services\\EventLog\\Application\\crucible-wine-test";
    wchar_t file[1024] = {};
    DWORD size = sizeof file;
    ASSERT_EQ(RegGetValueW(HKEY_LOCAL_MACHINE, key.c_str(), L"EventMessageFile",
                           RRF_RT_REG_EXPAND_SZ | RRF_NOEXPAND, nullptr, file, &size),
              ERROR_SUCCESS);
    EXPECT_EQ(fs::path(file), this_executable());
    DWORD types = 0;
    size = sizeof types;
    ASSERT_EQ(RegGetValueW(HKEY_LOCAL_MACHINE, key.c_str(), L"TypesSupported", RRF_RT_REG_DWORD,
                           nullptr, &types, &size),
              ERROR_SUCCESS);
    EXPECT_EQ(types, 7u);
    // The executable's message table (crucible.rc.in) gives the event's text back unchanged.
    const std::wstring text = L"data folder D:\\数据 José: access denied";
    const DWORD_PTR inserts[] = {reinterpret_cast<DWORD_PTR>(text.c_str())};
    wchar_t* formatted = nullptr;
    const DWORD n = FormatMessageW(FORMAT_MESSAGE_FROM_HMODULE | FORMAT_MESSAGE_ARGUMENT_ARRAY |
                                       FORMAT_MESSAGE_ALLOCATE_BUFFER,
                                   GetModuleHandleW(nullptr), kEventMessageId, 0,
                                   reinterpret_cast<LPWSTR>(&formatted), 0,
                                   reinterpret_cast<va_list*>(const_cast<DWORD_PTR*>(inserts)));
    ASSERT_GT(n, 0u) << "message " << kEventMessageId << " is missing: " << GetLastError();
    EXPECT_EQ(std::wstring(formatted, n), text);
    LocalFree(formatted);
    EXPECT_TRUE(report_event(source, EventLogType::Error, "wine test: an error event"));
    EXPECT_EQ(unregister_event_source(source), "");
    size = sizeof types;
    EXPECT_EQ(RegGetValueW(HKEY_LOCAL_MACHINE, key.c_str(), L"TypesSupported", RRF_RT_REG_DWORD,
                           nullptr, &types, &size),
              ERROR_FILE_NOT_FOUND);
    EXPECT_EQ(unregister_event_source(source), "") << "removing it twice is fine";
}

using LongPaths = WineTest;

TEST_F(LongPaths, SetUpEnablesThemForTheMachine) {
    const wchar_t* key = L"SYSTEM\\CurrentControlSet\\Control\\FileSystem";
    const DWORD off = 0;
    ASSERT_EQ(
        RegSetKeyValueW(HKEY_LOCAL_MACHINE, key, L"LongPathsEnabled", REG_DWORD, &off, sizeof off),
        ERROR_SUCCESS);
    EXPECT_FALSE(long_paths_enabled());
    EXPECT_EQ(enable_long_paths(), "");
    EXPECT_TRUE(long_paths_enabled());
    DWORD value = 0, size = sizeof value;
    ASSERT_EQ(RegGetValueW(HKEY_LOCAL_MACHINE, key, L"LongPathsEnabled", RRF_RT_REG_DWORD, nullptr,
                           &value, &size),
              ERROR_SUCCESS);
    EXPECT_EQ(value, 1u);
}

using NvapiSettings = WineTest;

TEST_F(NvapiSettings, SysmemFallbackPolicyIsReadFromTheBaseProfile) {
    const fs::path fake = this_executable().parent_path() / "fake_nvapi.dll";
    // Held here as well, so the fake's count of what was left open outlives each read.
    HMODULE held = LoadLibraryW(fake.c_str());
    ASSERT_NE(held, nullptr) << fake.string();
    const auto left_open = reinterpret_cast<int (*)()>(
        reinterpret_cast<void*>(GetProcAddress(held, "fake_nvapi_left_open")));
    ASSERT_NE(left_open, nullptr);
    struct Case {
        const char* mode;
        jobs::SysmemFallback policy;
        const char* note_mentions;
    };
    const Case cases[] = {
        {"1", jobs::SysmemFallback::PreferNoFallback, ""},
        {"0", jobs::SysmemFallback::DriverDefault, ""},
        {"2", jobs::SysmemFallback::PreferFallback, ""},
        {"unset", jobs::SysmemFallback::DriverDefault, ""},
        {"7", jobs::SysmemFallback::Unknown, "(7)"},
        {"text", jobs::SysmemFallback::Unknown, "not a number"},
        {"no-driver", jobs::SysmemFallback::Unknown, "status -6"},
    };
    for (const auto& c : cases) {
        SetEnvironmentVariableA("CRUCIBLE_FAKE_NVAPI", c.mode);
        const auto reading = jobs::read_sysmem_fallback(fake);
        EXPECT_EQ(reading.policy, c.policy) << c.mode << ": " << reading.note;
        EXPECT_NE(reading.note.find(c.note_mentions), std::string::npos) << c.mode;
        EXPECT_EQ(left_open(), 0) << c.mode << ": a session or NvAPI itself was left open";
    }
    SetEnvironmentVariableA("CRUCIBLE_FAKE_NVAPI", nullptr);
    FreeLibrary(held);

    const auto no_driver = jobs::read_sysmem_fallback(dir_ / "nvapi64.dll");
    EXPECT_EQ(no_driver.policy, jobs::SysmemFallback::Unknown);
    EXPECT_NE(no_driver.note.find("not found"), std::string::npos) << no_driver.note;
}

using Secrets = WineTest;

TEST_F(Secrets, CredentialManagerRoundTrip) {
    auto store = SecretStore::open_default();
    const std::string key = "agent:https://服务器:7443";
    store->put(key, "令牌-secret");
    EXPECT_EQ(store->get(key), "令牌-secret");
    store->put(key, "second");
    EXPECT_EQ(store->get(key), "second");
    EXPECT_TRUE(store->remove(key));
    EXPECT_FALSE(store->get(key).has_value());
    EXPECT_FALSE(store->remove(key));
}

// The system's table of TCP listeners, as a launcher reads it to find the port Gloo's listener
// took on a rank's own loopback address (Windows answers for all of 127/8, as Linux does).
class TcpListeners : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(WSAStartup(MAKEWORD(2, 2), &wsa_), 0); }
    void TearDown() override { WSACleanup(); }
    // A socket bound to address:0, listening when `listen_too`; its port.
    static int bind_to(SOCKET s, const char* address, bool listen_too) {
        sockaddr_in at{};
        at.sin_family = AF_INET;
        InetPtonA(AF_INET, address, &at.sin_addr);
        EXPECT_EQ(bind(s, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
        if (listen_too) {
            EXPECT_EQ(listen(s, 4), 0);
        }
        int size = sizeof at;
        getsockname(s, reinterpret_cast<sockaddr*>(&at), &size);
        return ntohs(at.sin_port);
    }
    WSADATA wsa_{};
};

TEST_F(TcpListeners, ThePortOfAListenerOnItsOwnAddressOnly) {
    const char* address = "127.91.0.7";
    EXPECT_EQ(listening_tcp_port(address), std::nullopt);
    const SOCKET listener = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    const int port = bind_to(listener, address, true);
    EXPECT_EQ(listening_tcp_port(address), port);
    EXPECT_EQ(listening_tcp_port("127.91.0.8"), std::nullopt);
    const SOCKET bound = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    bind_to(bound, "127.91.0.9", false);
    EXPECT_EQ(listening_tcp_port("127.91.0.9"), std::nullopt) << "bound, not listening";
    closesocket(bound);
    closesocket(listener);
    EXPECT_EQ(listening_tcp_port(address), std::nullopt);
    for (const char* text : {"", "localhost", "127.0.0", "::1", "256.1.1.1", "数据集"}) {
        EXPECT_EQ(listening_tcp_port(text), std::nullopt) << text;
    }
}

}  // namespace
}  // namespace crucible
