// scheduler.js - the BullMQ side of bench/daemon.sh: a job scheduler
// (upsertJobScheduler, every 1000 ms) plus 99 idle ones (monthly cron), one
// Worker in this process. For each run, lateness = processor start - the
// instant the scheduler planned it (job.opts.prevMillis). Prints one
// key=value line: p50/p99 lateness in ms and this process's RSS (KiB).
//
// Usage: node scheduler.js PORT SECONDS LABEL
'use strict';

const { Queue, Worker } = require('bullmq');
const { performance } = require('perf_hooks');

function pct(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)];
}

async function main() {
  const [port, seconds, label] = [Number(process.argv[2]),
    Number(process.argv[3]), process.argv[4] || 'bullmq'];
  const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };
  const name = `sched-${Date.now()}`;
  const queue = new Queue(name, { connection });
  await queue.waitUntilReady();
  const late = [];
  const worker = new Worker(name, async (job) => {
    const now = performance.timeOrigin + performance.now();
    // The planned instant: job.opts.prevMillis in newer BullMQ, else the
    // millis a scheduler's job id ends with ("repeat:persec:<ms>").
    const planned = job.opts.prevMillis ||
      Number(String(job.id).split(':').pop());
    if (job.name === 'tick' && planned)
      late.push(now - planned);
  }, { connection, concurrency: 1 });
  await worker.waitUntilReady();
  for (let i = 1; i < 100; i++)
    await queue.upsertJobScheduler(`idle-${i}`, { pattern: '0 0 3 1 * *' },
      { name: 'idle' });
  await queue.upsertJobScheduler('persec', { every: 1000 }, { name: 'tick' });
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const rssKb = Math.round(process.memoryUsage().rss / 1024);
  const peakKb = process.resourceUsage().maxRSS;
  // Anonymous memory (heap, stacks, JIT): what this process itself
  // allocated, shared library pages left out (Linux only).
  let anonKb = NaN;
  try {
    const t = require('fs').readFileSync('/proc/self/smaps_rollup', 'utf8');
    const kb = (k) => Number((t.match(new RegExp(`^${k}:\\s+(\\d+)`, 'm')) || [0, NaN])[1]);
    anonKb = kb('Anonymous');
  } catch (e) { /* not Linux */ }
  await worker.close();
  await queue.obliterate({ force: true }).catch(() => {});
  await queue.close();
  // The first run fires at once on upsert, not at a planned instant.
  const s = late.slice(1).sort((a, b) => a - b);
  console.log(`${label} runs=${s.length} p50_ms=${pct(s, 50).toFixed(3)} ` +
    `p99_ms=${pct(s, 99).toFixed(3)} max_ms=${s[s.length - 1].toFixed(3)} ` +
    `rss_kb=${rssKb} maxrss_kb=${peakKb} anon_kb=${anonKb}`);
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
