#!/bin/sh
# One scenario of the cgroup v2 test VM (guest.sh starts it in the
# scenario's cgroup): doctor before anything is placed, execfarm run and
# serve by hand (smoke: every runtime, OOM, timeout of a process tree, a
# warm pool with reuse), the cgroup package's tests, the integration
# suite and the hostile suite, doctor again, then a check that nothing of
# a sandbox is left. Writes $out/$scenario-*.log and .rc.
scenario=$1
coverage=${2:-full} # full, or subset: the suites' tests below that the placement decides
out=$EXECFARM_OUT
bin=$EXECFARM_BIN
repo=$EXECFARM_REPO
export EXECFARM_WORKER=$bin/execfarm-worker EXECFARM_NODE_BUNDLE=$repo/runtime/node/bundle
# Tests that build a binary (testbin.Build) link these: no go build here.
export EXECFARM_TEST_PREBUILT=$bin
export EXECFARM_TEST_TIME_SCALE=${EXECFARM_TIME_SCALE:-}
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
n=0

# result NAME RC TEXT: one go-test-like line for a check of this script.
result() {
  if [ "$2" = 0 ]; then echo "ok  	cgroup2/$scenario/$1	$3"; else echo "FAIL	cgroup2/$scenario/$1	$3"; fi
}

# check NAME REGEX CMD...: run CMD, log its output indented, and pass
# when it exited 0 (REGEX "") or, whatever its exit, its output matches
# the extended regular expression REGEX.
check() {
  name=$1 want=$2; shift 2
  log=$out/$scenario-1-smoke.log
  echo "=== $name: $*" >> "$log"
  "$@" > /tmp/check.out 2>&1
  rc=$?
  sed 's/^/    /' /tmp/check.out >> "$log"
  cp /tmp/check.out /tmp/last.out
  if [ -n "$want" ]; then
    grep -qE "$want" /tmp/check.out && rc=0 || rc=1
    result "$name" "$rc" "output matches: $want" >> "$log"
  else
    result "$name" "$rc" "exit $rc" >> "$log"
  fi
  [ "$rc" = 0 ] || echo 1 > "$out/$scenario-1-smoke.rc"
}

# The subset: where sandboxes live, how they are killed, limited and
# measured, and what is left; the rest of the suites does not depend on
# the placement (host-service runs it all).
subset_integration='^(TestIsolationThroughTheAPI|TestTimeoutKillsTheProcessTree|TestMemoryLimitEndsInOOMKill|TestAccounting|TestPayloadPlacementByGate|TestSandboxReuse|TestSandboxReuseKeepsGoja|TestWarmPoolRunsGojaOnPreparedProcesses|TestPythonRuntime)$'
subset_hostile='^TestHostile$/^(cases|after)$/^(fork_bomb.sh|fork_bomb_python.py|thread_bomb.py|heap_bomb.py|tmpfs_charged_to_memory.py|tcp_buffers_charged.py|cgroup_namespace.sh|sleep_past_timeout.sh|daemon_double_fork_setsid.py|kill_all.sh|cpu_time_forked.sh|sysv_shm_bounded.py|session_sysv_shm_then_upload.py)$'

# suite NAME PKGDIR BINARY [PATTERN]: a test binary built on the host, run
# from its package's directory as `go test` would; PATTERN (-test.run)
# applies in the subset coverage.
suite() {
  start=$(date +%s)
  raw=$out/$scenario-$1.raw # the whole -test.v output, readable on the host while it runs
  run=${EXECFARM_RUN:-}
  [ "$coverage" = subset ] && [ -n "${4:-}" ] && run=$4
  (cd "$repo/$2" && "$bin/$3" -test.count=1 -test.timeout=40m -test.v ${run:+-test.run "$run"} > "$raw" 2>&1)
  rc=$?
  secs=$(( $(date +%s) - start ))
  log=$out/$scenario-$1.log
  # What go test prints without -v, plus every skip with its reason.
  grep -E '^(--- FAIL|--- SKIP|FAIL|panic:)|^\s+--- (FAIL|SKIP)' -A3 "$raw" | grep -v '^--$' > "$log"
  if [ "$rc" = 0 ]; then
    echo "ok  	github.com/execfarm/execfarm/$2 [cgroup v2, $scenario${run:+, -run $run}]	${secs}s" >> "$log"
  else
    tail -80 "$raw" >> "$log"
    echo "FAIL	github.com/execfarm/execfarm/$2 [cgroup v2, $scenario${run:+, -run $run}]	${secs}s" >> "$log"
  fi
  echo "$rc" > "$out/$scenario-$1.rc"
}

echo 0 > "$out/$scenario-1-smoke.rc"
: > "$out/$scenario-1-smoke.log"
check doctor-before "" "$bin/execfarm" doctor
check shell "" "$bin/execfarm" run --verbose --runtime shell -e 'echo shell; cat /proc/self/cgroup'
check goja "" "$bin/execfarm" run --verbose -e 'const n: number = 6 * 7; console.log("goja", n)'
check python "" "$bin/execfarm" run --verbose --runtime python -e 'print("python", sum(range(10)))'
# node starts slowly under TCG (it loads its bundle and compiles it): the
# default 30 s timeout, in the VM's time.
check node "" "$bin/execfarm" run --verbose --timeout $((30 * ${EXECFARM_TEST_TIME_SCALE:-1}))s --runtime node -e 'console.log("node", typeof k8s)'
# An OOM kill: FAILED, reason memory, the peak read from memory.peak.
check oom 'failed \(reason memory' "$bin/execfarm" run --verbose --memory 64Mi --runtime python -e 'b = bytearray(256 << 20)'
check oom-peak 'peak memory [0-9]+ bytes \(memory\.peak\)' cat /tmp/last.out
# A timeout kills the whole process tree: no sleep is left. The timeout
# counts the sandbox's start-up, seconds in the VM: in the VM's time, so
# that the program runs before it fires.
check timeout "reason timeout" "$bin/execfarm" run --verbose --timeout $((2 * ${EXECFARM_TEST_TIME_SCALE:-1}))s --runtime shell -e 'sleep 1000 & sleep 1000; wait'
check timeout-left-nothing "" sh -c '! pgrep -ax sleep'
# A fork bomb stays in its pids limit and the worker reports the end.
check fork-bomb "reason timeout" "$bin/execfarm" run --verbose --timeout $((3 * ${EXECFARM_TEST_TIME_SCALE:-1}))s --runtime shell -e 'bomb() { bomb | bomb & }; bomb & exec sleep 1000'
# A served supervisor with a warm pool whose sandboxes serve 3 executions
# each (reset in between).
sock=/tmp/smoke-$scenario.sock
"$bin/execfarm" serve --socket "$sock" --state-dir "/run/execfarm-smoke-$scenario" --cgroup-parent /execfarm-smoke \
  --warm-pool 2 --sandbox-reuse 3 --scripts-cache-dir /tmp/smoke-cache-$scenario > "/tmp/serve-$scenario.log" 2>&1 &
serve=$!
for i in $(seq 300); do [ -S "$sock" ] && break; sleep 0.2; done
for i in 1 2 3 4 5; do check "warm-pool-run-$i" "" "$bin/execfarm" run --socket "$sock" --verbose -e "console.log('warm', $i)"; done
check warm-pool-health "warm pool" "$bin/execfarm" health --socket "$sock"
kill -TERM "$serve"; wait "$serve"
check serve-log "" sh -c "cat /tmp/serve-$scenario.log; grep -q serving /tmp/serve-$scenario.log && ! grep -q '\[ERROR\]' /tmp/serve-$scenario.log"

suite 2-cgroup isolation/cgroup cgroup.test
suite 3-integration test/integration integration.test "$subset_integration"
suite 4-hostile test/hostile hostile.test "$subset_hostile"

log=$out/$scenario-5-after.log
echo 0 > "$out/$scenario-5-after.rc"
"$bin/execfarm" doctor > /tmp/doctor.out 2>&1
rc=$?
sed 's/^/    /' /tmp/doctor.out > "$log"
result doctor-after "$rc" "exit $rc" >> "$log"
[ "$rc" = 0 ] || echo 1 > "$out/$scenario-5-after.rc"
# Nothing of a sandbox is left: no process of a sandbox uid (2^30 and up),
# no cgroup below this scenario's own but the supervisor's leaf, no mount
# of a sandbox's state.
left=$(ps -eo uid=,pid=,args= | awk '$1 >= 1073741824')
cgs=$(find "/sys/fs/cgroup$own" -mindepth 1 -type d ! -name supervisor 2>/dev/null)
mnts=$(grep -E '/sb/sb-|execfarm-(itest|hostile|embedded|smoke)' /proc/self/mountinfo)
for what in left cgs mnts; do
  eval v=\$$what
  if [ -n "$v" ]; then
    echo "    $what: $v" >> "$log"; result "leftovers-$what" 1 "something is left" >> "$log"; echo 1 > "$out/$scenario-5-after.rc"
  fi
done
result leftovers 0 "no sandbox process, cgroup or mount left below $own" >> "$log"
