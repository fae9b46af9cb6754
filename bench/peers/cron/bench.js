// bench.js - the work of bench/bench_cron.c in croner and cron-parser, for
// bench/cron.sh: ns per next() and per parse, same expressions, zones,
// start instant and restart-every-CHAIN-steps pattern. Prints lines
// "peer<TAB>kind<TAB>zone<TAB>expr<TAB>ns".
'use strict';
const { Cron } = require('croner');
const { CronExpressionParser } = require('cron-parser');

const START = new Date('2026-01-01T00:00:00Z');
const CHAIN = 100;
const TARGET_NS = 100e6;
const exprs = ['*/5 * * * *', '0 17 * * 5', '0 0 17 * * 5',
  '10 17 * * 1-5', '0 9 1 * *', '0 0 29 2 *'];
const zones = ['UTC', 'Asia/Seoul', 'America/New_York'];

let sink = 0;

// croner's fastest set-up for each zone: for UTC a fixed utcOffset, which
// skips its Intl time zone conversion (measured faster than timezone:
// 'UTC'); named zones need `timezone`.
const cronerOpts = (zone) => (zone === 'UTC'
  ? { utcOffset: 0, paused: true }
  : { timezone: zone, paused: true });

// Grows n until a run takes a tenth of the target, then runs for the
// target; returns ns per call.
function measure(fn) {
  let n = 8;
  fn(200); // warm-up for the JIT
  let el;
  while ((el = fn(n)) < TARGET_NS / 10) n *= 4;
  n = Math.ceil(n * TARGET_NS / el);
  return fn(n) / n;
}

function time(body) {
  const t0 = process.hrtime.bigint();
  body();
  return Number(process.hrtime.bigint() - t0);
}

const peers = {
  croner: {
    parse: (expr, zone) => (n) => time(() => {
      for (let i = 0; i < n; i++) {
        const c = new Cron(expr, cronerOpts(zone));
        sink += c ? 1 : 0;
      }
    }),
    next: (expr, zone) => {
      const c = new Cron(expr, cronerOpts(zone));
      return (n) => time(() => {
        let d = START;
        for (let i = 0; i < n; i++) {
          if (i % CHAIN === 0) d = START;
          d = c.nextRun(d);
          sink += d.getTime() & 1;
        }
      });
    },
  },
  'cron-parser': {
    parse: (expr, zone) => (n) => time(() => {
      for (let i = 0; i < n; i++) {
        const it = CronExpressionParser.parse(expr, { currentDate: START, tz: zone });
        sink += it ? 1 : 0;
      }
    }),
    next: (expr, zone) => {
      const it = CronExpressionParser.parse(expr, { currentDate: START, tz: zone });
      return (n) => time(() => {
        for (let i = 0; i < n; i++) {
          if (i % CHAIN === 0) it.reset(START);
          sink += it.next().getTime() & 1;
        }
      });
    },
  },
};

for (const [name, p] of Object.entries(peers)) {
  for (const e of exprs) {
    const ns = measure(p.parse(e, 'UTC'));
    console.log(`${name}\tparse\t-\t${e}\t${ns.toFixed(1)}`);
  }
  for (const z of zones) {
    for (const e of exprs) {
      const ns = measure(p.next(e, z));
      console.log(`${name}\tnext\t${z}\t${e}\t${ns.toFixed(1)}`);
    }
  }
}
if (sink === -1) console.log('');
