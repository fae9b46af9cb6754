// scale.js - the BullMQ side of bench/scale.sh (issue 15): one Queue
// holding the same job schedulers as our config (upsertJobScheduler with
// the same cron pattern and tz, one per schedule), and one Worker
// (concurrency 16, a no-op processor: in-process, no exec, which favours
// it) in this process. Prints `upserted n=... seconds=...` once every
// scheduler is in, then runs until SIGTERM, when it prints how many jobs
// the worker ran. bench/scale.sh samples this process's and
// redis-server's memory and CPU from /proc meanwhile.
//
// Usage: node scale.js PORT SCHEDULES.json
//   SCHEDULES.json: [{"name": ..., "cron": ..., "tz": ...}, ...]
'use strict';

const fs = require('fs');
const { Queue, Worker } = require('bullmq');

async function main() {
  const port = Number(process.argv[2]);
  const list = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
  const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };
  const name = 'scale';
  const queue = new Queue(name, { connection });
  await queue.waitUntilReady();
  let ran = 0;
  const worker = new Worker(name, async () => { ran++; },
    { connection, concurrency: 16 });
  await worker.waitUntilReady();
  const t0 = Date.now();
  // 64 upserts in flight: each is one Lua script on the server.
  let next = 0;
  async function lane() {
    while (next < list.length) {
      const s = list[next++];
      await queue.upsertJobScheduler(s.name, { pattern: s.cron, tz: s.tz },
        { name: 'run' });
    }
  }
  await Promise.all(Array.from({ length: 64 }, lane));
  const secs = (Date.now() - t0) / 1000;
  console.log(`upserted n=${list.length} seconds=${secs.toFixed(1)} ` +
    `per_s=${Math.round(list.length / secs)}`);
  process.on('SIGTERM', async () => {
    console.log(`stopped ran=${ran}`);
    await worker.close(true).catch(() => {});
    process.exit(0);
  });
  setInterval(() => {}, 1 << 30);
}

main().catch((e) => { console.error(e); process.exit(1); });
