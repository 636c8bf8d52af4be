#!/usr/bin/env bash
# Fails on any call that would not build, or would warn, with MSVC (/W4 /WX) outside the
# platform files (*_posix.cpp with their *_windows.cpp twins):
#   - CRT functions MSVC deprecates (C4996): strerror, getenv, gmtime, sprintf, fopen, ... and
#     the POSIX names it deprecates (getpid, unlink, strdup, ...);
#   - POSIX-only calls and headers (popen, setenv, fork, stat, chmod, umask, localtime_r,
#     <unistd.h>, <sys/socket.h>, <sys/epoll.h>, ...);
#   - in product code, path::string() and path::generic_string(), which narrow a path to the
#     ANSI code page on Windows and throw for a name outside it (use path_to_utf8 or
#     path_to_generic_utf8).
# Product code (core, app, ui, plugins) must be clean. A test or benchmark may use POSIX-only
# calls only when its first line says "// POSIX-only test: <reason>" (CMake builds such files
# only off Windows); every other test file must be clean too.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

calls='strerror|getenv|_wgetenv|gmtime|localtime|ctime|asctime|strcpy|strcat|sprintf|vsprintf|'
calls+='sscanf|fopen|freopen|strncpy|strncat|strtok|mbstowcs|wcstombs|tmpnam|_popen|popen|'
calls+='pclose|_pclose|getpid|setenv|unsetenv|putenv|strdup|unlink|fileno|isatty|chdir|getcwd|'
calls+='mktemp|fdopen|strsignal|usleep|fork|waitpid|execvp?|setrlimit|getrlimit|getrusage|'
# Mode bits and the reentrant time functions: MSVC has _stat/_chmod/_umask and
# localtime_s/gmtime_s under other names (environment.h's utc_calendar_time wraps the latter).
calls+='stat|lstat|fstat|chmod|fchmod|umask|localtime_r|gmtime_r'
headers='unistd\.h|sys/wait\.h|sys/socket\.h|arpa/inet\.h|netinet/[a-z]+\.h|sys/resource\.h|'
headers+='sys/mman\.h|dlfcn\.h|pthread\.h|sys/select\.h|poll\.h|netdb\.h|sys/epoll\.h'
# A call: the name not preceded by '.', '->' or another namespace than std:: (members and our
# own functions of the same name are fine).
call_re="(^|[^.>:_A-Za-z0-9]|std::|[^:]::)($calls)\\s*\\("
include_re="#\\s*include\\s*<($headers)>"

report="$(mktemp)"
trap 'rm -f "$report"' EXIT
while IFS= read -r f; do
    case "$f" in *_posix.cpp | *_windows.cpp) continue ;; esac
    is_test=0
    case "$f" in tests/*) is_test=1 ;; esac
    if [ $is_test = 1 ] && head -1 "$f" | grep -q '^// POSIX-only test: .\{10,\}'; then
        continue
    fi
    # Comments are not calls: drop // comments before matching.
    hits="$(sed 's#//.*$##' "$f" | grep -nP "$call_re|$include_re" || true)"
    if [ $is_test = 0 ]; then
        narrow="$(sed 's#//.*$##' "$f" | grep -nP '\.(generic_)?string\(\)' || true)"
        [ -n "$narrow" ] && hits+=$'\n'"$(printf '%s\n' "$narrow" | sed 's/$/    <- path::string() narrows; use path_to_utf8 (or path_to_generic_utf8)/')"
    fi
    hits="$(printf '%s\n' "$hits" | sed '/^$/d')"
    [ -n "$hits" ] && printf '%s\n' "$hits" | sed "s#^#$f:#" >>"$report"
done < <(git ls-files 'core/*.cpp' 'core/*.h' 'app/*.cpp' 'app/*.h' 'ui/*.cpp' 'ui/*.h' \
    'plugins/*.cpp' 'plugins/*.h' 'tests/*.cpp' 'tests/*.h')

if [ -s "$report" ]; then
    echo "Calls MSVC deprecates or Windows lacks, outside platform files (*_posix.cpp /"
    echo "*_windows.cpp); move them behind a platform function, or mark a POSIX-only test:"
    cat "$report"
    exit 1
fi
echo "no deprecated-CRT or POSIX-only calls outside platform files"
