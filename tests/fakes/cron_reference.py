#!/usr/bin/python3
"""Next fire times of a crontab's job lines, computed by croniter.

The reference for tests/integ/test_import_crontab.c: it reads the crontab
itself (its own simple reading: variables CRON_TZ/TZ, five fields or a
macro, the user column with --system) so that surecron's reading and the
engine are both checked against an independent implementation of cron's
time rules (Debian's python3-croniter).

  cron_reference.py [--system [--user NAME]] FILE START_EPOCH N

prints one line per job line: "LINE T1 T2 ... TN" (Unix seconds).
"""
import datetime
import re
import sys
import zoneinfo

from croniter import croniter

MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
          "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
          "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
          "@hourly": "0 * * * *"}


def main():
    args = sys.argv[1:]
    system = args[0] == "--system"
    user = None
    if system:
        args = args[1:]
        if args[0] == "--user":
            user, args = args[1], args[2:]
    path, start, n = args[0], int(args[1]), int(args[2])
    tz = "UTC"
    cron_tz = None
    for no, raw in enumerate(open(path, encoding="utf-8"), 1):
        line = raw.rstrip("\n").strip()
        if not line or line.startswith("#") or line.endswith("\\"):
            continue
        m = re.match(r"^([^\s=]+)\s*=\s*(.*)$", line)
        if m:
            value = m.group(2).strip()
            if len(value) >= 2 and value[0] in "'\"" and value[-1] == value[0]:
                value = value[1:-1]
            if m.group(1) == "CRON_TZ":
                cron_tz = value
            elif m.group(1) == "TZ":
                tz = value
            continue
        parts = line.split()
        if parts[0].startswith("@"):
            if parts[0] not in MACROS:
                continue
            expr = MACROS[parts[0]]
            rest = parts[1:]
        else:
            if len(parts) < 6:
                continue
            expr = " ".join(parts[:5])
            rest = parts[5:]
        if system:
            if user and rest and rest[0] != user:
                continue
            rest = rest[1:]
        if not rest:
            continue
        zone = zoneinfo.ZoneInfo(cron_tz or tz)
        it = croniter(expr, datetime.datetime.fromtimestamp(start, zone))
        try:
            times = [int(it.get_next(datetime.datetime).timestamp())
                     for _ in range(n)]
        except Exception:  # an expression that never fires
            continue
        print(no, *times)


if __name__ == "__main__":
    main()
