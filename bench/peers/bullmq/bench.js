// bench.js - the BullMQ side of bench/queue.sh: the same workload as
// bench/bench_queue.c. Enqueue N no-op jobs with addBulk (1000 per call),
// then one Worker with the given concurrency processes them; prints one
// key=value line. maxrss_kb is the peak RSS of this process (which, like
// ours, both enqueues and works).
//
// Usage: node bench.js PORT N CONCURRENCY LABEL
'use strict';

const { Queue, Worker } = require('bullmq');

async function main() {
  const [port, n, concurrency, label] = [
    Number(process.argv[2]), Number(process.argv[3]),
    Number(process.argv[4]), process.argv[5] || 'bullmq',
  ];
  const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };
  const name = `bench-${concurrency}-${Date.now()}`;
  const queue = new Queue(name, { connection });
  await queue.waitUntilReady();

  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i += 1000) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 1000); j++) {
      // jobId = the slot: BullMQ's idempotent enqueue, like ours.
      batch.push({ name: 'noop', data: { slot: j }, opts: { jobId: `s${j}` } });
    }
    await queue.addBulk(batch);
  }
  const t1 = process.hrtime.bigint();

  let done = 0;
  let finish;
  const all = new Promise((resolve) => { finish = resolve; });
  const worker = new Worker(name, async () => {}, {
    connection, concurrency, autorun: false,
  });
  worker.on('completed', () => { if (++done === n) finish(); });
  worker.on('failed', (job, err) => { console.error('failed', err); });
  const t2 = process.hrtime.bigint();
  worker.run();
  await all;
  const t3 = process.hrtime.bigint();
  await worker.close();
  await queue.close();

  const enqS = Number(t1 - t0) / 1e9;
  const workS = Number(t3 - t2) / 1e9;
  const rss = process.resourceUsage().maxRSS; // KiB
  console.log(`${label} case=enqueue jobs=${n} seconds=${enqS.toFixed(3)} ` +
    `jobs_per_s=${Math.round(n / enqS)}`);
  console.log(`${label} case=work concurrency=${concurrency} jobs=${n} ` +
    `seconds=${workS.toFixed(3)} jobs_per_s=${Math.round(n / workS)} ` +
    `maxrss_kb=${rss}`);
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
