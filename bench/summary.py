#!/usr/bin/env python3
"""bench/summary.py LOG: issue 45's table of the P-rows, from the output
of one `make bench` run (bench/run.sh writes every script's output to LOG
and calls this at the end).

One row per P-row: the peer's figure of the same run, ours, the ratio,
the goal and whether it is met. A row whose script, peer or floor did not
run says so ("not run: why") instead of a figure: nothing is carried over
from another run. The figures are read from the lines each script prints
(bench/*.sh, bench/bench_*.c); a line that is missing leaves its row
"not run", never a guess.

  P1 claim+complete, 1 worker, durable   queue.sh   vs BullMQ c=1 AOF   >= 3x
  P2 the same, 4 workers                 queue.sh   vs BullMQ c=16      >= 1x
  P3 cron next(), tz-aware               cron.sh    vs croner/cron-parser
                                                    every case <= 0.5 us, >= 100x
  P4 enqueue (issue 45 sets no goal)     queue.sh   vs BullMQ AOF       -
  P5 task start lateness p99             daemon.sh  vs the spawn floor  <= floor + 1 ms
  P6 PostgreSQL claim+complete, 1 / 4    pg.sh      vs pg-boss (16 w, batch 100) >= 2x
  P7 100,000 schedules: check, status    scale.sh   vs BullMQ memory    check <= 2 s, status <= 200 ms
  P8 no-op jobs vs the same commits      queue.sh   vs bench_floor      >= 0.5
  P9 1,000 slots at one instant          scale.sh   vs the spawn floor  <= 1.5x floor (SQLite), <= 2 s (PostgreSQL)
"""
import math
import re
import sys


def kv(line):
    return {k: v for k, v in (w.split("=", 1) for w in line.split() if "=" in w)}


def first(lines, pattern):
    for l in lines:
        if re.search(pattern, l):
            return l
    return None


def num(line, key):
    if line is None:
        return None
    m = re.search(r"(?:^|\s)" + re.escape(key) + r"=([-0-9.]+)", line)
    return float(m.group(1)) if m else None


def fmt(v, unit=""):
    if v is None:
        return "not run"
    if abs(v) >= 100:
        s = f"{v:,.0f}"
    elif abs(v) >= 10:
        s = f"{v:.1f}"
    else:
        s = f"{v:.3g}"
    return s + (" " + unit if unit else "")


def met(ok):
    return "yes" if ok else "NO"


def rows(lines):
    out = []
    # ---- queue.sh: P1, P2, P4, P8
    w1 = first(lines, r"^ours case=work workers=1 ")
    w4 = first(lines, r"^ours case=work workers=4 ")
    enq = first(lines, r"^ours case=enqueue ")
    aof1 = first(lines, r"^bullmq_aof case=work concurrency=1 ")
    np16 = first(lines, r"^bullmq_nopersist case=work concurrency=16 ")
    aofe = first(lines, r"^bullmq_aof case=enqueue")
    floor = first(lines, r"^floor case=commits ")
    skip_bull = first(lines, r"queue\.sh: .*BullMQ side skipped")

    def pair(name, ours_l, peer_l, key, unit, goal, goal_ok, peer_what, why):
        o, p = num(ours_l, key), num(peer_l, key)
        if o is None:
            return (name, "-", "not run", "-", goal, "not run")
        if p is None:
            return (name, f"{peer_what}: not run ({why})", fmt(o, unit), "-",
                    goal, "not run")
        r = o / p
        return (name, f"{peer_what} {fmt(p, unit)}", fmt(o, unit),
                f"{r:.2f}x", goal, met(goal_ok(r)) if goal_ok else "-")

    nobull = "redis-server or node missing" if skip_bull else "no line"
    out.append(pair("P1 claim+complete, 1 worker", w1, aof1, "jobs_per_s",
                    "jobs/s", ">= 3x", lambda r: r >= 3, "BullMQ c=1 AOF",
                    nobull))
    out.append(pair("P2 claim+complete, 4 workers", w4, np16, "jobs_per_s",
                    "jobs/s", ">= 1x", lambda r: r >= 1,
                    "BullMQ c=16 no persistence", nobull))
    # ---- cron.sh: P3
    nexts = []
    for l in lines:
        m = re.match(r"^next\s+(\S+)\s+(.+?)\s+([\d.]+) ns\s+(\d+) ns\s+(\d+) ns\s+(\d+)x\s*$", l)
        if m:
            ns = float(m.group(3))
            best = min(float(m.group(4)), float(m.group(5)))
            nexts.append((ns, best / ns if ns > 0 else 0, m.group(1), m.group(2)))
    if nexts:
        worst = max(nexts)
        lo = min(n[1] for n in nexts)
        out.append(("P3 cron next(), tz-aware",
                    f"croner/cron-parser, the faster per case",
                    f"max {worst[0]:.0f} ns ({worst[2]} {worst[3]})",
                    f"min {lo:.0f}x", "every case <= 500 ns, >= 100x",
                    met(worst[0] <= 500 and lo >= 100)))
    else:
        why = "node/npm missing" if first(lines, r"cron\.sh: node and npm") else "no line"
        out.append(("P3 cron next(), tz-aware", f"croner: not run ({why})",
                    "not run", "-", "every case <= 500 ns, >= 100x", "not run"))
    out.append(pair("P4 enqueue (no goal in issue 45)", enq, aofe, "jobs_per_s",
                    "jobs/s", "-", None, "BullMQ AOF", nobull))
    # ---- daemon.sh: P5 (its own row line)
    p5 = first(lines, r"^row P5 ")
    if p5:
        f = dict(re.findall(r'(\w+)="([^"]*)"', p5))
        out.append(("P5 task start lateness p99", f.get("peer", "-"),
                    f.get("ours", "-"), f.get("ratio", "-"), f.get("goal", "-"),
                    {"yes": "yes", "no": "NO"}.get(f.get("met"), f.get("met", "-"))))
    else:
        out.append(("P5 task start lateness p99", "not run", "not run", "-",
                    "<= spawn floor p99 + 1 ms", "not run"))
    # ---- pg.sh: P6
    pg1 = first(lines, r"^pg claim\+complete workers=1 ")
    pg4 = first(lines, r"^pg claim\+complete workers=4 ")
    boss = first(lines, r"^pgboss claim\+complete workers=16 ")
    o1, o4, b = (num(pg1, "jobs_per_s"), num(pg4, "jobs_per_s"),
                 num(boss, "jobs_per_s"))
    if o1 is None or o4 is None:
        why = "no PostgreSQL" if first(lines, r"pg\.sh: cannot start") else "no line"
        out.append(("P6 PostgreSQL claim+complete 1 / 4 w", "-", f"not run ({why})",
                    "-", ">= 2x", "not run"))
    elif b is None:
        why = "npm or pg-boss missing" if first(lines, r"pg\.sh: .*pg-boss") else "no line"
        out.append(("P6 PostgreSQL claim+complete 1 / 4 w",
                    f"pg-boss: not run ({why})",
                    f"{fmt(o1)} / {fmt(o4)} jobs/s", "-", ">= 2x", "not run"))
    else:
        out.append(("P6 PostgreSQL claim+complete 1 / 4 w",
                    f"pg-boss 16 w, batch 100: {fmt(b)} jobs/s",
                    f"{fmt(o1)} / {fmt(o4)} jobs/s",
                    f"{o1 / b:.2f}x / {o4 / b:.2f}x", ">= 2x",
                    met(o1 >= 2 * b and o4 >= 2 * b)))
    # ---- scale.sh: P7
    chk = first(lines, r"^scale case=check ")
    st = first(lines, r"^scale case=status_all_sqlite ")
    stp = first(lines, r"^scale case=status_all_postgresql ")
    mem = first(lines, r"^ratio ours/bullmq: memory ")
    if chk or st:
        c = num(chk, "value")
        s1, s2 = num(st, "value"), num(stp, "value")
        ours = (f"check {fmt(c, 's')}; status {fmt(s1, 'ms')} (SQLite), "
                f"{fmt(s2, 'ms')} (PostgreSQL)")
        peer = "BullMQ 100k job schedulers: not run"
        ratio = "-"
        if mem:
            m = re.search(r"memory ([\d.]+)", mem)
            peer = "BullMQ 100k job schedulers (memory)"
            ratio = f"memory {m.group(1)}x" if m else "-"
        ok = (c is not None and c <= 2 and s1 is not None and s1 <= 200 and
              (s2 is None or s2 <= 200))
        out.append(("P7 100,000 schedules", peer, ours, ratio,
                    "check <= 2 s, status <= 200 ms",
                    met(ok) if c is not None and s1 is not None else "partly run"))
    else:
        out.append(("P7 100,000 schedules", "not run", "not run", "-",
                    "check <= 2 s, status <= 200 ms", "not run"))
    # ---- queue.sh + bench_floor: P8
    o, f = num(w1, "jobs_per_s"), num(floor, "jobs_per_s")
    if o is None or f is None:
        out.append(("P8 no-op jobs vs the same commits",
                    "bench_floor: " + ("not run" if f is None else fmt(f, "jobs/s")),
                    fmt(o, "jobs/s"), "-", ">= 0.5 of the floor", "not run"))
    else:
        out.append(("P8 no-op jobs vs the same commits",
                    f"bench_floor (plain SQLite loop) {fmt(f, 'jobs/s')}",
                    fmt(o, "jobs/s"), f"{o / f:.2f}", ">= 0.5 of the floor",
                    met(o / f >= 0.5)))
    # ---- scale.sh: P9
    g = first(lines, r"^scale case=daemon_burst_goal_max_lateness ")
    gp = first(lines, r"^scale case=daemon_burst_goal_max_lateness_postgresql ")
    fl = first(lines, r"^scale case=daemon_burst_goal_floor ") or \
        first(lines, r"^scale case=daemon_burst_floor ")
    gv, gpv = num(g, "value"), num(gp, "value")
    flv = None
    if fl:
        m = re.search(r"value=([\d.]+)ms", fl)
        flv = float(m.group(1)) if m else None
    if gv is None and gpv is None:
        out.append(("P9 1,000 slots at one instant", "not run", "not run", "-",
                    "<= 1.5x floor (SQLite); <= 2 s (PostgreSQL)", "not run"))
    else:
        ok_s = gv is not None and flv is not None and gv <= 1.5 * flv
        ok_p = gpv is not None and gpv <= 2000
        ratio = f"{gv / flv:.2f}x floor" if gv is not None and flv else "-"
        out.append(("P9 1,000 slots at one instant",
                    f"bare spawn floor {fmt(flv, 'ms')}",
                    f"SQLite {fmt(gv, 'ms')}; PostgreSQL {fmt(gpv, 'ms')}",
                    ratio, "<= 1.5x floor (SQLite); <= 2 s (PostgreSQL)",
                    met(ok_s and ok_p) if gv is not None and gpv is not None
                    else "partly run"))
    return out


def main():
    lines = open(sys.argv[1], errors="replace").read().splitlines()
    head = ("row", "peer, same run", "ours", "ratio", "goal", "met")
    table = [head] + rows(lines)
    w = [max(len(r[i]) for r in table) for i in range(len(head))]
    print("== summary (issue 45's P-rows, this run)")
    for i, r in enumerate(table):
        print("| " + " | ".join(c.ljust(w[k]) for k, c in enumerate(r)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (x + 2) for x in w) + "|")


if __name__ == "__main__":
    main()
