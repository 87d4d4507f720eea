#!/usr/bin/env bash
# Fails when a source file differs from what clang-format (.clang-format) makes of it.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Tracked files and new ones git does not ignore (a file not yet added is checked before its
# commit, not first by CI); a tracked file deleted in the working tree is left out.
mapfile -t files < <(git ls-files --cached --others --exclude-standard \
  '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' | grep -v '^shared/' | sort -u |
  while IFS= read -r f; do [[ -f $f ]] && printf '%s\n' "$f"; done)
clang-format --dry-run --Werror "${files[@]}"
echo "format: ${#files[@]} files clean"
