#!/usr/bin/env python3
"""Who switches a DSM run's rank threads out and who wakes them, inside the timed run.

    perf record -o sched.data -e sched:sched_switch -e sched:sched_wakeup \
        -e timer:hrtimer_expire_entry -a -- numalab dsm run sor --ranks 2 --threads 1 \
        --input paper --protocol lmwc
    perf script -i sched.data -F pid,tid,cpu,time,event,trace | \
        scripts/dsm-sched.py --ms=RANK_MS [--latency] [--timeline] [--threads] [--futex]

RANK_MS is rank 0's `time ms` from the run's table: the window starts when the later
rank's app service thread appears (the timed section starts right after, at an MPI
barrier) and lasts that long. Outside it, rank 0 reading the result faults in each of
the other rank's pages, which dominates whole-run counts. Each phase (the cost probe,
the app) has its own service and reaper threads; the app's are the last of each rank
process. Roles: rN.compute (the main thread), rN.service, rN.reaper; a wake counts as
`timer` when an hrtimer_wakeup expired on that CPU within 20 µs before it.

--futex (record `-e syscalls:sys_enter_futex -e syscalls:sys_exit_futex` too): the
service threads' futex waits. Shared waits are doorbell sleeps (a word per rank, 64
bytes apart in a page of their own; rings are shared FUTEX_WAKEs on it); a sleep that
ran to its timeout (over 1 ms) with a ring to that word less than 100 µs before it began
and none during it slept past a message already sent (a lost ring). Private waits are
mutexes and condition variables (the rank's state lock among them): a service thread
waiting there waits for another thread of its rank.
"""
import re, sys, collections
ev = re.compile(r'\s*(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)')
sw = re.compile(r'prev_comm=(.*) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)')
wk = re.compile(r'comm=(.*) pid=(\d+) prio=\d+ target_cpu=(\d+)')
tg = {}; comm = {}; first = {}
recs = []
for line in sys.stdin:
    m = ev.match(line)
    if not m: continue
    pid, tid, cpu, t, e, tr = int(m[1]), int(m[2]), int(m[3]), float(m[4]), m[5], m[6]
    if pid > 0: tg[tid] = pid
    recs.append((pid, tid, cpu, t, e, tr))
    if e == 'sched:sched_switch':
        s = sw.match(tr)
        if s: comm[int(s[2])] = s[1]; comm[int(s[5])] = s[4]
for (pid, tid, *_ ) in recs:
    first.setdefault(pid, _[1])
procs = sorted({tg[t] for t, c in comm.items() if c == 'dsm-service' and t in tg}, key=lambda p: first.get(p, 0))
app = procs[-2:]
print('DSM processes', procs, 'app run', app)
# Each phase (costs probe, app) has its own service and reaper threads: the app's are the
# last of each process; count only inside the app's service threads' lifetime.
seen = {}
for (pid, tid, cpu, t, e, tr) in recs:
    if e == 'sched:sched_switch':
        s_ = sw.match(tr)
        if s_:
            for x, c in ((int(s_[2]), s_[1]), (int(s_[5]), s_[4])):
                seen.setdefault(x, [t, t])[1] = t
phase = {}
for p in app:
    for name in ('dsm-service', 'dsm-reaper'):
        ts = sorted((seen[x][0], x) for x in comm if comm[x] == name and tg.get(x) == p and x in seen)
        phase[(p, name)] = ts[-1][1] if ts else None
svc = [phase[(p, 'dsm-service')] for p in app]
t_lo = max(seen[x][0] for x in svc); t_hi = min(seen[x][1] for x in svc)
for a in sys.argv:
    if a.startswith('--ms='):
        t_hi = min(t_hi, t_lo + float(a[5:]) / 1e3)
print('window %.1f ms from %.6f to %.6f' % ((t_hi - t_lo) * 1e3, t_lo, t_hi))
def role(t):
    p = tg.get(t)
    if p not in app: return None
    c = comm.get(t, '?')
    r = 'r%d.' % app.index(p)
    if t == p: return r + 'compute'
    if c in ('dsm-service', 'dsm-reaper'):
        return r + c[4:] if phase.get((p, c)) == t else None
    return r + 'other:' + c
out = collections.Counter(); nextc = collections.Counter(); waker = collections.Counter()
timer_cpu = {}
for (pid, tid, cpu, t, e, tr) in recs:
    if not (t_lo <= t <= t_hi): continue
    if e == 'timer:hrtimer_expire_entry':
        timer_cpu[cpu] = (t, 'hrtimer_wakeup' in tr)
    elif e == 'sched:sched_switch':
        s = sw.match(tr)
        if not s: continue
        pr = role(int(s[2]))
        if pr:
            st = 'preempted' if s[3].startswith('R') else 'slept'
            out[(pr, st)] += 1
            if st == 'preempted' and pr.endswith('compute'):
                nr = role(int(s[5])) or ('idle' if s[5] == '0' else 'foreign:' + s[4].split()[0])
                nextc[(pr, nr)] += 1
    elif e == 'sched:sched_wakeup':
        w = wk.match(tr)
        if not w: continue
        tr_ = role(int(w[2]))
        if not tr_: continue
        tc = timer_cpu.get(cpu)
        if tc and tc[1] and t - tc[0] < 20e-6:
            who = 'timer'
        else:
            who = role(tid) or ('idle/irq' if tid == 0 else 'foreign:' + comm.get(tid, '?').split()[0])
        waker[(tr_, who)] += 1
print('\nswitched out (thread, why): count')
for k, v in sorted(out.items()): print('  %-28s %-10s %6d' % (k[0], k[1], v))
print('\ncompute thread preempted by:')
for k, v in sorted(nextc.items(), key=lambda x: -x[1]): print('  %-14s <- %-24s %6d' % (k[0], k[1], v))
print('\nwoken (thread <- waker):')
for k, v in sorted(waker.items(), key=lambda x: (x[0][0], -x[1])): print('  %-14s <- %-24s %6d' % (k[0], k[1], v))
if '--timeline' in sys.argv:
    b = collections.defaultdict(collections.Counter)
    for (pid, tid, cpu, t, e, tr) in recs:
        if not (t_lo <= t <= t_hi) or e != 'sched:sched_switch': continue
        s_ = sw.match(tr)
        r_ = role(int(s_[2]))
        if r_: b[int((t - t_lo) * 1000 // 25)][r_ + ('P' if s_[3].startswith('R') else 'S')] += 1
    for k in sorted(b): print('%4d ms' % (k * 25), dict(b[k]))
if '--threads' in sys.argv:
    t0 = min(seen[x][0] for x in seen)
    for p in app:
        for x in sorted((x for x in seen if tg.get(x) == p), key=lambda x: seen[x][0]):
            print(p, x, comm.get(x), '%.1f..%.1f ms' % ((seen[x][0]-t0)*1e3, (seen[x][1]-t0)*1e3))
if '--latency' in sys.argv:
    # wake-to-run latency of the service threads: per wake, who woke it, how long until
    # it ran, and what ran on that CPU meanwhile (the last task switched out for it)
    # (a wake of a thread that is on a CPU already, polling, is not a wait: skipped)
    pend = {}; lat = collections.defaultdict(list); before = collections.Counter()
    oncpu = set()
    for (pid, tid, cpu, t, e, tr) in recs:
        if e == 'sched:sched_switch':
            s_ = sw.match(tr)
            if s_:
                oncpu.discard(int(s_[2])); oncpu.add(int(s_[5]))
        if not (t_lo <= t <= t_hi): continue
        if e == 'sched:sched_wakeup':
            w = wk.match(tr)
            if not w or int(w[2]) in oncpu: continue
            r_ = role(int(w[2]))
            if r_ and r_.endswith('service'):
                tc = timer_cpu.get(cpu)
                who = 'timer' if (tc and tc[1] and t - tc[0] < 20e-6) else (role(tid) or 'other')
                pend[int(w[2])] = (t, who)
        elif e == 'sched:sched_switch':
            s_ = sw.match(tr)
            n = int(s_[5])
            if n in pend:
                t0, who = pend.pop(n)
                lat[(role(n), who)].append((t - t0) * 1e6)
                if t - t0 > 100e-6: before[(role(n), role(int(s_[2])) or s_[1].split()[0])] += 1
    print('\nservice wake-to-run latency (µs): median, p90, max, n')
    for k, v in sorted(lat.items()):
        v.sort(); print('  %-12s <- %-14s %7.1f %7.1f %8.1f %5d' % (k[0], k[1], v[len(v)//2], v[int(len(v)*.9)], v[-1], len(v)))
    print('  waits over 100 µs, what ran before it:', dict(before.most_common(8)))
if '--futex' in sys.argv:
    fx = re.compile(r'uaddr: (0x[0-9a-f]+), op: (0x[0-9a-f]+)')
    enter = {}; rings = collections.defaultdict(list); bell = []; priv = collections.defaultdict(list)
    for (pid, tid, cpu, t, e, tr) in recs:
        r_ = role(tid)
        if not r_: continue
        if e == 'syscalls:sys_enter_futex':
            m = fx.search(tr)
            addr, op = int(m[1], 16), int(m[2], 16)
            if op == 1: rings[(addr & 0xfff) // 64].append(t)
            enter[tid] = (t, addr, op)
        elif e == 'syscalls:sys_exit_futex' and tid in enter and r_.endswith('service'):
            t0, addr, op = enter.pop(tid)
            if not (t_lo <= t0 <= t_hi) or op & 0x7f not in (0, 9): continue
            ret = int(tr, 16); ret = ret - (1 << 64) if ret >= 1 << 63 else ret
            if op & 128: priv[r_].append((t - t0) * 1e6)
            else: bell.append((r_, (addr & 0xfff) // 64, t0, t, ret))
    lost = collections.defaultdict(list)
    for (r_, slot, t0, t1, ret) in bell:
        rs = rings[slot]
        before_ = [x for x in rs if t0 - 100e-6 <= x < t0]
        during = [x for x in rs if t0 <= x < t1]
        if ret == -110 and t1 - t0 > 1e-3 and before_ and not during:
            lost[r_].append((t1 - t0) * 1e6)
    print('\nservice futex waits: doorbell sleeps, lost rings (n, total µs), private waits (n, median, max, total µs)')
    for r_ in sorted({b[0] for b in bell} | set(priv)):
        v = sorted(priv[r_]); l_ = lost[r_]
        print('  %-12s %5d %4d %8.0f   %4d %7.0f %7.0f %8.0f' % (r_, sum(1 for b in bell if b[0] == r_), len(l_), sum(l_),
              len(v), v[len(v)//2] if v else 0, v[-1] if v else 0, sum(v)))
