#!/usr/bin/env bash
# shellcheck disable=SC2016  # $INSTDIR, ${server}, ...: NSIS text, searched for literally
# Builds the Windows installer from the staged project (installer/windows/stage: stand-in files
# laid out like a Windows build, the real NSIS settings of installer/cmake/CrucibleNsis.cmake)
# with Debian's makensis, then checks what the generated script does: the service registered
# and started only with the server component, the firewall rule added, and both removed by the
# uninstaller before it deletes the files; each component's files, none in two components.
#   check-nsis-installer.sh [BUILD_DIR]   (default: a temporary folder, removed afterwards)
# CMAKE, CPACK and MAKENSIS name the tools (default: from PATH). Run by CTest as installer.nsis.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cmake="${CMAKE:-cmake}"
cpack="${CPACK:-cpack}"
makensis="${MAKENSIS:-makensis}"
command -v "$makensis" >/dev/null || { echo "makensis not found (apt-get install nsis)"; exit 1; }
if [ $# -ge 1 ]; then
    build="$1"
else
    build="$(mktemp -d)"
    trap 'rm -rf "$build"' EXIT
fi
rm -rf "$build"
mkdir -p "$build"
build="$(cd "$build" && pwd)"

"$cmake" -S "$root/installer/windows/stage" -B "$build" >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; echo "FAIL: configuring the staged project"; exit 1; }
# makensis's own log (-O, relative to cpack's folder) keeps its warnings, which CPack drops.
(cd "$build" && "$cpack" -G NSIS -D "CPACK_NSIS_EXECUTABLE=$makensis" \
    -D "CPACK_NSIS_EXECUTABLE_PRE_ARGUMENTS=V2;Omakensis.log") >"$build/cpack.log" 2>&1 ||
    { cat "$build/cpack.log"; [ -f "$build/makensis.log" ] && tail -30 "$build/makensis.log"
      echo "FAIL: cpack -G NSIS"; exit 1; }

fail=0
bad() { echo "FAIL: $*"; fail=1; }

# The installer: a Windows executable made by NSIS, bigger than the stub alone.
exe="$(find "$build" -maxdepth 1 -name '*.exe' | head -n 1)"
if [ -z "$exe" ]; then
    bad "no installer .exe in $build"
else
    size=$(stat -c %s "$exe")
    [ "$size" -gt 51200 ] || bad "$exe is only $size bytes"
    [ "$(head -c 2 "$exe")" = "MZ" ] || bad "$exe is not a Windows executable"
    grep -aq NullsoftInst "$exe" || bad "$exe carries no NSIS data block"
    echo "installer: $(basename "$exe"), $size bytes"
fi

# makensis's warnings: only the two that CMake's own NSIS template always causes.
if [ -f "$build/makensis.log" ]; then
    warnings="$(grep -E '^warning [0-9]+:' "$build/makensis.log" |
        grep -v 'function "\(un\.\)\?select_NT_profile" not referenced' || true)"
    [ -z "$warnings" ] || bad "makensis warns:"$'\n'"$warnings"
else
    bad "makensis wrote no log (CPACK_NSIS_EXECUTABLE_PRE_ARGUMENTS ignored?)"
fi

nsi="$(find "$build/_CPack_Packages" -path '*/NSIS/project.nsi' | head -n 1)"
[ -n "$nsi" ] || { echo "FAIL: no _CPack_Packages/*/NSIS/project.nsi"; exit 1; }
# block START_REGEX END_REGEX: the script's lines from a START line to the next END line.
block() { awk -v s="$1" -v e="$2" 'f && $0 ~ e {exit} $0 ~ s {f=1} f' "$nsi"; }
core="$(block '^Section "-Core installation"' '^SectionEnd')"
uninstall="$(block '^Section "Uninstall"' '^SectionEnd')"
has() {  # has NAME TEXT FIXED_STRING...
    local name="$1" text="$2"
    shift 2
    for s in "$@"; do grep -qF -- "$s" <<<"$text" || bad "$name lacks: $s"; done
}
line_of() { grep -nF -- "$2" <<<"$1" | head -n 1 | cut -d: -f1; }

# Settings: 64-bit folder, the old version uninstalled first, the MUI pages, the components.
has "project.nsi" "$(cat "$nsi")" \
    'InstallDir "$PROGRAMFILES64\Crucible"' \
    'StrCmp "ON" "ON" 0 inst' \
    '!insertmacro MUI_PAGE_LICENSE' '!insertmacro MUI_PAGE_DIRECTORY' \
    '!insertmacro MUI_PAGE_COMPONENTS' '!insertmacro MUI_PAGE_INSTFILES' \
    '!insertmacro MUI_UNPAGE_CONFIRM'
grep -qE '^Section .*"[^"]+" studio$' "$nsi" || bad "no section for the studio component"
grep -qE '^Section .*"[^"]+" server$' "$nsi" || bad "no section for the server component"
grep -qE '^Section "-[^"]+" common$' "$nsi" || bad "no hidden section for the common component"

# Install: the service and the firewall rule, only when the server component is chosen (the
# section-flag test jumps past them to a label after the last of them).
install_service='\bin\crucible-agent.exe" --install-service --listen 0.0.0.0:7443 --data "'
start_service='\sc.exe" start crucible-agent'
firewall_add='\netsh.exe" advfirewall firewall add rule name="Crucible agent" dir=in action=allow protocol=TCP localport=7443'
has "the install section" "$core" 'SectionGetFlags ${server}' '\icacls.exe" "' \
    "$install_service" "$start_service" "$firewall_add" \
    'SectionGetFlags ${studio}' '\Crucible Studio.lnk" "$INSTDIR\bin\crucible-studio.exe"'
guard=$(line_of "$core" 'SectionGetFlags ${server}')
skip="$(grep -A3 -F 'SectionGetFlags ${server}' <<<"$core" |
    sed -n 's/^ *IntCmp \$R0 0 \([A-Za-z0-9_]*\)$/\1/p' | head -n 1)"
if [ -z "$guard" ] || [ -z "$skip" ]; then
    bad "the service commands are not guarded by the server section's flag"
else
    target=$(grep -n "^ *$skip:" <<<"$core" | head -n 1 | cut -d: -f1)
    for s in "$install_service" "$start_service" "$firewall_add"; do
        at=$(line_of "$core" "$s")
        if ! { [ -n "$at" ] && [ -n "$target" ] && [ "$guard" -lt "$at" ] &&
               [ "$at" -lt "$target" ]; }; then
            bad "not skipped without the server component: $s"
        fi
    done
fi

# Uninstall: service and rule go before the files (a running service locks its executable);
# the agent's data folder stays.
uninstall_service='\bin\crucible-agent.exe" --uninstall-service'
firewall_delete='\netsh.exe" advfirewall firewall delete rule name="Crucible agent"'
has "the uninstall section" "$uninstall" "$uninstall_service" "$firewall_delete" \
    'Delete "$INSTDIR\bin\crucible-agent.exe"' 'Delete "$INSTDIR\bin\crucible-studio.exe"'
u=$(line_of "$uninstall" "$uninstall_service")
d=$(line_of "$uninstall" 'Delete "$INSTDIR\bin\crucible-agent.exe"')
if ! { [ -n "$u" ] && [ -n "$d" ] && [ "$u" -lt "$d" ]; }; then
    bad "the uninstaller does not remove the service before deleting crucible-agent.exe"
fi
! grep -qiE 'RMDir /r|Crucible\\agent"' <<<"$(grep -vE '^ *(;|DetailPrint)' <<<"$uninstall")" ||
    bad "the uninstaller deletes a folder recursively or the agent's data folder"

# Components: CPack's per-component removal lists name each component's files.
studio="$(block '^!macro Remove_\$\{studio\}' '^!macroend')"
server="$(block '^!macro Remove_\$\{server\}' '^!macroend')"
common="$(block '^!macro Remove_\$\{common\}' '^!macroend')"
files() { local out=(); for f in "$@"; do out+=("\$INSTDIR\\$f\""); done; printf '%s\n' "${out[@]}"; }
mapfile -t want < <(files 'bin\crucible-studio.exe' 'bin\Qt6Core.dll' 'bin\Qt6Gui.dll' \
    'bin\Qt6Widgets.dll' 'bin\platforms\qwindows.dll' 'bin\imageformats\qjpeg.dll')
has "the studio component" "$studio" "${want[@]}"
mapfile -t want < <(files 'bin\crucible-agent.exe' 'bin\crucible-worker.exe' 'bin\crucible.exe' \
    'bin\torch_cpu.dll' 'bin\torch_cuda.dll' 'bin\c10.dll' 'bin\c10_cuda.dll' \
    'bin\cudart64_13.dll' 'bin\cublas64_13.dll' 'bin\opencv_core4.dll')
has "the server component" "$server" "${want[@]}"
mapfile -t want < <(files 'share\doc\crucible\LICENSE' 'bin\sqlite3.dll' 'bin\libssl-3-x64.dll' \
    'bin\libcrypto-3-x64.dll' 'bin\vcruntime140.dll')
has "the common component" "$common" "${want[@]}"
grep -qiE 'bin\\(torch|c10|cu[a-z]*[0-9]|cudnn)[^\\]*\.dll"' <<<"$studio" &&
    bad "LibTorch or CUDA in the studio component"
grep -qE 'bin\\Qt6[^\\]*\.dll"' <<<"$server" && bad "Qt in the server component"

# The staged trees: no file in two components (CPack's installer would delete a shared file
# with the component dropped), no import libraries.
stage="$(dirname "$nsi")/$(basename "$exe" .exe)"
if [ -d "$stage/studio" ] && [ -d "$stage/server" ] && [ -d "$stage/common" ]; then
    twice="$(for c in common studio server; do (cd "$stage/$c" && find . -type f); done |
        tr '[:upper:]' '[:lower:]' | sort | uniq -d)"
    [ -z "$twice" ] || bad "files in two components:"$'\n'"$twice"
    libs="$(find "$stage" -type f -iname '*.lib')"
    [ -z "$libs" ] || bad "import libraries in the installer:"$'\n'"$libs"
    echo "components: common $(find "$stage/common" -type f | wc -l), studio" \
        "$(find "$stage/studio" -type f | wc -l), server $(find "$stage/server" -type f | wc -l) files"
else
    bad "no staged component folders under $stage"
fi

[ "$fail" -eq 0 ] && echo "NSIS installer: all checks passed"
exit "$fail"
