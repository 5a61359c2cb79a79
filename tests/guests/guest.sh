# The guest tests' commands: run inside a multi-node guest by tests/guests/run (busybox sh).
#
# Each command's stdout, stderr and exit status go to the console between marker lines;
# crates/cli/tests/guest.rs reads them and asserts what the layout implies. Nothing is
# asserted here: the host has the JSON parser and the layout's expectations. Sizes are
# small and passes few: TCG runs a few hundred times slower than the host and models no
# NUMA timing, so the tests check placement, verification and records, never figures.
# Arguments: names of the commands to run (all when none), e.g. `topo plan-mem`.

only="$*"
# Deterministic placement: NUMA balancing would be free to move unbound pages.
echo 0 >/proc/sys/kernel/numa_balancing 2>/dev/null

# run NAME ARGS...: numalab ARGS with its output between markers.
run() {
  name=$1
  shift
  if [ -n "$only" ] && ! echo " $only " | grep -q " ${name%%/*} "; then
    return 0
  fi
  start=$(date +%s)
  numalab "$@" >/tmp/out 2>/tmp/err
  rc=$?
  secs=$(($(date +%s) - start))
  # A newline after each part: a file that does not end in one must not swallow a marker.
  echo "@@@ BEGIN $name"
  cat /tmp/out
  echo
  echo "@@@ STDERR $name"
  cat /tmp/err
  echo
  echo "@@@ END $name rc=$rc secs=$secs"
}

# show NAME FILE: a file the guest wrote, between markers.
show() {
  [ -f "$2" ] || return 0
  echo "@@@ BEGIN $1"
  cat "$2"
  echo
  echo "@@@ END $1 rc=0 secs=0"
}

nodes=$(ls -d /sys/devices/system/node/node* | sed 's/.*node//' | sort -n | tr '\n' ' ')
ncpus=$(grep -c '^processor' /proc/cpuinfo)
echo "guest: nodes $nodes; $ncpus CPUs; kernel $(uname -r)"

run topo topo --json
# Memory tiers: the kernel's, and its rule on the HMAT (a kernel before 6.1 lists none).
run tiers tiers --json
# Weighted interleave (Linux 6.9 on): weights 3 and 1 on nodes 0 and 1 (the others keep
# theirs), then an allocation under MPOL_WEIGHTED_INTERLEAVE and where its pages landed.
# A kernel without the mode says so (unavailable) and exits 0.
wi=/sys/kernel/mm/mempolicy/weighted_interleave
if [ -d "$wi" ] && [ -z "$only" -o -n "$(echo " $only " | grep ' tiers ')" ]; then
  echo 3 >"$wi/node0"
  echo 1 >"$wi/node1"
fi
run tiers/interleave tiers --verify-interleave 64M --json

# Memory on every node, CPU-less ones too, threads one per node with CPUs: every page
# and every thread proved.
for n in $nodes; do
  run "plan-mem/$n" plan scatter:node --mem "$n" --size 4M --verify --json
done
# Relative memory from node 0's first CPU; a hop count no node has is refused (exit 2).
for k in 1 2 3 4 5; do
  run "plan-hops/$k" plan node:0 -n 1 --mem "hops:$k" --size 1M --verify --json
done
run plan-farthest plan node:0 -n 1 --mem farthest --size 1M --verify --json
run plan-interleave plan node:0 -n 1 --mem interleave --size 4M --verify --json
# One thread per node named: nodes without CPUs are skipped, and said to be.
run plan-scatter plan scatter:node -n "$(echo $nodes | wc -w)" --json

run matrix-latency matrix latency --size 256K --iterations 1 --json -o /tmp/matrix-latency.json
run model-fit model fit /tmp/matrix-latency.json --json
run matrix-bandwidth matrix bandwidth --size 1M --iterations 1 --json

# No settling (--noise-budget 1ms): TCG's timings mean nothing, and adding passes until
# a figure settles took most of a guest's time (the survey alone 412 s of 592).
run intervene intervene --size 16K --iterations 1 --noise-budget 1ms --json
run invalidate invalidate --size 16K --iterations 1 --noise-budget 1ms --json

run suite-placement suite placement --size 16K --iterations 1 --json
run suite-collectives suite collectives --only remote-read --sizes 1K --iterations 1 --json
run suite-earth suite earth --parts mask --loop-n 512 --chunks 64,512 --multipliers 1,2 --iterations 1 --json

# A program on node 0 whose memory is bound to node 1: numalab's own chase. The page
# reads are let take all the time they need (--pages-budget 100): under TCG on a busy host
# one numa_maps read can cost more CPU time than a small budget allows for the whole
# run, and then no read lands after the program has touched its memory. What is
# checked is where the pages are, not what reading them costs.
run record record -i 100 --pages-every 2 --pages-budget 100 -o /tmp/bound.trace -- numalab latency --cpu 0 --mem-node 1 --size 16M --iterations 300
run record-mem dump /tmp/bound.trace --json --metric process.mem
run record-locality dump /tmp/bound.trace --json --metric thread.page_locality
run record-info info /tmp/bound.trace
run monitor monitor -c 2 -i 200

run survey survey --quick --max-size 1M --noise-budget 1ms -o /tmp/survey
if [ -z "$only" ] || echo " $only " | grep -q " survey "; then
  show survey-results /tmp/survey/results.json
  show survey-report /tmp/survey/report.html
fi
# The recorded program ran on node 0 with its memory on node 1: what advise makes of it.
run advise advise /tmp/survey --trace /tmp/bound.trace --json
