/*
 * surecron dashboard: reads the JSON API (docs/api.md) and nothing else,
 * and refreshes itself every few seconds without reloading the page.
 *
 * Rules this file keeps:
 *   - every text that comes from the server (names, errors, notes) enters
 *     the page through textContent or setAttribute, never as markup, so a
 *     "<script>" in an error is shown, not run;
 *   - no inline script, style or handler: the server's
 *     Content-Security-Policy (default-src 'self') allows none;
 *   - the token is asked once and kept in this tab's sessionStorage only;
 *     it is sent as "Authorization: Bearer TOKEN", and a 401 answer
 *     forgets it and asks again.
 */
'use strict';

(function () {
  var REFRESH_MS = 5000;
  var TOKEN_KEY = 'surecron.token';

  var state = {
    skewMs: 0,        /* server clock minus this browser's */
    slot: null,       /* the slot view's {schedule, slot_ms}, or null */
    busy: false,      /* a refresh is under way */
    again: false,     /* another was asked for meanwhile */
    names: []         /* schedule names, for the ledger filter */
  };

  function $(id) { return document.getElementById(id); }

  /* el('td', {class: 'x'}, 'text', node, ...): a new element. Strings
   * become text nodes; attributes are set with setAttribute. */
  function el(tag, attrs) {
    var e = document.createElement(tag);
    var k;
    if (attrs)
      for (k in attrs)
        if (Object.prototype.hasOwnProperty.call(attrs, k) &&
            attrs[k] !== null && attrs[k] !== undefined)
          e.setAttribute(k, String(attrs[k]));
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined)
        continue;
      e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function clear(node) {
    while (node.firstChild)
      node.removeChild(node.firstChild);
  }

  function nowMs() { return Date.now() + state.skewMs; }

  /* "2026-12-02T03:00:00.512Z" -> "2026-12-02 03:00:00Z" */
  function iso(s) {
    if (!s)
      return '';
    return String(s).replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  }

  /* "in 3 h", "5 min ago", "now" */
  function rel(ms) {
    if (typeof ms !== 'number' || !isFinite(ms) || ms <= 0)
      return '';
    var d = ms - nowMs();
    var a = Math.abs(d), t;
    if (a < 45000)
      return d >= 0 ? 'in a moment' : 'just now';
    if (a < 3570000)
      t = Math.round(a / 60000) + ' min';
    else if (a < 2 * 86400000 - 1800000)
      t = Math.round(a / 3600000) + ' h';
    else
      t = Math.round(a / 86400000) + ' d';
    return d >= 0 ? 'in ' + t : t + ' ago';
  }

  function isoMs(s) {
    var t = Date.parse(s);
    return isNaN(t) ? 0 : t;
  }

  function durText(ms) {
    if (typeof ms !== 'number')
      return '';
    if (ms % 86400000 === 0 && ms >= 86400000) return ms / 86400000 + 'd';
    if (ms % 3600000 === 0 && ms >= 3600000) return ms / 3600000 + 'h';
    if (ms % 60000 === 0 && ms >= 60000) return ms / 60000 + 'm';
    return ms / 1000 + 's';
  }

  function pill(word, cls) {
    return el('span', {class: 'pill ' + (cls || word)}, word);
  }

  /* ---- errors and notices ------------------------------------------ */

  /* One message per source ("schedules", "retry", ...): a later success
   * of the same source takes it away. */
  function showError(source, msg) {
    var box = $('errors');
    var old = box.querySelector('[data-source="' + source + '"]');
    var d = el('div', {'data-source': source}, msg);
    if (old)
      box.replaceChild(d, old);
    else
      box.appendChild(d);
  }

  function clearError(source) {
    var old = $('errors').querySelector('[data-source="' + source + '"]');
    if (old)
      old.parentNode.removeChild(old);
  }

  function showNotice(msg) {
    var box = $('errors');
    var old = box.querySelector('.notice');
    if (old)
      box.removeChild(old);
    box.appendChild(el('p', {class: 'notice'}, msg));
  }

  /* ---- the token ------------------------------------------------------ */

  function token() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || '';
    } catch (e) {
      return '';
    }
  }

  function setToken(t) {
    try {
      if (t)
        sessionStorage.setItem(TOKEN_KEY, t);
      else
        sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage off: the token lives for this call only */ }
    showTokenState();
  }

  function showTokenState() {
    var has = token() !== '';
    $('token-form').hidden = has;
    $('token-state').hidden = !has;
  }

  function askToken(why) {
    setToken('');
    showError('token', why);
    $('token').focus();
  }

  /* ---- the API -------------------------------------------------------- */

  /* Resolves with the parsed JSON answer; rejects with an Error whose
   * message is the server's {"error"} (or what went wrong) and whose
   * .status is the HTTP status (0: no answer). */
  function api(method, path, body) {
    var headers = {'Accept': 'application/json'};
    var t = token();
    if (t)
      headers['Authorization'] = 'Bearer ' + t;
    var init = {method: method, headers: headers, cache: 'no-store',
      credentials: 'same-origin'};
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (r) {
      return r.text().then(function (text) {
        var j = null;
        try { j = text ? JSON.parse(text) : null; } catch (e) { j = null; }
        if (r.ok && j !== null)
          return j;
        var msg = j && typeof j.error === 'string' ? j.error
          : (r.ok ? 'not a JSON answer' : 'HTTP ' + r.status);
        var err = new Error(method + ' ' + path.split('?')[0] + ': ' + msg +
          ' (' + r.status + ')');
        err.status = r.status;
        throw err;
      });
    }, function () {
      var err = new Error(method + ' ' + path.split('?')[0] +
        ': the daemon does not answer');
      err.status = 0;
      throw err;
    });
  }

  /* An action (POST): needs the token; a 401 asks for it again. */
  function act(source, path, body, done) {
    if (!token()) {
      askToken('Enter the token to act (the daemon\u2019s http.token_env).');
      return Promise.resolve();
    }
    return api('POST', path, body).then(function (j) {
      clearError(source);
      clearError('token');
      showNotice(done(j));
      return refresh();
    }, function (e) {
      if (e.status === 401)
        askToken('The token was refused: enter it again.');
      else
        showError(source, e.message);
    });
  }

  /* ---- lost and missed slots ------------------------------------------ */

  function slotState(r) {
    if (r.recovered_at)
      return {word: 'recovered', when: r.recovered_at};
    if (r.acked_at)
      return {word: 'acked', when: r.acked_at};
    return {word: 'open', when: null};
  }

  function renderLost(j) {
    var rows = (j.rows || []).slice();
    /* Open ones first, then the newest. */
    rows.sort(function (a, b) {
      var oa = slotState(a).word === 'open' ? 0 : 1;
      var ob = slotState(b).word === 'open' ? 0 : 1;
      return oa - ob || (b.slot_ms || 0) - (a.slot_ms || 0);
    });
    var tbody = $('lost').tBodies[0];
    clear(tbody);
    rows.forEach(function (r) {
      var st = slotState(r);
      var actions = el('td', {class: 'actions'});
      if (st.word !== 'recovered' && r.outcome === 'lost' && r.job) {
        var retry = el('button', {type: 'button', class: 'primary',
          'data-action': 'retry'}, 'Retry');
        retry.addEventListener('click', function () {
          retry.disabled = true;
          act('retry', '/api/retry', {job: r.job}, function (a) {
            return 'Job ' + a.job + ' of ' + r.schedule + ' runs again (' +
              a.state + ', ' + a.attempts + ' attempts).';
          });
        });
        actions.appendChild(retry);
      } else if (st.word === 'open' && r.outcome === 'missed') {
        /* A missed slot has no job to retry: run it now (trigger). */
        var run = el('button', {type: 'button', class: 'primary',
          'data-action': 'trigger'}, 'Retry');
        run.addEventListener('click', function () {
          run.disabled = true;
          act('trigger', '/api/trigger', {schedule: r.schedule, slot: r.slot},
            function (a) {
              return r.schedule + ' ' + iso(r.slot) + ': job ' + a.job +
                ' runs now (' + a.state + ').';
            });
        });
        actions.appendChild(run);
      }
      if (st.word === 'open') {
        var ack = el('button', {type: 'button', 'data-action': 'ack'}, 'Ack');
        ack.addEventListener('click', function () {
          ack.disabled = true;
          act('ack', '/api/ack', {schedule: r.schedule, slot: r.slot},
            function (a) {
              return r.schedule + ' ' + iso(r.slot) + ': acknowledged (' +
                a.closed + ' alert' + (a.closed === 1 ? '' : 's') + ' closed).';
            });
        });
        actions.appendChild(ack);
      }
      var view = el('button', {type: 'button', class: 'link'}, 'view');
      view.addEventListener('click', function () { openSlot(r.schedule, r.slot_ms); });
      actions.appendChild(view);

      tbody.appendChild(el('tr', {class: st.word, 'data-schedule': r.schedule,
        'data-slot-ms': r.slot_ms, 'data-state': st.word},
        el('td', {class: 'name'}, r.schedule),
        el('td', {class: 'mono'}, iso(r.slot), el('span', {class: 'sub'}, rel(r.slot_ms))),
        el('td', null, pill(r.outcome), r.job ? el('span', {class: 'sub'}, 'job ' + r.job) : null),
        el('td', {class: 'error'}, r.error || ''),
        el('td', null, pill(st.word), st.when ? el('span', {class: 'sub'}, rel(isoMs(st.when))) : null),
        actions));
    });
    var open = rows.filter(function (r) { return slotState(r).word === 'open'; }).length;
    /* Seen from another tab too. */
    document.title = open ? '(' + open + ' open) surecron' : 'surecron';
    $('lost').hidden = rows.length === 0;
    $('lost-empty').hidden = rows.length !== 0;
    $('lost-count').textContent = rows.length
      ? open + ' open \u00b7 ' + (j.lost || 0) + ' lost, ' + (j.missed || 0) +
        ' missed, ' + (j.recovered || 0) + ' recovered, ' + (j.acked || 0) +
        ' acked (7 days)'
      : '';
  }

  /* ---- schedules ------------------------------------------------------- */

  function alertText(a) {
    if (typeof a === 'string')
      return a;
    if (a && typeof a === 'object') {
      var parts = [a.reason, a.slot ? iso(a.slot) : null,
        a.slots > 1 ? '(' + a.slots + ' slots)' : null].filter(Boolean);
      return parts.length ? parts.join(' ') : JSON.stringify(a);
    }
    return String(a);
  }

  function renderSchedules(j) {
    if (typeof j.now_ms === 'number')
      state.skewMs = j.now_ms - Date.now();
    var list = j.schedules || [];
    var tbody = $('schedules').tBodies[0];
    clear(tbody);
    list.forEach(function (s) {
      var p = s.policy || {};
      var policy = p.attempts ? p.attempts + ' \u00d7 ' + (p.backoff || '') +
        (p.delay_ms ? ' ' + durText(p.delay_ms) : '') : '';
      /* The last outcome is the last attempt's (recent, oldest first);
       * s.last may be a later record of another kind (an alert closed,
       * an ack), shown beside it. Its error is the attempt's when both
       * are the same record. */
      var recent = s.recent || [];
      var rec = s.last || null;
      var last = recent.length ? recent[recent.length - 1] : rec;
      var lastWhen = 0;
      if (last)
        lastWhen = isoMs(last.finished) || last.slot_ms;
      var lastErr = rec && last && rec.outcome === last.outcome &&
        rec.slot_ms === last.slot_ms ? rec.error : null;
      var note = rec && last && rec.outcome !== last.outcome &&
        ['recovered', 'acked', 'missed', 'lost'].indexOf(rec.outcome) >= 0
        ? rec.outcome + ' ' + iso(rec.slot) : null;

      var strip = el('div', {class: 'strip'});
      recent.forEach(function (r) {
        var cell = el('span', {class: r.outcome, title: r.outcome + ', attempt ' +
          r.attempt + ', slot ' + iso(r.slot)});
        cell.addEventListener('click', function () { openSlot(s.name, r.slot_ms); });
        strip.appendChild(cell);
      });

      var lastCell = el('td', {class: 'last'});
      if (last && last.outcome) {
        lastCell.appendChild(pill(last.outcome));
        lastCell.appendChild(el('span', {class: 'sub'}, rel(lastWhen)));
        if (lastErr)
          lastCell.appendChild(el('span', {class: 'sub error'}, lastErr));
        if (note)
          lastCell.appendChild(el('span', {class: 'sub', title: rec.error || null}, note));
      } else {
        lastCell.appendChild(el('span', {class: 'sub'}, 'never ran'));
      }

      var alerts = s.open_alerts || [];
      var alertCell = el('td', null);
      if (alerts.length)
        alerts.forEach(function (a) {
          alertCell.appendChild(el('div', {title: a && a.error ? a.error : null},
            pill(alertText(a), 'open')));
        });
      else
        alertCell.appendChild(el('span', {class: 'sub'}, 'none'));

      var nameCell = el('td', null, el('span', {class: 'name'}, s.name),
        el('span', {class: 'sub mono'}, (s.cron || '') + '  ' + (s.zone || '')));
      var nextCell = el('td', {class: 'next'}, el('span', {class: 'mono'}, s.next || ''),
        el('span', {class: 'sub'}, rel(s.next_ms)));

      tbody.appendChild(el('tr', {'data-schedule': s.name}, nameCell, nextCell,
        el('td', {title: s.class_reason || ''}, s['class'] || '',
          el('span', {class: 'sub'}, policy)),
        lastCell, el('td', null, strip), alertCell));
    });
    $('sched-count').textContent = list.length + (list.length === 1 ? ' schedule' : ' schedules');
    $('meta').textContent = (j.store ? 'store ' + j.store + ' \u00b7 ' : '') +
      'server time ' + iso(j.now);

    var names = list.map(function (s) { return s.name; });
    if (names.join('\n') !== state.names.join('\n')) {
      state.names = names;
      var sel = $('f-schedule'), keep = sel.value;
      clear(sel);
      sel.appendChild(el('option', {value: ''}, 'all'));
      names.forEach(function (n) { sel.appendChild(el('option', {value: n}, n)); });
      sel.value = names.indexOf(keep) >= 0 ? keep : '';
    }
  }

  /* ---- nodes (the daemons sharing the store) ----------------------------- */

  /* /api/nodes: each live daemon with its config digest; one whose
   * digest differs from this daemon's runs another config (a rolling
   * deploy under way, or a node left behind) and is marked skewed. */
  function renderNodes(j) {
    var live = j.live || [];
    var tbody = $('nodes').tBodies[0];
    var skewed = 0;
    clear(tbody);
    live.forEach(function (n) {
      var same = n.same_config !== false;
      if (!same)
        skewed++;
      tbody.appendChild(el('tr', {'data-node': n.id,
        'data-config': same ? 'same' : 'skewed'},
        el('td', {class: 'mono'}, n.id || ''),
        el('td', null, n.host || '', el('span', {class: 'sub'}, 'pid ' + n.pid)),
        el('td', {class: 'mono'}, n.version || ''),
        el('td', {class: 'config'}, el('span', {class: 'mono'}, n.config_digest || ''),
          same ? el('span', {class: 'sub'}, 'this config')
            : pill('skewed', 'open')),
        el('td', {class: 'mono'}, iso(n.started),
          el('span', {class: 'sub'}, rel(n.started_ms))),
        el('td', {class: 'seen'}, el('span', {class: 'mono'}, iso(n.last_seen)),
          el('span', {class: 'sub'}, rel(n.last_seen_ms)))));
    });
    $('nodes-count').textContent = live.length + ' live' +
      (skewed ? ' \u00b7 ' + skewed + ' on another config' : '') +
      (j.gone ? ' \u00b7 ' + j.gone + ' gone' : '');
  }

  /* ---- the slot view --------------------------------------------------- */

  function openSlot(schedule, slotMs) {
    state.slot = {schedule: schedule, slot_ms: slotMs};
    $('slot').hidden = false;
    loadSlot().then(function () {
      $('slot').scrollIntoView({block: 'nearest', behavior: 'smooth'});
    });
  }

  function loadSlot() {
    var s = state.slot;
    if (!s)
      return Promise.resolve();
    var path = '/api/slots/' + encodeURIComponent(s.schedule) + '/' +
      encodeURIComponent(String(s.slot_ms));
    return api('GET', path).then(function (j) {
      clearError('slot');
      if (state.slot === s)
        renderSlot(j);
    }, function (e) {
      if (e.status === 401)
        askToken('The daemon asks for the token to read: enter it.');
      showError('slot', e.message);
    });
  }

  function renderSlot(j) {
    $('slot-title').textContent = j.schedule + '  ' + iso(j.slot);
    var body = $('slot-body');
    clear(body);

    var job = j.job;
    var facts = el('dl', {class: 'facts'});
    function fact(k, v) { facts.appendChild(el('dt', null, k)); facts.appendChild(el('dd', null, v)); }
    fact('slot', el('span', {class: 'mono'}, iso(j.slot)));
    fact('job', job ? 'job ' + job.id + ' \u00b7 ' + job.state + ' \u00b7 ' +
      job.attempts + ' attempts' + (job.run_at && job.state !== 'done' &&
        job.state !== 'dead' ? ' \u00b7 runs at ' + iso(job.run_at) : '') : 'none');
    fact('done', j.marker ? 'yes' : 'no');
    body.appendChild(facts);

    /* The plan (explain's timeline) beside what happened: each planned
     * attempt with the ledger rows of the same attempt number. */
    var attempts = (j.attempts || []).filter(function (a) {
      return typeof a.attempt === 'number' && a.attempt > 0;
    });
    var byAttempt = {};
    attempts.forEach(function (a) { (byAttempt[a.attempt] = byAttempt[a.attempt] || []).push(a); });
    var plan = j.timeline || [];
    var t = el('table', {class: 'grid timeline'},
      el('thead', null, el('tr', null, el('th', null, 'Attempt'), el('th', null, 'Planned'),
        el('th', null, 'Outcome'), el('th', null, 'Started'), el('th', null, 'Finished'),
        el('th', null, 'Error'))));
    var tb = el('tbody');
    /* Planned times in UTC, as the attempts' are; the zone's own in
     * the tooltip. */
    function row(n, p, a) {
      var planned = p ? (typeof p.at_ms === 'number' ? iso(new Date(p.at_ms).toISOString())
        : iso(p.at)) : '';
      tb.appendChild(el('tr', {'data-attempt': n},
        el('td', null, String(n)), el('td', {title: p ? p.at : null}, planned),
        el('td', null, a ? pill(a.outcome) : el('span', {class: 'sub'}, 'not run')),
        el('td', null, a ? iso(a.started) : ''), el('td', null, a ? iso(a.finished) : ''),
        el('td', {class: 'error'}, a && a.error ? a.error : '')));
    }
    var seen = {};
    plan.forEach(function (p) {
      var got = byAttempt[p.attempt] || [null];
      got.forEach(function (a) { row(p.attempt, p, a); });
      seen[p.attempt] = true;
    });
    attempts.forEach(function (a) { if (!seen[a.attempt]) row(a.attempt, null, a); });
    t.appendChild(tb);
    body.appendChild(el('h3', null, 'Retry timeline and attempts'));
    body.appendChild(t);

    /* Rows of the slot that are not attempts (lost, alert, acked, ...). */
    var others = (j.attempts || []).filter(function (a) { return attempts.indexOf(a) < 0; });
    if (others.length) {
      body.appendChild(el('h3', null, 'Other records'));
      var ot = el('table', {class: 'grid'});
      var otb = el('tbody');
      others.forEach(function (a) {
        otb.appendChild(el('tr', null, el('td', null, pill(a.outcome)),
          el('td', {class: 'mono'}, iso(a.finished || a.started || a.slot)),
          el('td', {class: 'error'}, a.error || '')));
      });
      ot.appendChild(otb);
      body.appendChild(ot);
    }

    body.appendChild(el('h3', null, 'Sends'));
    var sends = j.sends || [];
    if (!sends.length) {
      body.appendChild(el('p', {class: 'empty'}, 'No send recorded.'));
    } else {
      var st = el('table', {class: 'grid'},
        el('thead', null, el('tr', null, el('th', null, 'Target'), el('th', null, 'Kind'),
          el('th', null, 'State'), el('th', null, ''))));
      var stb = el('tbody');
      sends.forEach(function (x) {
        var cls = x.state === 'sent' ? 'success'
          : x.state === 'failed' || x.state === 'abandoned' ? 'lost'
            : x.state === 'unknown' ? 'failed' : 'acked';
        var acts = el('td', {class: 'actions'});
        /* A send held after a crash: did it arrive? (release) */
        if (x.state === 'unknown')
          [['arrived', 'It arrived'], ['resend', 'Send again']].forEach(function (d) {
            var b = el('button', {type: 'button', 'data-action': 'release-' + d[0]}, d[1]);
            b.addEventListener('click', function () {
              b.disabled = true;
              act('release', '/api/release', {schedule: j.schedule, slot: j.slot,
                target: x.target, decision: d[0]}, function (a) {
                return x.target + ': ' + a.state + (a.job_revived ? ', job ' + a.job +
                  ' runs again' : '') + '.';
              });
            });
            acts.appendChild(b);
          });
        stb.appendChild(el('tr', {'data-target': x.target}, el('td', {class: 'name'}, x.target),
          el('td', null, x.kind || ''), el('td', null, pill(x.state, cls),
            x.tries ? el('span', {class: 'sub'}, x.tries + (x.tries === 1 ? ' try' : ' tries')) : null),
          acts));
      });
      st.appendChild(stb);
      body.appendChild(st);
    }
  }

  /* ---- the ledger ------------------------------------------------------- */

  function ledgerQuery() {
    var q = ['limit=200'];
    var s = $('f-schedule').value, o = $('f-outcome').value, since = $('f-since').value.trim();
    if (s) q.push('schedule=' + encodeURIComponent(s));
    if (o) q.push('outcome=' + encodeURIComponent(o));
    if (since) q.push('since=' + encodeURIComponent(since));
    return '/api/ledger?' + q.join('&');
  }

  function renderLedger(j) {
    var rows = (j.rows || []).slice().reverse();   /* newest first */
    var tbody = $('ledger').tBodies[0];
    clear(tbody);
    rows.forEach(function (r) {
      var tr = el('tr', {'data-schedule': r.schedule},
        el('td', {class: 'mono'}, iso(r.slot)),
        el('td', {class: 'name'}, r.schedule),
        el('td', null, r.job ? String(r.job) : ''),
        el('td', null, r.attempt ? String(r.attempt) : ''),
        el('td', null, pill(r.outcome)),
        el('td', {class: 'mono'}, iso(r.finished || r.started)),
        el('td', {class: 'error'}, r.error || ''));
      tr.addEventListener('click', function () { openSlot(r.schedule, r.slot_ms); });
      tbody.appendChild(tr);
    });
    $('ledger').hidden = rows.length === 0;
    $('ledger-empty').hidden = rows.length !== 0;
  }

  /* ---- refresh ------------------------------------------------------------ */

  function load(source, path, render) {
    return api('GET', path).then(function (j) {
      clearError(source);
      render(j);
    }, function (e) {
      if (e.status === 401)
        askToken('The daemon asks for the token to read: enter it.');
      showError(source, e.message);
    });
  }

  function refresh() {
    /* One at a time; one asked meanwhile (after an action) runs next. */
    if (state.busy) {
      state.again = true;
      return Promise.resolve();
    }
    state.busy = true;
    state.again = false;
    return Promise.all([
      load('schedules', '/api/schedules', renderSchedules),
      load('lost', '/api/lost', renderLost),
      load('nodes', '/api/nodes', renderNodes),
      load('ledger', ledgerQuery(), renderLedger),
      loadSlot()
    ]).then(function () {
      state.busy = false;
      $('refreshed').textContent = 'updated ' + new Date().toLocaleTimeString();
      if (state.again)
        return refresh();
    });
  }

  function start() {
    $('token-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      var t = $('token').value.trim();
      $('token').value = '';
      if (!t)
        return;
      setToken(t);
      clearError('token');
      refresh();
    });
    $('token-clear').addEventListener('click', function () { setToken(''); });
    $('ledger-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      refresh();
    });
    $('f-schedule').addEventListener('change', refresh);
    $('f-outcome').addEventListener('change', refresh);
    $('slot-close').addEventListener('click', function () {
      state.slot = null;
      $('slot').hidden = true;
    });
    showTokenState();
    refresh();
    setInterval(refresh, REFRESH_MS);
  }

  if (document.readyState === 'loading')
    document.addEventListener('DOMContentLoaded', start);
  else
    start();
}());
