/* The dashboard over `tide ui DIR` in headless Chromium (run by ui_replay.sh).
 * Env: CHROMIUM, UI_URL, AT (replay time, s), AT2 (a second time), SHOT,
 * PROFILE. Prints one line per check; exit 0 when all passed. */
'use strict';
const { launch, decodePng } = require('./cdp.js');

const E = process.env;
const base = E.UI_URL, origin = new URL(base).origin;
let fails = 0;
function check(ok, what) { console.log((ok ? 'ok   ' : 'FAIL ') + what); if (!ok) fails++; }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(page, expr, secs) {
  const end = Date.now() + secs * 1000;
  for (;;) {
    let v = null;
    try { v = await page.eval(expr); } catch (e) { /* navigating */ }
    if (v) return v;
    if (Date.now() > end) return null;
    await sleep(100);
  }
}
async function get(p, at) { return (await fetch(base + p + (p.includes('?') ? '&' : '?') + 'at=' + at)).json(); }
const CELLS = `JSON.stringify([...document.querySelectorAll('[data-testid=gpu-map] [data-gpu]')].map(e =>
  [+e.dataset.gpu, +e.dataset.node, e.dataset.state]))`;
async function apiCells(at) {
  const api = [];
  (await get('/v1/nodes', at)).nodes.forEach((n) => n.gpus.forEach((g) => api.push([g.gpu, n.node, g.state])));
  return JSON.stringify(api);
}

(async () => {
  const b = await launch(E.CHROMIUM, E.PROFILE, 900, 1400);
  const problems = [], outside = [];
  b.on((m) => {
    if (m.method === 'Runtime.exceptionThrown')
      problems.push('exception: ' + JSON.stringify(m.params.exceptionDetails).slice(0, 300));
    if (m.method === 'Runtime.consoleAPICalled' && (m.params.type === 'error' || m.params.type === 'assert'))
      problems.push('console.' + m.params.type + ': ' + JSON.stringify(m.params.args).slice(0, 300));
    if (m.method === 'Log.entryAdded' && m.params.entry.level === 'error')
      problems.push('log: ' + m.params.entry.source + ': ' + m.params.entry.text);
    if (m.method === 'Network.requestWillBeSent') {
      const u = m.params.request.url;
      if (!(u.startsWith(origin + '/') || u === origin || u.startsWith('data:') || u === 'about:blank'))
        outside.push(u);
    }
  });
  const at = +E.AT, t0 = Date.now();
  const page = await b.page(base + '/ui/#t=' + at);
  const up = await waitFor(page, `document.body.dataset.mode === 'replay' && document.body.dataset.conn === 'replay' &&
    +document.body.dataset.refreshes >= 1 && document.querySelectorAll('[data-gpu]').length > 0`, 15);
  check(up, 'the replay page drew the map (' + (Date.now() - t0) + ' ms)');
  check(await page.eval(`+document.getElementById('replay-slider').value`) === at, 'the slider is at ' + at + ' s');
  for (const id of ['gpu-map', 'service-chart', 'queue-table', 'lease-countdown', 'gantt', 'teams-table', 'replay-time'])
    check(await page.eval(`!!document.querySelector('[data-testid=${id}]')`), 'data-testid=' + id);
  check(await page.eval(`!!document.querySelector('[data-testid=service-chart] svg')`), 'the service chart is drawn');
  check(await page.eval(`document.documentElement.scrollWidth <= 900`), 'no horizontal overflow at 900 px');

  /* the map, the queue and the leases are the replay's at that time */
  const api = await apiCells(at), cells = await page.eval(CELLS);
  check(cells === api, 'one cell per GPU with the replay\'s node and state at ' + at + ' s');
  const states = new Set(JSON.parse(cells).map((c) => c[2]));
  check(states.has('serving') && (states.has('lent') || states.has('training')),
    'the map shows serving and training GPUs: ' + [...states].join(','));
  const q = (await get('/v1/jobs?state=queued&limit=1000', at)).jobs;
  const rows = JSON.parse(await page.eval(`JSON.stringify([...document.querySelectorAll(
    '[data-testid=queue-table] tbody tr')].map(r => [r.dataset.job, r.dataset.reason]))`));
  check(q.length > 0 && rows.length === q.length, 'one queue row per queued job (' + q.length + ')');
  check(JSON.stringify(rows) === JSON.stringify(q.map((j) => [j.id, j.reason])),
    'the queue shows the replay\'s order and reasons: ' + JSON.stringify(rows.slice(0, 4)));
  check(rows.every((r) => /^(Ready|Resources|Priority|Reservation|Quota|Draining|GangTooLarge)$/.test(r[1])),
    'every queued job has a pending reason');
  const leases = (await get('/v1/leases?active=1', at)).leases.length;
  check(await page.eval(`document.querySelectorAll('[data-testid=lease-countdown] .lease').length`) === leases,
    'one countdown per active lease (' + leases + ')');
  check(await page.eval(`document.querySelectorAll('[data-testid=gantt] .row[data-kind]:not([data-kind=reserved]) .bar').length > 0`),
    'the Gantt shows running gangs');
  check(await page.eval(`document.querySelectorAll('[data-testid=teams-table] tr[data-team]').length`) >= 2,
    'the teams table has the run\'s teams');

  /* screenshot: the pixels of known cells have their state's colour */
  const png = await page.shot(E.SHOT);
  const img = decodePng(png);
  const probes = await page.eval(`['serving', 'idle', 'lent', 'training'].map(s => {
    const e = document.querySelector('[data-gpu][data-state=' + s + ']'); if (!e) return null;
    const r = e.getBoundingClientRect(); return [s, Math.round(r.left + r.width / 2 + 2), Math.round(r.top + r.height - 3),
      getComputedStyle(e).backgroundColor]; }).filter(x => x && x[2] < ${img.height})`);
  let shotOk = probes.length >= 2;
  probes.forEach((p) => {
    const want = p[3].match(/\d+/g).map(Number), got = img.px(p[1], p[2]);
    const d = Math.max(...want.map((v, i) => Math.abs(v - got[i])));
    if (d > 12) shotOk = false;
    console.log('     pixel of a ' + p[0] + ' cell at ' + p[1] + ',' + p[2] + ': ' + got + ' (want ' + want + ')');
  });
  check(shotOk, 'screenshot ' + E.SHOT + ' (' + img.width + 'x' + img.height + '): cells have their colours');

  /* move in time: the views follow without a reload */
  const at2 = +E.AT2, r0 = await page.eval('+document.body.dataset.refreshes');
  await page.eval(`window.__mark = 1; location.hash = 't=${at2}'; 1`);
  const moved = await waitFor(page, `+document.body.dataset.refreshes > ${r0} &&
    +document.getElementById('replay-slider').value === ${at2}`, 10);
  check(moved, 'the page moved to ' + at2 + ' s');
  let same = false;
  const api2 = await apiCells(at2);
  for (let i = 0; i < 30 && !same; i++) {
    same = (await page.eval(CELLS)) === api2;
    if (!same) await sleep(100);
  }
  check(same && api2 !== api, 'the map is the replay\'s at ' + at2 + ' s (and differs from ' + at + ' s)');
  check(await page.eval('window.__mark === 1'), 'no reload');
  check(problems.length === 0, 'no console error or exception: ' + problems.slice(0, 5).join(' | '));
  check(outside.length === 0, 'no request left ' + origin + ': ' + outside.slice(0, 5).join(' '));
  await b.close();
  process.exit(fails ? 1 : 0);
})().catch((e) => { console.log('FAIL ' + (e.stack || e)); process.exit(1); });
