/* The live dashboard in headless Chromium (run by ui_live.sh). Env: CHROMIUM,
 * SERVE_URL, TOKEN, PHASES (a directory for the kill/restart handshake with
 * the shell), SHOT (screenshot path), PROFILE (a fresh --user-data-dir).
 * Prints one line per check; exit 0 when all passed. */
'use strict';
const fs = require('fs');
const path = require('path');
const { launch, decodePng } = require('./cdp.js');

const E = process.env;
const base = E.SERVE_URL, origin = new URL(base).origin;
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
async function waitFile(f, secs) {
  const end = Date.now() + secs * 1000;
  while (!fs.existsSync(f)) { if (Date.now() > end) return false; await sleep(100); }
  return true;
}
async function apiNodes() {
  const r = await fetch(base + '/v1/nodes', { headers: { Authorization: 'Bearer ' + E.TOKEN } });
  return (await r.json()).nodes;
}
const CELLS = `[...document.querySelectorAll('[data-testid=gpu-map] [data-gpu]')].map(e =>
  [+e.dataset.gpu, +e.dataset.node, e.dataset.state])`;

(async () => {
  const b = await launch(E.CHROMIUM, E.PROFILE, 900, 1400);
  const problems = [], outside = [];
  let down = false;
  b.on((m) => {
    if (m.method === 'Runtime.exceptionThrown')
      problems.push('exception: ' + JSON.stringify(m.params.exceptionDetails).slice(0, 300));
    if (m.method === 'Runtime.consoleAPICalled' && (m.params.type === 'error' || m.params.type === 'assert'))
      problems.push('console.' + m.params.type + ': ' + JSON.stringify(m.params.args).slice(0, 300));
    if (m.method === 'Log.entryAdded' && m.params.entry.level === 'error' &&
        !(down && m.params.entry.source === 'network'))
      problems.push('log: ' + m.params.entry.source + ': ' + m.params.entry.text);
    if (m.method === 'Network.requestWillBeSent') {
      const u = m.params.request.url;
      if (!(u.startsWith(origin + '/') || u === origin || u.startsWith('data:') || u === 'about:blank'))
        outside.push(u);
    }
  });
  const page = await b.page(base + '/ui/#token=' + encodeURIComponent(E.TOKEN));
  const t0 = Date.now();
  const live = await waitFor(page, `document.body.dataset.conn === 'live' &&
    +document.body.dataset.refreshes >= 1 && document.querySelectorAll('[data-gpu]').length > 0`, 15);
  check(live, 'the page is live and drew the map (' + (Date.now() - t0) + ' ms)');
  check(await page.eval(`sessionStorage.getItem('tide-token') === ${JSON.stringify(E.TOKEN)} &&
    location.hash === ''`), 'the token is kept for the tab (sessionStorage), not in the URL');
  check(await page.eval(`document.documentElement.scrollWidth <= 900`), 'no horizontal overflow at 900 px');
  for (const id of ['gpu-map', 'service-chart', 'queue-table', 'lease-countdown'])
    check(await page.eval(`!!document.querySelector('[data-testid=${id}]')`), 'data-testid=' + id);
  check(await page.eval(`!!document.querySelector('[data-testid=service-chart] svg')`), 'the service chart is drawn');

  /* one cell per GPU, with the states the API reports */
  let same = false, last = '';
  for (let i = 0; i < 50 && !same; i++) {
    const nodes = await apiNodes();
    const api = [];
    nodes.forEach((n) => n.gpus.forEach((g) => api.push([g.gpu, n.node, g.state])));
    const cells = await page.eval(CELLS);
    same = JSON.stringify(cells) === JSON.stringify(api);
    last = 'page ' + JSON.stringify(cells.map((c) => c[2][0]).join('')) + ' api ' +
      JSON.stringify(api.map((c) => c[2][0]).join(''));
    if (!same) await sleep(200);
  }
  check(same, 'one cell per GPU with the API\'s node and state: ' + last);
  check(await page.eval(`document.querySelectorAll('[data-state=lent]').length >= 8`), 'GPUs lent to the job');
  check(await page.eval(`document.querySelectorAll('#lease-countdown .lease .cd').length >= 1 &&
    /in /.test(document.querySelector('#lease-countdown .lease .cd').textContent)`), 'a lease countdown');
  check(await page.eval(`document.querySelectorAll('[data-testid=queue-table] tbody tr').length`) === +E.QUEUED,
    'one queue row per queued job (' + E.QUEUED + ')');

  /* record every cell's states from now on; a reload would lose the marker */
  await page.eval(`window.__mark = 1; window.__seq = {}; setInterval(() => {
    document.querySelectorAll('[data-gpu]').forEach(e => { const s = window.__seq[e.dataset.gpu] ||
      (window.__seq[e.dataset.gpu] = []); if (s[s.length - 1] !== e.dataset.state) s.push(e.dataset.state); });
  }, 25); 1`);
  await fetch(base + '/v1/services/chat/demand', { method: 'POST', body: '{"rps": 250}',
    headers: { Authorization: 'Bearer ' + E.TOKEN, 'Content-Type': 'application/json' } });
  const moved = await waitFor(page, `Object.keys(window.__seq).filter(g => { const s = window.__seq[g].join(' ');
    return /lent.* reclaiming.* serving/.test(s); }).length`, 30);
  check(moved >= 8, 'cells went lent -> reclaiming -> serving without a reload (' + moved + ' GPUs): ' +
    JSON.stringify(await page.eval('window.__seq && window.__seq[8]')));
  check(await page.eval('window.__mark === 1'), 'no reload');

  /* screenshot: the pixels of known cells have their state's colour */
  await sleep(300);
  const png = await page.shot(E.SHOT);
  const img = decodePng(png);
  const probes = await page.eval(`['serving', 'idle', 'lent', 'warming'].map(s => {
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

  /* kill the daemon: the page says so, then reconnects by itself */
  const connects = await page.eval('+document.body.dataset.connects');
  const refreshes = await page.eval('+document.body.dataset.refreshes');
  down = true;
  fs.writeFileSync(path.join(E.PHASES, 'kill'), '');
  const saw = await waitFor(page, `document.body.dataset.conn === 'reconnecting'`, 15);
  check(saw, 'the page shows the connection lost');
  fs.writeFileSync(path.join(E.PHASES, 'saw'), '');
  check(await waitFile(path.join(E.PHASES, 'restarted'), 30), 'the daemon was restarted');
  const back = await waitFor(page, `document.body.dataset.conn === 'live' &&
    +document.body.dataset.connects > ${connects} && +document.body.dataset.refreshes > ${refreshes}`, 30);
  down = false;
  check(back, 'the page reconnected and refreshed after the restart');
  check(await page.eval('window.__mark === 1'), 'still no reload');
  same = false;
  for (let i = 0; i < 50 && !same; i++) {
    const nodes = await apiNodes();
    const api = [];
    nodes.forEach((n) => n.gpus.forEach((g) => api.push([g.gpu, n.node, g.state])));
    same = JSON.stringify(await page.eval(CELLS)) === JSON.stringify(api);
    if (!same) await sleep(200);
  }
  check(same, 'after the restart the map matches the API again');
  await sleep(500);
  check(problems.length === 0, 'no console error or exception: ' + problems.slice(0, 5).join(' | '));
  check(outside.length === 0, 'no request left ' + origin + ': ' + outside.slice(0, 5).join(' '));
  await b.close();
  process.exit(fails ? 1 : 0);
})().catch((e) => { console.log('FAIL ' + (e.stack || e)); process.exit(1); });
