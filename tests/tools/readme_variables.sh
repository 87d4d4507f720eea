#!/bin/bash
# The README's variable table must be the configuration table (runtime/common/config.hpp) as
# `vshmem-info --readme` prints it.
#   readme_variables.sh VSHMEM_INFO README.md           check: exit 1 with a diff when they differ
#   readme_variables.sh VSHMEM_INFO README.md --update  rewrite the README's block
set -euo pipefail
usage="usage: readme_variables.sh VSHMEM_INFO README.md [--update]"
info=${1:?$usage} readme=${2:?$usage} mode=${3:-check}
begin='<!-- BEGIN generated variable table -->'
end='<!-- END generated variable table -->'
grep -qxF "$begin" "$readme" && grep -qxF "$end" "$readme" || {
  echo "$readme: the markers '$begin' / '$end' are missing" >&2
  exit 1
}
want=$(mktemp) have=$(mktemp)
trap 'rm -f "$want" "$have"' EXIT
"$info" --readme >"$want"
awk -v b="$begin" -v e="$end" '$0==e{on=0} on{print} $0==b{on=1}' "$readme" >"$have"
if [[ $mode == --update ]]; then
  awk -v b="$begin" -v e="$end" -v f="$want" \
    '$0==b{print; while ((getline l < f) > 0) print l; skip=1; next} $0==e{skip=0} !skip{print}' \
    "$readme" >"$readme.new"
  mv "$readme.new" "$readme"
  exit 0
fi
if ! diff -u "$have" "$want"; then
  echo "README.md's variable table differs from runtime/common/config.hpp (- README, + table):" \
    "run tests/tools/readme_variables.sh build/bin/vshmem-info README.md --update" >&2
  exit 1
fi
echo "README.md's variable table matches the configuration table"
