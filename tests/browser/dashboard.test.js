/*
 * dashboard.test.js - the dashboard (issue 16) in a real browser: Debian's
 * chromium, headless, driven by playwright-core, against a real test
 * daemon (`surecron run`, SQLite store in a temp dir, http.listen on a
 * free loopback port, a token).
 *
 * One schedule's task fails until a file exists, with two attempts, so
 * its slot is lost; its error is "<script>window.__pwned=1</script>". The
 * test checks that the page lists every schedule of the config with its
 * next slot, shows that error as text without running it, obeys the
 * server's Content-Security-Policy (no violation reported), asks for the
 * token again after a 401, that Retry on the lost slot, with the file now
 * there, ends with the slot recovered and the last outcome success, and
 * that Ack marks another lost slot (doomed-import, always failing)
 * acknowledged. It lists the nodes (this daemon on this config, and a
 * second daemon on the same store with another config, marked skewed,
 * gone from the list once stopped). It also
 * opens the slot view and filters the ledger, and
 * saves screenshots to build/dashboard.png and build/dashboard-slot.png.
 *
 * Every wait is on a condition (the API polled, or the page's DOM), with
 * a deadline; none is a fixed sleep. The output ends in cmocka's summary
 * lines, which tests/run.sh adds to make test's total. Without chromium
 * or the node modules the test is skipped, not failed.
 *
 * Environment: SURECRON_BIN (default build/test/surecron), SURECRON_CHROMIUM
 * (default /usr/bin/chromium), SURECRON_SCREENSHOT (default
 * build/dashboard.png).
 */
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');
const http = require('http');
const {spawn, spawnSync} = require('child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = process.env.SURECRON_BIN || path.join(ROOT, 'build/test/surecron');
const CHROMIUM = process.env.SURECRON_CHROMIUM || '/usr/bin/chromium';
const SHOT = process.env.SURECRON_SCREENSHOT || path.join(ROOT, 'build/dashboard.png');
const TOKEN = 'browser-token-5d21';
const PWN = '<script>window.__pwned=1</script>';
const PATIENCE_MS = 45000;
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];

/* The schedules of the config: the page must list each one. */
const SCHEDULES = {
  'weekly-summary': {cron: '0 17 * * 5', tz: 'Asia/Seoul'},
  'nightly-report': {cron: '15 2 * * *', tz: 'Europe/Paris'},
  'hourly-sync': {cron: '7 * * * *', tz: 'UTC'},
  'flaky-export': {cron: '0 4 1 * *', tz: 'America/New_York'},
  'doomed-import': {cron: '30 6 * * 1-5', tz: 'Europe/Berlin'},
};
const FAILING = ['flaky-export', 'doomed-import'];

function summary(passed, failed, skipped, failures) {
  const run = passed + failed;
  console.log(`[==========] ${run} test(s) run.`);
  console.log(`[  PASSED  ] ${passed} test(s).`);
  if (skipped)
    console.log(`[  SKIPPED ] ${skipped} test(s).`);
  if (failed) {
    console.log(`[  FAILED  ] ${failed} test(s), listed below:`);
    for (const f of failures)
      console.log(`[  FAILED  ] ${f}`);
  }
}

function skip(why) {
  console.log(`[ SKIPPED  ] dashboard in chromium: ${why}`);
  summary(0, 0, 1, []);
  process.exit(0);
}

let playwright;
try {
  playwright = require('playwright-core');
} catch (e) {
  skip('playwright-core is not installed (npm ci in tests/browser)');
}
if (!fs.existsSync(CHROMIUM))
  skip(`no browser at ${CHROMIUM} (apt-get install chromium)`);
if (!fs.existsSync(BIN))
  skip(`no surecron binary at ${BIN}`);

/* ---- helpers ----------------------------------------------------------- */

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

/* GET path on the daemon: {status, body} (body parsed when JSON). */
function get(port, p) {
  return new Promise((resolve) => {
    const req = http.get({host: '127.0.0.1', port, path: p, timeout: 5000}, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => {
        let body = data;
        try { body = JSON.parse(data); } catch (e) { /* not JSON */ }
        resolve({status: res.statusCode, body});
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({status: 0, body: null}));
  });
}

/* Polls fn (async, returns a truthy value when done) until the deadline. */
async function waitFor(what, fn, ms = PATIENCE_MS) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last)
        return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${what}` +
        (last instanceof Error ? `: ${last.message}` : ''));
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 100)); /* poll interval */
  }
}

/* The page's way of showing an instant (dashboard.js iso). */
function iso(s) {
  return String(s || '').replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

function check(cond, msg) {
  if (!cond)
    throw new Error(msg);
}

function writeConfig(dir, port) {
  const okFile = path.join(dir, 'ok');
  let y = `store: "sqlite:${dir}/s.db"\n` +
    `http: {listen: "127.0.0.1:${port}", token_env: SC_BROWSER_TOKEN}\n` +
    'worker: {concurrency: 2, lease: 5m, grace: 5s}\n' +
    'targets:\n  out: {kind: file, path: ./out.jsonl}\n' +
    'schedules:\n';
  for (const [name, s] of Object.entries(SCHEDULES)) {
    y += `  ${name}:\n    cron: "${s.cron}"\n    tz: ${s.tz}\n    targets: [out]\n`;
    if (name === 'flaky-export') {
      /* Fails, with the markup as its error, until the file exists. */
      y += '    retry: {attempts: 2, backoff: fixed, delay: 1s}\n' +
        '    tasks:\n      - name: export\n        shell: |\n' +
        `          if [ -f '${okFile}' ]; then echo 'export done'; ` +
        `else echo '${PWN}' >&2; exit 1; fi\n`;
    } else if (name === 'doomed-import') {
      /* Always fails, one attempt: lost at once, then acknowledged. */
      y += '    retry: {attempts: 1, backoff: fixed, delay: 1s}\n' +
        '    tasks: [{name: import, shell: "echo upstream gone >&2; exit 1"}]\n';
    } else {
      y += '    tasks: [{name: a, command: [/bin/echo, "all good"]}]\n';
    }
  }
  const cfg = path.join(dir, 'surecron.yaml');
  fs.writeFileSync(cfg + '.tmp', y);
  fs.renameSync(cfg + '.tmp', cfg);
  return {cfg, okFile};
}

/* ---- the test --------------------------------------------------------------- */

const steps = [];
function step(name, fn) { steps.push({name, fn}); }

const ctx = {};

step('the daemon serves the page and its API', async () => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'surecron-browser-'));
  ctx.port = await freePort();
  Object.assign(ctx, writeConfig(ctx.dir, ctx.port));
  const log = fs.openSync(path.join(ctx.dir, 'daemon.log'), 'a', 0o600);
  ctx.env = Object.assign({}, process.env, {SC_BROWSER_TOKEN: TOKEN});
  ctx.daemon = spawn(BIN, ['run', '--config', ctx.cfg],
    {cwd: ctx.dir, env: ctx.env, stdio: ['ignore', 'ignore', log]});
  fs.closeSync(log);
  ctx.daemon.on('exit', (code, sig) => { ctx.daemonExit = {code, sig}; });
  await waitFor('/healthz', async () => {
    check(!ctx.daemonExit, 'the daemon exited: ' + JSON.stringify(ctx.daemonExit));
    return (await get(ctx.port, '/healthz')).status === 200;
  });
  const page = await get(ctx.port, '/');
  check(page.status === 200 && /dashboard\.js/.test(page.body), 'GET / is not the page');
});

function trigger(name) {
  const r = spawnSync(BIN, ['trigger', '--config', ctx.cfg, name],
    {cwd: ctx.dir, env: ctx.env, encoding: 'utf8'});
  check(r.status === 0, `trigger ${name} failed: ${r.stderr}`);
}

step('a slot whose every attempt fails is lost', async () => {
  /* The others run once too, so their rows have a last outcome. */
  for (const name of Object.keys(SCHEDULES))
    trigger(name);
  await waitFor('the other schedules\' runs', async () => {
    const a = await get(ctx.port, '/api/schedules');
    return a.status === 200 && a.body.schedules.every((s) =>
      FAILING.includes(s.name) || (s.last && s.last.outcome === 'success'));
  });
  await waitFor('doomed-import lost', async () => {
    const a = await get(ctx.port, '/api/lost');
    return a.status === 200 && (a.body.rows || []).some(
      (x) => x.schedule === 'doomed-import' && x.outcome === 'lost');
  });
  ctx.lost = await waitFor('the lost slot in /api/lost', async () => {
    const a = await get(ctx.port, '/api/lost');
    return a.status === 200 && (a.body.rows || []).find(
      (x) => x.schedule === 'flaky-export' && x.outcome === 'lost');
  });
  check(ctx.lost.error && ctx.lost.error.includes(PWN),
    'the lost slot\'s error is not the task\'s stderr: ' + ctx.lost.error);
});

step('the page lists every schedule with its next slot', async () => {
  ctx.profile = fs.mkdtempSync(path.join(os.tmpdir(), 'surecron-chromium-'));
  ctx.browser = await playwright.chromium.launchPersistentContext(
    ctx.profile, {
      executablePath: CHROMIUM, headless: true, args: FLAGS,
      viewport: {width: 1280, height: 1000}, deviceScaleFactor: 1,
    });
  const page = ctx.page = ctx.browser.pages()[0] || await ctx.browser.newPage();
  ctx.problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !/401/.test(m.text()))
      ctx.problems.push(m.text());
  });
  page.on('pageerror', (e) => ctx.problems.push(String(e)));
  await page.goto(`http://127.0.0.1:${ctx.port}/`);
  const names = Object.keys(SCHEDULES);
  await page.waitForFunction((n) =>
    document.querySelectorAll('#schedules tbody tr').length === n, names.length,
  {timeout: PATIENCE_MS});
  /* Polled: a slot that comes due meanwhile moves the API's next slot
   * before the page's next refresh. */
  await waitFor('every schedule with its next slot', async () => {
    const api = (await get(ctx.port, '/api/schedules')).body;
    for (const name of names) {
      const want = api.schedules.find((s) => s.name === name);
      check(want && want.next, `/api/schedules has no next slot for ${name}`);
      const row = page.locator(`#schedules tbody tr[data-schedule="${name}"]`);
      check(await row.count() === 1, `${name} is not listed`);
      const next = await row.locator('td.next').innerText();
      check(next.includes(want.next), `${name}: next slot "${next}", want "${want.next}"`);
      check(/in \d+ (min|h|d)|in a moment/.test(next), `${name}: no "in ..." in "${next}"`);
    }
    return true;
  });
});

step('the page lists the nodes, each with its config', async () => {
  const page = ctx.page;
  const me = (await waitFor('this node in /api/nodes', async () => {
    const a = await get(ctx.port, '/api/nodes');
    return a.status === 200 && a.body.live.length === 1 && a.body;
  })).live[0];
  /* A second daemon on the same store with another config (a node of a
   * rolling deploy): it claims none of this config's jobs. */
  const odir = path.join(ctx.dir, 'other');
  fs.mkdirSync(odir);
  const ocfg = path.join(odir, 'surecron.yaml');
  fs.writeFileSync(ocfg, `store: "sqlite:${ctx.dir}/s.db"\n` +
    'worker: {concurrency: 1}\n' +
    'targets:\n  out: {kind: file, path: ./out.jsonl}\n' +
    'schedules:\n  elsewhere:\n    cron: "0 3 1 1 *"\n    tz: UTC\n' +
    '    targets: [out]\n    tasks: [{name: a, command: [/bin/true]}]\n');
  const log = fs.openSync(path.join(odir, 'daemon.log'), 'a', 0o600);
  ctx.other = spawn(BIN, ['run', '--config', ocfg],
    {cwd: odir, env: ctx.env, stdio: ['ignore', 'ignore', log]});
  fs.closeSync(log);
  ctx.other.on('exit', (code, sig) => { ctx.otherExit = {code, sig}; });
  const other = (await waitFor('the other node in /api/nodes', async () => {
    check(!ctx.otherExit, 'the other daemon exited: ' + JSON.stringify(ctx.otherExit));
    const a = await get(ctx.port, '/api/nodes');
    return a.status === 200 && a.body.live.length === 2 && a.body;
  })).live.find((n) => n.id !== me.id);
  check(other && other.same_config === false, 'the other node is not of another config');
  await page.waitForFunction(() =>
    document.querySelectorAll('#nodes tbody tr').length === 2, null,
  {timeout: PATIENCE_MS});
  const mine = page.locator(`#nodes tbody tr[data-node="${me.id}"]`);
  check(await mine.getAttribute('data-config') === 'same', 'this node is not on this config');
  const text = await mine.innerText();
  for (const want of [me.id, me.host, me.version, me.config_digest, iso(me.started),
    'this config'])
    check(text.includes(want), `this node's row "${text}" lacks "${want}"`);
  check(/just now|in a moment/.test(await mine.locator('td.seen').innerText()),
    'this node\'s last seen is not recent');
  const row = page.locator(`#nodes tbody tr[data-node="${other.id}"]`);
  check(await row.getAttribute('data-config') === 'skewed', 'the other node is not marked skewed');
  const otext = await row.innerText();
  check(/skewed/.test(otext) && otext.includes(other.config_digest) &&
    !otext.includes('this config'), `the other node's row: "${otext}"`);
  check(/2 live .*1 on another config/.test(await page.locator('#nodes-count').innerText()),
    'the count does not say one node runs another config');
  /* Stopped, it leaves the list at once. */
  const gone = new Promise((r) => ctx.other.once('exit', r));
  ctx.other.kill('SIGTERM');
  await gone;
  check(ctx.otherExit.code === 0, 'the other daemon did not stop cleanly');
  await page.waitForFunction(() =>
    document.querySelectorAll('#nodes tbody tr').length === 1, null,
  {timeout: PATIENCE_MS});
});

step('an error with markup renders as text and does not run', async () => {
  const page = ctx.page;
  const row = page.locator('#lost tbody tr[data-schedule="flaky-export"]');
  await row.first().waitFor({timeout: PATIENCE_MS});
  const err = await row.first().locator('td.error').innerText();
  check(err.includes(PWN), `the error shown is "${err}"`);
  check(await page.evaluate(() => typeof window.__pwned) === 'undefined',
    'the error\'s script ran');
  check(await page.evaluate(() => document.querySelectorAll('main script').length) === 0,
    'the error became a script element');
  check(await row.first().getAttribute('data-state') === 'open', 'the lost slot is not open');
});

step('a refused token is asked for again', async () => {
  const page = ctx.page;
  await page.fill('#token', 'not-the-token');
  await page.click('#token-form button[type=submit]');
  await page.locator('#token-state').waitFor({state: 'visible'});
  await page.click('#lost tbody tr[data-schedule="flaky-export"] button[data-action=retry]');
  await page.locator('#token-form').waitFor({state: 'visible', timeout: PATIENCE_MS});
  const msg = await page.locator('#errors [data-source=token]').innerText();
  check(/token/i.test(msg), `no request for the token: "${msg}"`);
});

step('Retry on the lost slot, its task fixed, recovers it', async () => {
  const page = ctx.page;
  fs.writeFileSync(ctx.okFile, 'fixed\n');
  await page.fill('#token', TOKEN);
  await page.click('#token-form button[type=submit]');
  await page.locator('#token-state').waitFor({state: 'visible'});
  await page.click('#lost tbody tr[data-schedule="flaky-export"] button[data-action=retry]');
  await page.waitForFunction(() => {
    const r = document.querySelector('#lost tbody tr[data-schedule="flaky-export"]');
    const s = document.querySelector('#schedules tbody tr[data-schedule="flaky-export"] td.last .pill');
    return r && r.getAttribute('data-state') === 'recovered' && s &&
      s.textContent === 'success';
  }, null, {timeout: PATIENCE_MS});
  const notice = await page.locator('#errors .notice').innerText();
  check(/runs again/.test(notice), `no notice of the retry: "${notice}"`);
  check(await page.locator('#errors [data-source]').count() === 0,
    'an error is still shown: ' + await page.locator('#errors').innerText());
});

step('Ack on a lost slot marks it acknowledged', async () => {
  const page = ctx.page;
  const sel = '#lost tbody tr[data-schedule="doomed-import"]';
  check(await page.getAttribute(sel, 'data-state') === 'open', 'doomed-import is not open');
  await page.click(`${sel} button[data-action=ack]`);
  await page.waitForFunction((q) => {
    const r = document.querySelector(q);
    return r && r.getAttribute('data-state') === 'acked' &&
      !r.querySelector('button[data-action=ack]');
  }, sel, {timeout: PATIENCE_MS});
  const notice = await page.locator('#errors .notice').innerText();
  check(/acknowledged/.test(notice), `no notice of the ack: "${notice}"`);
});

step('the slot view shows the attempts, their errors and the sends', async () => {
  const page = ctx.page;
  await page.click('#lost tbody tr[data-schedule="flaky-export"] button.link');
  await page.locator('#slot').waitFor({state: 'visible'});
  await page.waitForFunction(() =>
    document.querySelectorAll('#slot-body .timeline tbody tr').length >= 2, null,
  {timeout: PATIENCE_MS});
  const text = await page.locator('#slot-body').innerText();
  check(text.includes(PWN), 'the attempts\' error is not shown in the slot view');
  check(/success/.test(text), 'the successful attempt is not in the slot view');
  const sends = await page.locator('#slot-body table').last().innerText();
  check(/out/.test(sends) && /sent/.test(sends), `sends: "${sends}"`);
});

step('the ledger filters by outcome', async () => {
  const page = ctx.page;
  await page.selectOption('#f-outcome', 'lost');
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('#ledger tbody tr')];
    return rows.length > 0 && rows.every((r) => r.querySelector('.pill').textContent === 'lost');
  }, null, {timeout: PATIENCE_MS});
  await page.selectOption('#f-outcome', '');
  await page.waitForFunction(() =>
    [...document.querySelectorAll('#ledger tbody tr .pill')].some((p) => p.textContent === 'success'),
  null, {timeout: PATIENCE_MS});
  check(ctx.problems.length === 0, 'the page reported: ' + ctx.problems.join(' | '));
});

step('a screenshot for a person to look at', async () => {
  const page = ctx.page;
  /* The slot view too (build/dashboard-slot.png), then the page. */
  await page.locator('#slot').screenshot({path: SHOT.replace(/\.png$/, '-slot.png')});
  await page.click('#slot-close');
  await page.evaluate(() => window.scrollTo(0, 0));
  fs.mkdirSync(path.dirname(SHOT), {recursive: true});
  await page.screenshot({path: SHOT, fullPage: true});
  check(fs.statSync(SHOT).size > 10000, 'the screenshot is empty');
  console.log(`screenshot: ${SHOT}`);
});

async function cleanup() {
  let stopErr = null;
  if (ctx.browser)
    await ctx.browser.close().catch(() => {});
  if (ctx.other && !ctx.otherExit)
    ctx.other.kill('SIGKILL');
  if (ctx.daemon && !ctx.daemonExit) {
    const gone = new Promise((r) => ctx.daemon.once('exit', r));
    ctx.daemon.kill('SIGTERM');
    const t = setTimeout(() => ctx.daemon.kill('SIGKILL'), 15000);
    await gone;
    clearTimeout(t);
    /* A clean stop is exit 0 (under SAN=1, a sanitizer's finding in a
     * handler makes it non-zero). */
    if (ctx.daemonExit.code !== 0) {
      ctx.failed = true;
      stopErr = `the daemon exited with ${JSON.stringify(ctx.daemonExit)} on SIGTERM`;
    }
  }
  if (ctx.dir && ctx.failed) {
    const log = path.join(ctx.dir, 'daemon.log');
    if (fs.existsSync(log))
      console.log('daemon.log (last lines):\n' +
        fs.readFileSync(log, 'utf8').split('\n').slice(-30).join('\n'));
  }
  if (ctx.dir)
    fs.rmSync(ctx.dir, {recursive: true, force: true});
  /* Chromium's profile, once it has closed: left behind, every run
   * would leave one in the temp folder. */
  if (ctx.profile)
    fs.rmSync(ctx.profile, {recursive: true, force: true});
  return stopErr;
}

(async () => {
  let passed = 0;
  const failures = [];
  for (const s of steps) {
    if (failures.length) {
      console.log(`[ NOT RUN  ] ${s.name}`);
      continue;
    }
    console.log(`[ RUN      ] ${s.name}`);
    try {
      await s.fn();
      passed++;
      console.log(`[       OK ] ${s.name}`);
    } catch (e) {
      failures.push(s.name);
      ctx.failed = true;
      console.log(`[  ERROR   ] ${s.name}: ${e && e.message ? e.message : e}`);
      if (ctx.page) {
        const shot = SHOT.replace(/\.png$/, '-failed.png');
        await ctx.page.screenshot({path: shot, fullPage: true}).catch(() => {});
        console.log(`screenshot of the failure: ${shot}`);
      }
    }
  }
  const stop = await cleanup();
  if (stop) {
    console.log(`[  ERROR   ] ${stop}`);
    if (!failures.length)
      failures.push('the daemon stops cleanly');
  }
  summary(passed, failures.length, 0, failures);
  process.exit(failures.length ? 1 : 0);
})();
