#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy at the root: the naming rules of CONVENTIONS.md, bugprone-*,
# performance-*) on the host sources of runtime/ and launcher/ and the .hpp headers next to them
# (the .h files there are C ABIs with C names); any finding fails. Needs a configured build
# directory (compile_commands.json; default: build):
#   tests/tools/clang_tidy.sh [build-dir] [file ...]
# CLANG_TIDY_CHECKS is added to .clang-tidy's checks (e.g. '-performance-unnecessary-value-param',
# which tests/run_all.sh leaves out: it is ~70-80% of clang-tidy 14's time on this tree).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shift || true
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [[ -z $tidy ]]; then
  echo "clang-tidy: not installed (tests/tools/install_deps.sh installs it)" >&2
  exit 1
fi
if [[ ! -f $build/compile_commands.json ]]; then
  echo "clang-tidy: $build/compile_commands.json missing: configure with cmake first" >&2
  exit 1
fi
if (($#)); then
  files=("$@")
else
  # The sources this build compiles (a plugin whose library is absent is not in the database).
  mapfile -t files < <(python3 - "$build/compile_commands.json" <<'PY'
import json, os, subprocess, sys
built = {os.path.realpath(e["file"]) for e in json.load(open(sys.argv[1]))}
tracked = subprocess.run(["git", "ls-files", "runtime/*.cpp", "launcher/*.cpp"],
                         capture_output=True, text=True, check=True).stdout.split()
print("\n".join(f for f in tracked if os.path.realpath(f) in built))
PY
  )
fi
echo "clang-tidy: ${#files[@]} files"
# xargs exits non-zero when any clang-tidy run found something.
set +e
printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 4 "$tidy" -p "$build" --quiet --warnings-as-errors='*' \
    ${CLANG_TIDY_CHECKS:+"--checks=$CLANG_TIDY_CHECKS"} \
    --header-filter="$PWD/(runtime|launcher)/.*\.hpp$" 2>&1 |
  grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$'
statuses=("${PIPESTATUS[@]}")
set -e
status=${statuses[1]}
if ((status != 0)); then
  echo "clang-tidy: findings above (fix them, or explain a NOLINT(check) at the line)" >&2
  exit 1
fi
echo "clang-tidy: clean"
