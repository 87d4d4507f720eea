#!/usr/bin/env bash
# Fails when a source file differs from what clang-format (.clang-format) makes of it.
set -euo pipefail
cd "$(dirname "$0")/../.."
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' | grep -v '^shared/')
clang-format --dry-run --Werror "${files[@]}"
echo "format: ${#files[@]} files clean"
