#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy at the root: the naming rules of CONVENTIONS.md, bugprone-*,
# performance-*) on the host sources of runtime/ and launcher/ and the .hpp headers next to them
# (the .h files there are C ABIs with C names); any finding fails. Needs a configured build
# directory (compile_commands.json; default: build):
#   tests/tools/clang_tidy.sh [build-dir] [file ...]
# It uses $CLANG_TIDY, else clang-tidy-22 (Debian 12's security archive; install_deps.sh installs
# it), else clang-tidy-14 or clang-tidy. CLANG_TIDY_CHECKS is added to .clang-tidy's checks.
# Before clang-tidy 21, performance-unnecessary-value-param costs ~15 s of CPU a file here (75-80%
# of all checks: for every by-value parameter it finds unmodified, in system headers too, it
# searches the whole translation unit for uses of the function other than calls); clang-tidy 22
# takes 0.4 s. With such an old clang-tidy the check is left out (said in the output), unless
# CLANG_TIDY_ALL=1.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shift || true
tidy=${CLANG_TIDY:-$(command -v clang-tidy-22 || command -v clang-tidy-14 || command -v clang-tidy ||
  true)}
if [[ -z $tidy ]]; then
  echo "clang-tidy: not installed (tests/tools/install_deps.sh installs it)" >&2
  exit 1
fi
major=$("$tidy" --version | sed -n 's/.*LLVM version \([0-9]*\).*/\1/p' | head -1)
checks=${CLANG_TIDY_CHECKS:-}
if ((${major:-0} < 21)) && [[ ${CLANG_TIDY_ALL:-0} != 1 ]]; then
  checks+=${checks:+,}-performance-unnecessary-value-param
  echo "clang-tidy $major: performance-unnecessary-value-param left out (too slow before clang-tidy" \
    "21: install clang-tidy-22, or CLANG_TIDY_ALL=1)"
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
echo "clang-tidy $major: ${#files[@]} files"
# xargs exits non-zero when any clang-tidy run found something.
set +e
printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 4 "$tidy" -p "$build" --quiet --warnings-as-errors='*' \
    ${checks:+"--checks=$checks"} \
    --header-filter="$PWD/(runtime|launcher)/.*\.hpp$" 2>&1 |
  grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^\[[0-9]+/[0-9]+\]( \([0-9]+/[0-9]+\))? Processing file '
statuses=("${PIPESTATUS[@]}")
set -e
status=${statuses[1]}
if ((status != 0)); then
  echo "clang-tidy: findings above (fix them, or explain a NOLINT(check) at the line)" >&2
  exit 1
fi
echo "clang-tidy: clean"
