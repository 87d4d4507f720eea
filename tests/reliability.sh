#!/usr/bin/env bash
# Stops or kills one PE of a 4-PE job at each phase (init, barrier, wait, growth, transfer), under
# vshmemrun, vshmemrun with 2 simulated nodes, mpirun (PMIx bootstrap), and mpirun
# --enable-recovery (kills only: it does not stop the job, the survivors must), and reports how
# long the job took to end and what it left behind (processes, socket directories).
#
#   tests/reliability.sh VSHMEMRUN TARGET [MPIRUN]
#
# TARGET is tests/mpe/reliability_target.c. Fails when a killed PE does not end the job within
# its limit, when a stopped PE during init or growth is not reported within the bootstrap time
# limit (plus the launcher's grace), or when any process of the job outlives it. A PE stopped
# while the others wait in a barrier or wait_until, or put to it, is reported only: host-side
# waits have no time limit (a long computation must not hit one), a put to a mapped peer needs
# nothing from it, and a stopped process cannot be told from a slow one.
set -u
VSHMEMRUN=${1:?vshmemrun path}
TARGET=${2:?reliability_target path}
MPIRUN=${3:-}
export VSHMEM_BACKEND=host VSHMEM_BOOTSTRAP_TIMEOUT=4 VSHMEM_STAGED_ADDR=127.0.0.1
SOCKDIR=/tmp/vshmem-$(id -u)
failures=0
report=()

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

run_case() {
  local launcher=$1 sig=$2 phase=$3
  local out; out=$(mktemp)
  local cmd
  case $launcher in
    vshmemrun) cmd=("$VSHMEMRUN" -n 4 --grace 1 "$TARGET" "$phase") ;;
    sim2nodes) cmd=("$VSHMEMRUN" -n 4 --grace 1 --simulate-nodes 2 "$TARGET" "$phase") ;;
    mpirun)
      cmd=("$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader
           -np 4 -x VSHMEM_BOOTSTRAP=pmix -x VSHMEM_BACKEND -x VSHMEM_BOOTSTRAP_TIMEOUT
           "$TARGET" "$phase") ;;
    # mpirun that does not stop the job: the survivors must end it themselves (the job watch).
    mpirun-recovery)
      cmd=("$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader
           --enable-recovery -np 4 -x VSHMEM_BOOTSTRAP=pmix -x VSHMEM_BACKEND
           -x VSHMEM_BOOTSTRAP_TIMEOUT "$TARGET" "$phase") ;;
  esac
  local dirs_before; dirs_before=$(ls "$SOCKDIR" 2>/dev/null | sort)
  setsid "${cmd[@]}" >"$out" 2>&1 </dev/null &
  local lpid=$!
  # Wait until every PE has said where it is (for init: PE 1 only; the others are in init).
  local want=4; [ "$phase" = init ] && want=1
  local t_ready; t_ready=$(now)
  while [ "$(grep -c " phase $phase" "$out")" -lt $want ]; do
    if ! kill -0 $lpid 2>/dev/null || [ "$(elapsed "$t_ready" "$(now)" | cut -d. -f1)" -ge 20 ]; then
      report+=("$launcher $sig $phase: the job did not reach the phase: $(tail -2 "$out" | tr '\n' ' ')")
      failures=$((failures + 1)); kill -9 -- -$lpid 2>/dev/null; rm -f "$out"; return
    fi
    sleep 0.05
  done
  sleep 0.3  # the others enter the call
  local pids; pids=$(sed -n 's/^.*reliability: PE [0-9-]* pid \([0-9]*\).*$/\1/p' "$out")
  local victim; victim=$(sed -n 's/^.*reliability: PE 1 pid \([0-9]*\).*$/\1/p' "$out" | head -1)
  local limit=12
  local expect_end=1
  if [ "$sig" = STOP ] && { [ "$phase" = barrier ] || [ "$phase" = wait ] ||
                             [ "$phase" = transfer ]; }; then
    limit=4; expect_end=0
  fi
  local t0; t0=$(now)
  kill -s "$sig" "$victim"
  local ended=0
  while [ "$(elapsed "$t0" "$(now)" | cut -d. -f1)" -lt $limit ]; do
    if ! kill -0 $lpid 2>/dev/null; then ended=1; break; fi
    sleep 0.05
  done
  local t1; t1=$(now)
  local rc=-
  if [ $ended = 1 ]; then wait $lpid; rc=$?; fi
  local took; took=$(elapsed "$t0" "$t1")
  local cause; cause=$(grep -m1 -E "^vshmem(run)?: " "$out" | cut -c1-150)
  if [ $ended = 0 ]; then
    # End it ourselves: continue the stopped PE, stop the launcher, then kill what is left.
    kill -CONT "$victim" 2>/dev/null
    kill -TERM -- -$lpid 2>/dev/null; sleep 1.5; kill -9 -- -$lpid 2>/dev/null
    wait $lpid 2>/dev/null
  fi
  sleep 0.2
  local left=""
  for p in $pids; do
    if [ -e /proc/$p ] && ! grep -q '^State:.*Z' /proc/$p/status 2>/dev/null; then left="$left $p"; fi
  done
  local dirs_after; dirs_after=$(ls "$SOCKDIR" 2>/dev/null | sort)
  local new_dirs; new_dirs=$(comm -13 <(echo "$dirs_before") <(echo "$dirs_after") | grep -c . || true)
  local line="$launcher kill -$sig at $phase:"
  if [ $ended = 1 ]; then
    line="$line job ended in ${took} s (status $rc)"
  else
    line="$line still waiting after ${took} s"
  fi
  [ -n "$left" ] && line="$line; LEFTOVER processes:$left"
  [ "$new_dirs" != 0 ] && line="$line; $new_dirs socket directory left in $SOCKDIR (the next job removes it after 60 s)"
  [ -n "$cause" ] && line="$line; first message: $cause"
  if [ $expect_end = 1 ] && [ $ended = 0 ]; then line="FAIL $line"; failures=$((failures + 1)); fi
  if [ $expect_end = 0 ] && [ $ended = 0 ]; then
    line="$line (expected: waits have no time limit; puts to a mapped peer need nothing from it)"
  fi
  if [ -n "$left" ]; then
    [ "${line#FAIL}" = "$line" ] && { line="FAIL $line"; failures=$((failures + 1)); }
    for p in $left; do kill -9 "$p" 2>/dev/null; done
  fi
  report+=("$line")
  rm -f "$out"
}

launchers=(vshmemrun sim2nodes)
[ -n "$MPIRUN" ] && launchers+=(mpirun mpirun-recovery)
for launcher in "${launchers[@]}"; do
  sigs=(KILL STOP)
  # A stopped PE is not a dead one: with nobody stopping the job, only kills are decided.
  [ "$launcher" = mpirun-recovery ] && sigs=(KILL)
  for sig in "${sigs[@]}"; do
    for phase in init barrier wait growth transfer; do
      run_case "$launcher" "$sig" "$phase"
    done
  done
done
printf '%s\n' "${report[@]}"
echo "reliability: ${#report[@]} cases, $failures failed"
[ $failures = 0 ]
