#!/usr/bin/env bash
# Fails when a tracked C++ file differs from the root .clang-format style.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.hpp' 2>/dev/null || find app core plugins ui tests -name '*.cpp' -o -name '*.h')
[ ${#files[@]} -gt 0 ] || { echo "no C++ files found"; exit 1; }
clang-format --dry-run --Werror "${files[@]}"
echo "clang-format: ${#files[@]} files checked, all formatted"
