// bench.js - pg-boss claim+complete throughput, the peer of bench_pg.c.
//
//   node bench.js URL [N] [WORKERS] [BATCH]   (defaults 20000, 16, 100)
//
// Inserts N jobs into one queue (bulk insert, 1,000 per call), then starts
// WORKERS pg-boss workers with batchSize BATCH and the shortest polling
// interval pg-boss allows (0.5 s): pg-boss's best tuning for throughput.
// A batch handler that returns completes the whole batch in one statement.
// The clock stops when the database counts N completed jobs. Prints
// "pgboss claim+complete workers=W batch=B jobs=N seconds=S jobs_per_s=R".
// Uses its own schema (pgboss_bench_<pid>), dropped at the end.
'use strict'

const PgBoss = require('pg-boss')
const { Client } = require('pg')

async function main () {
  const url = process.argv[2] || process.env.SURECRON_TEST_PG
  const n = Number(process.argv[3] || 20000)
  const workers = Number(process.argv[4] || 16)
  const batch = Number(process.argv[5] || 100)
  if (!url) {
    console.error('usage: node bench.js URL [N] [WORKERS] [BATCH]')
    process.exit(2)
  }
  const schema = `pgboss_bench_${process.pid}`
  const boss = new PgBoss({
    connectionString: url,
    schema,
    max: workers + 4, // a connection per worker, plus housekeeping
    supervise: false, // no maintenance runs inside the measurement
    schedule: false
  })
  boss.on('error', e => console.error('pg-boss:', e.message))
  await boss.start()
  const queue = 'bench'
  await boss.createQueue(queue)

  for (let i = 0; i < n; i += 1000) {
    const k = Math.min(1000, n - i)
    const jobs = []
    for (let j = 0; j < k; j++) jobs.push({ name: queue, data: { i: i + j } })
    await boss.insert(jobs)
  }

  const probe = new Client({ connectionString: url })
  await probe.connect()
  const countDone = async () => {
    const r = await probe.query(
      `SELECT count(*)::int AS c FROM ${schema}.job WHERE name = $1 AND state = 'completed'`,
      [queue])
    return r.rows[0].c
  }

  const t0 = process.hrtime.bigint()
  for (let w = 0; w < workers; w++) {
    await boss.work(queue, { batchSize: batch, pollingIntervalSeconds: 0.5 },
      async (jobs) => jobs.length)
  }
  while (await countDone() < n) {
    await new Promise(resolve => setTimeout(resolve, 10))
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9
  console.log(`pgboss claim+complete workers=${workers} batch=${batch} ` +
    `jobs=${n} seconds=${s.toFixed(2)} jobs_per_s=${(n / s).toFixed(0)}`)

  await boss.stop({ graceful: false, wait: true })
  await probe.query(`DROP SCHEMA ${schema} CASCADE`)
  await probe.end()
}

main().catch(e => {
  console.error('bench.js:', e)
  process.exit(1)
})
