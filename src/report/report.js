/* tide report: draws the page from the JSON embedded in #tide-data.
 * Hand-written, no libraries: charts are SVG markup strings. The page loads
 * nothing. When done it sets on <body>: data-charts-expected (charts that
 * should have been drawn), data-charts-drawn (charts drawn with data) and
 * data-errors (script errors, also listed in #errors). With #selftest in the
 * URL it also renders every policy and a day view of each and records the
 * result in data-selftest. */
(function () {
  'use strict';

  var D = JSON.parse(document.getElementById('tide-data').textContent);
  var S = D.summary || {};
  var SP = S.policies || {};
  var POL = D.policies || [];
  var HORIZON = S.horizon_s || 0;
  var DAYS = Math.max(1, Math.ceil(HORIZON / 86400));
  var state = { policy: null, view: null, metric: 'useful', team: null };
  var drawn = {};      /* chart id -> 1 when drawn with data */
  var expected = {};   /* chart id -> 1 when it should be drawn */

  var STATE_COLS = [
    ['serving', 'serving', '#2f9e44'], ['warming', 'warming', '#a9e34b'],
    ['training', 'training', '#1c7ed6'], ['checkpointing', 'checkpointing', '#f59f00'],
    ['restoring', 'restoring', '#9c36b5'], ['lost', 'lost (work thrown away)', '#e03131'],
    ['idle', 'idle', '#ced4da']];
  var CLASS_COLS = [
    ['inference_gpus', 'inference', '#2f9e44'], ['p1_gpus', 'P1 training', '#d9480f'],
    ['p2_gpus', 'P2 training', '#1c7ed6'], ['p3_gpus', 'P3 training', '#74c0fc'],
    ['idle', 'idle', '#ced4da']];
  var POLICY_COLORS = { isolated: '#868e96', 'static': '#a0522d', preempt: '#e03131',
    k8s: '#f08c00', elastic: '#2f9e44', timeshare: '#7048e8' };
  var EXTRA_COLORS = ['#1098ad', '#d6336c', '#5c940d', '#e8590c', '#3b5bdb'];

  /* ----------------------------------------------------------- formatting */

  /* the shared chart code (chart.js, embedded before this script) */
  var C = TideChart.make({
    horizon: function () { return HORIZON; },
    view: function () { return state.view; },
    setView: function (v) { state.view = v; renderPolicy(); }
  });
  var esc = C.esc,
    ok = C.ok,
    group = C.group,
    num = C.num,
    pct = C.pct,
    big = C.big,
    dur = C.dur,
    pad2 = C.pad2,
    clock = C.clock,
    r1 = C.r1,
    get = C.get,
    niceStep = C.niceStep,
    niceRange = C.niceRange,
    clampRange = C.clampRange,
    tickText = C.tickText,
    timeTicks = C.timeTicks,
    timeLabel = C.timeLabel,
    boxWidth = C.boxWidth,
    legendHtml = C.legendHtml,
    frame = C.frame,
    emptyBox = C.emptyBox,
    text = C.text,
    line = C.line,
    showTip = C.showTip,
    hideTip = C.hideTip,
    fullView = C.fullView,
    curView = C.curView,
    setView = C.setView,
    floorIdx = C.floorIdx,
    wire = C.wire,
    interactionLayers = C.interactionLayers,
    xAxis = C.xAxis,
    yAxis = C.yAxis,
    timeChart = C.timeChart,
    TSTEPS = C.TSTEPS,
    $ = C.$;

  /* ---------------------------------------------------------- lease chart */

  function leaseChart(id, pol) {
    var box = $(id), title = 'Leases and reclaims (events.csv): grant \u2192 notice \u2192 ' +
      'checkpoint committed \u2192 GPUs returned';
    if (!box) return 0;
    var L = D.leases[pol];
    if (!L) {
      emptyBox(box, title, D.events_present ? 'no events for this policy in events.csv' :
        'events.csv was not found next to summary.json: no lease timeline');
      return 0;
    }
    var v = curView(), W = boxWidth(box);
    var rows = L.rows.filter(function (r) {
      var end = ok(r[1]) ? r[1] : HORIZON;
      return r[0] < v[1] && end > v[0];
    });
    /* lanes: greedy, in grant order */
    var lanes = [], lane = [];
    rows.forEach(function (r, i) {
      var end = ok(r[1]) ? r[1] : HORIZON, k;
      for (k = 0; k < lanes.length; k++) if (lanes[k] <= r[0]) break;
      lanes[k] = end;
      lane[i] = k;
    });
    var nl = Math.max(1, lanes.length);
    var H = Math.max(200, Math.min(460, 60 + nl * 9));
    var m = { l: 62, r: 22, t: 10, b: 44 }, pw = W - m.l - m.r, ph = H - m.t - m.b;
    var X = function (t) { return m.l + (t - v[0]) / (v[1] - v[0]) * pw; };
    var lh = ph / nl, bh = Math.max(1, Math.min(12, lh * 0.75));
    var clip = 'clip-' + id;
    var s = '<svg width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '">' +
      '<defs><clipPath id="' + clip + '"><rect x="' + m.l + '" y="' + m.t + '" width="' + pw +
      '" height="' + ph + '"/></clipPath></defs>';
    s += xAxis(m, pw, ph, v, X);
    var lstep = Math.max(1, Math.ceil(niceStep(nl, 4)));
    var yr = { ticks: [] };
    for (var q = 0; q <= nl; q += lstep) yr.ticks.push(q);
    yr.ticks.forEach(function (t) {
      var y = m.t + t * lh;
      s += text(m.l - 6, y + 4, num(t, 0), 'end');
    });
    var cy = m.t + ph / 2;
    s += '<text x="16" y="' + cy + '" font-size="11" fill="#333" text-anchor="middle" transform=' +
      '"rotate(-90 16 ' + cy + ')">leases (one lane each)</text>';
    s += '<g clip-path="url(#' + clip + ')">';
    var seg = function (a, b, y, color) {
      if (!(b > a)) return '';
      var x0 = X(Math.max(a, v[0])), x1 = X(Math.min(b, v[1]));
      return '<rect x="' + r1(x0) + '" y="' + r1(y) + '" width="' + r1(Math.max(0.8, x1 - x0)) +
        '" height="' + r1(bh) + '" fill="' + color + '"/>';
    };
    var marks = '';
    /* row: [grant, return, gpus, deadline, late, job, return reason,
     *       [[notice, commit, end, how, reason], ...]] */
    rows.forEach(function (r, i) {
      var y = m.t + lane[i] * lh + (lh - bh) / 2, end = ok(r[1]) ? r[1] : HORIZON;
      s += seg(r[0], end, y, '#a5d8ff');
      (r[7] || []).forEach(function (ep) {
        var n0 = ep[0], cm = ok(ep[1]) ? ep[1] : null, e0 = ok(ep[2]) ? ep[2] : end;
        s += seg(n0, cm !== null ? cm : e0, y, '#fd7e14');
        if (cm !== null) s += seg(cm, e0, y, '#40c057');
        if (bh < 3) return;
        var xn = X(n0);
        marks += '<path d="M' + r1(xn - 3.5) + ',' + r1(y - 1) + 'L' + r1(xn + 3.5) + ',' + r1(y - 1) +
          'L' + r1(xn) + ',' + r1(y + 5) + 'Z" fill="#d9480f"/>';
        if (cm !== null) marks += '<circle cx="' + r1(X(cm)) + '" cy="' + r1(y + bh / 2) + '" r="2.6" fill="#1864ab"/>';
        if (ok(ep[2])) marks += line(X(e0), y - 1, X(e0), y + bh + 1, ep[3] === 'returned' ? '#2b8a3e' : '#0b7285',
          ' stroke-width="1.5"' + (ep[3] === 'returned' ? '' : ' stroke-dasharray="2,1"'));
      });
      if (ok(r[1]) && bh >= 3 && !(r[7] || []).length) marks += line(X(end), y, X(end), y + bh, '#74c0fc');
      if (r[4]) {
        var xe = X(end);
        s += '<rect x="' + r1(X(Math.max(r[0], v[0]))) + '" y="' + r1(y - 0.5) + '" width="' +
          r1(Math.max(1, X(Math.min(end, v[1])) - X(Math.max(r[0], v[0])))) + '" height="' +
          r1(bh + 1) + '" fill="none" stroke="#e03131" stroke-width="1.2"/>';
        marks += line(xe - 4, y - 2, xe + 4, y + bh + 2, '#e03131', ' stroke-width="2"') +
          line(xe - 4, y + bh + 2, xe + 4, y - 2, '#e03131', ' stroke-width="2"');
      }
    });
    s += marks + '</g>';
    if (!rows.length) s += text(m.l + pw / 2, m.t + ph / 2, L.total ?
      'no lease in this time window' : 'no leases: ' + pol + ' lends no GPUs to training');
    s += '<rect x="' + m.l + '" y="' + m.t + '" width="' + pw + '" height="' + ph +
      '" fill="none" stroke="#888"/>';
    s += interactionLayers(m, pw, ph) + '</svg>';
    var leg = [{ name: 'lease held (training on lent GPUs)', color: '#a5d8ff' },
      { name: '\u25bc reclaim notice \u2192 checkpoint committed (\u25cf)', color: '#fd7e14' },
      { name: 'committed \u2192 GPUs returned (|; dashed: job shrank instead)', color: '#40c057' },
      { name: 'late return (after the lease deadline)', color: '#e03131', kind: 'line' }];
    var note = 'Showing ' + num(L.shown) + ' of ' + num(L.total) + ' leases' +
      (L.shown < L.total ? ' (every reclaimed lease first)' : '') + '; ' + num(L.noticed) + ' got ' +
      num(L.episodes) + ' notice(s) (reclaim, priority or window), ' + num(L.late) +
      ' returned late. Drag to zoom, double-click to reset.';
    frame(box, title, leg, s, note);
    wire(box, {
      m: m, pw: pw, ph: ph, v: v, read: function (t, e) {
        var svg = box.querySelector('svg'), rc = svg.getBoundingClientRect();
        var k = Math.floor((e.clientY - rc.top - m.t) / lh);
        for (var i = 0; i < rows.length; i++) {
          var r = rows[i], end = ok(r[1]) ? r[1] : HORIZON;
          if (lane[i] !== k || t < r[0] || t > end) continue;
          var h = '<b>lease of ' + esc(r[5] || '?') + '</b>, ' + r[2] + ' GPUs<br>granted ' +
            clock(r[0]) + (ok(r[3]) ? ', latest return ' + clock(r[3]) : '');
          (r[7] || []).forEach(function (ep) {
            h += '<br>notice ' + clock(ep[0]) + (ep[4] ? ' (' + esc(ep[4]) + ')' : '');
            if (ok(ep[1])) h += ', committed +' + dur(ep[1] - ep[0]);
            if (ok(ep[2])) h += ', ' + esc(ep[3]) + ' +' + dur(ep[2] - ep[0]);
          });
          if (ok(r[1])) h += '<br>returned ' + clock(r[1]) + (r[6] ? ' (' + esc(r[6]) + ')' : '');
          else h += '<br>still held at the horizon';
          if (r[4]) h += '<br><b style="color:#c92a2a">late</b>';
          return h;
        }
        return '';
      }
    });
    return 1;
  }

  /* ------------------------------------------------------- pipeline lane */

  var VSTATE = { registered: '#ced4da', evaluating: '#ffd43b', canary: '#74c0fc', serving: '#69db7c' };

  /* One lane per version (events.csv rows of kind "version"): registered ->
   * evaluating -> canary (a tick per traffic step) -> serving, or rolled back
   * (red x) / rejected; ends when retired. */
  function pipelineChart(id, pol) {
    var box = $(id), P = D.pipeline && D.pipeline[pol], title = 'Model pipeline (events.csv, kind ' +
      'version): checkpoint \u2192 registered \u2192 evaluated \u2192 canary steps \u2192 serving or rolled back';
    if (!box) return 0;
    if (!P || !P.rows.length) { box.style.display = 'none'; box.innerHTML = ''; return 0; }
    box.style.display = '';
    var vers = [], by = {};
    P.rows.forEach(function (r) {
      if (!(r[1] in by)) { by[r[1]] = []; vers.push(r[1]); }
      by[r[1]].push(r);
    });
    var v = curView(), W = boxWidth(box), nl = vers.length;
    var H = Math.max(160, Math.min(460, 60 + nl * 16));
    var m = { l: 110, r: 22, t: 10, b: 44 }, pw = W - m.l - m.r, ph = H - m.t - m.b;
    var X = function (t) { return m.l + (Math.min(Math.max(t, v[0]), v[1]) - v[0]) / (v[1] - v[0]) * pw; };
    var lh = ph / nl, bh = Math.max(2, Math.min(12, lh * 0.7)), clip = 'clip-' + id;
    var s = '<svg width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '"><defs><clipPath id="' +
      clip + '"><rect x="' + m.l + '" y="' + m.t + '" width="' + pw + '" height="' + ph + '"/></clipPath></defs>';
    s += xAxis(m, pw, ph, v, X) + '<g clip-path="url(#' + clip + ')">';
    var marks = '', labels = '';
    vers.forEach(function (name, k) {
      var rs = by[name], y = m.t + k * lh + (lh - bh) / 2, cur = null, t0 = 0;
      if (bh >= 6 || k % Math.ceil(nl / 20) === 0) labels += text(m.l - 6, y + bh / 2 + 4, name.split(':').pop(), 'end');
      rs.concat([[HORIZON, name, 'end', null]]).forEach(function (r) {
        if (r[2] === 'step') {
          marks += line(X(r[0]), y - 2, X(r[0]), y + bh + 2, '#1864ab', ' stroke-width="1.5"');
          return;
        }
        if (cur && VSTATE[cur] && r[0] > t0)
          s += '<rect x="' + r1(X(t0)) + '" y="' + r1(y) + '" width="' + r1(Math.max(0.8, X(r[0]) - X(t0))) +
            '" height="' + r1(bh) + '" fill="' + VSTATE[cur] + '"/>';
        if (r[2] === 'rolled-back' || r[2] === 'rejected') {
          var x = X(r[0]);
          marks += line(x - 4, y - 2, x + 4, y + bh + 2, '#e03131', ' stroke-width="2"') +
            line(x - 4, y + bh + 2, x + 4, y - 2, '#e03131', ' stroke-width="2"');
        }
        cur = r[2];
        t0 = r[0];
      });
    });
    s += marks + '</g>' + labels + '<rect x="' + m.l + '" y="' + m.t + '" width="' + pw + '" height="' + ph +
      '" fill="none" stroke="#888"/>' + interactionLayers(m, pw, ph) + '</svg>';
    var leg = Object.keys(VSTATE).map(function (k) { return { name: k, color: VSTATE[k] }; }).concat([
      { name: 'canary traffic step', color: '#1864ab', kind: 'line' },
      { name: 'rolled back / rejected', color: '#e03131', kind: 'line' }]);
    var f = P.figures || {}, bg = f.blue_green_2x || {};
    var note = ok(f.versions) ? num(f.versions) + ' versions: ' + num(f.served) + ' served, ' + num(f.rolled_back) +
      ' rolled back; checkpoint \u2192 full serving ' + num(f.ckpt_to_serving_mean_h, 2) + ' h mean (2x blue/green: ' +
      num(bg.ckpt_to_serving_mean_h, 2) + ' h); GPU-hours above the need during rollouts ' + num(f.extra_gpu_hours, 1) +
      ' (blue/green: ' + num(bg.extra_gpu_hours, 1) + '), worst step +' + num(f.worst_extra_gpus) + ' GPUs; evaluations ' +
      num(f.eval_gpu_hours, 1) + ' GPU-h; SLO during rollouts ' + num(f.slo_during_rollouts, 5) + '.' : '';
    frame(box, title, leg, s, note);
    wire(box, {
      m: m, pw: pw, ph: ph, v: v, read: function (t, e) {
        var rc = box.querySelector('svg').getBoundingClientRect(), k = Math.floor((e.clientY - rc.top - m.t) / lh);
        if (k < 0 || k >= nl) return '';
        return '<b>' + esc(vers[k]) + '</b>' + by[vers[k]].map(function (r) {
          return '<br>' + clock(r[0]) + ' ' + esc(r[2]) + (ok(r[3]) ? ' ' + num(r[3]) + '%' : '');
        }).join('');
      }
    });
    return 1;
  }

  /* ----------------------------------------------------------- bar charts */

  /* Horizontal bars: cats [names], series [{name, color, v: []}] side by side. */
  function hbarSvg(W, cats, series, unit, digits, fmt) {
    var bandH = Math.max(18, 8 + 12 * series.length), m = { l: 110, r: 70, t: 6, b: 34 };
    var H = m.t + m.b + cats.length * bandH, pw = W - m.l - m.r;
    var max = 0;
    series.forEach(function (s) { s.v.forEach(function (x) { if (ok(x) && x > max) max = x; }); });
    var xr = niceRange(0, max > 0 ? max : 1, 5);
    var X = function (x) { return m.l + x / xr.hi * pw; };
    var s = '<svg width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '">';
    xr.ticks.forEach(function (t) {
      s += line(X(t), m.t, X(t), H - m.b, '#eceef0');
      s += text(X(t), H - m.b + 14, tickText(t, xr.step));
    });
    s += text(m.l + pw / 2, H - 6, unit);
    cats.forEach(function (c, i) {
      var y0 = m.t + i * bandH;
      s += text(m.l - 6, y0 + bandH / 2 + 4, c, 'end');
      series.forEach(function (se, j) {
        var x = ok(se.v[i]) ? se.v[i] : 0, bh = (bandH - 6) / series.length;
        var y = y0 + 3 + j * bh;
        s += '<rect x="' + m.l + '" y="' + r1(y) + '" width="' + r1(Math.max(0, X(x) - m.l)) +
          '" height="' + r1(bh - 1) + '" fill="' + se.color + '"><title>' + esc(c + ' \u2014 ' +
          se.name + ': ' + (fmt ? fmt(x) : num(x, digits))) + '</title></rect>';
        s += text(X(x) + 4, y + bh / 2 + 3, fmt ? fmt(x) : num(x, digits), 'start');
      });
    });
    s += line(m.l, m.t, m.l, H - m.b, '#888') + '</svg>';
    return s;
  }

  function teamHours(id, pol) {
    var box = $(id), p = SP[pol] || {}, teams = p.teams || {}, names = Object.keys(teams);
    var title = 'GPU-hours and queueing per team';
    if (!names.length) { emptyBox(box, title, p.error ? 'policy failed: ' + esc(p.error) : 'no teams'); return 0; }
    var W = boxWidth(box);
    var a = hbarSvg(W, names, [{ name: 'GPU-hours', color: '#1c7ed6',
      v: names.map(function (t) { return teams[t].gpu_hours; }) }], 'GPU-hours held by the team\u2019s jobs (all states)', 0);
    var b = hbarSvg(W, names, [{ name: 'mean queue (h)', color: '#74c0fc',
      v: names.map(function (t) { return teams[t].mean_queue_s / 3600; }) }], 'mean queue time (hours)', 1);
    frame(box, title, [{ name: 'GPU-hours', color: '#1c7ed6' }, { name: 'mean queue time', color: '#74c0fc' }], a + b,
      'Jobs submitted: ' + names.map(function (t) { return esc(t) + ' ' + num(teams[t].jobs); }).join(', ') + '.');
    return 1;
  }

  function classHours(id, pol) {
    var box = $(id), p = SP[pol] || {}, c = p.gpu_hours_by_class, g = p.gpu_hours;
    var title = 'GPU-hours per class and per state';
    if (!c || !g) { emptyBox(box, title, 'no figures (policy failed?)'); return 0; }
    var cats = ['inference', 'p1', 'p2', 'p3'].filter(function (k) { return k in c; });
    var W = Math.floor((boxWidth(box) - 10) / 2);
    var s1 = hbarSvg(W, cats.map(function (k) { return k === 'inference' ? 'inference' : k.toUpperCase() + ' training'; }),
      [{ name: 'GPU-hours', color: '#2f9e44', v: cats.map(function (k) { return c[k]; }) }], 'GPU-hours by class', 0);
    var st = STATE_COLS.map(function (x) { return x[0]; }).filter(function (k) { return k in g; });
    var s2 = hbarSvg(W, st, [{ name: 'GPU-hours', color: '#868e96', v: st.map(function (k) { return g[k]; }) }],
      'GPU-hours by state', 0);
    frame(box, title, null, '<div style="display:flex;gap:10px">' + s1 + s2 + '</div>', 'Tiers: ' + Object.keys(p.gpu_hours_by_tier || {}).map(function (k) {
      return k + ' ' + num(p.gpu_hours_by_tier[k], 0);
    }).join(', ') + ' GPU-hours (A reserve, B inference beyond it, C lent under leases, D training).');
    return 1;
  }

  function teamLoss(id, pol) {
    var box = $(id), p = SP[pol] || {}, teams = p.teams || {}, names = Object.keys(teams);
    var title = 'Work lost and preemptions per team';
    if (!names.length) { emptyBox(box, title, 'no teams'); return 0; }
    var W = boxWidth(box);
    var a = hbarSvg(W, names, [{ name: 'GPU-hours lost', color: '#e03131',
      v: names.map(function (t) { return teams[t].gpu_hours_lost; }) }], 'GPU-hours of training thrown away', 1);
    var b = hbarSvg(W, names, [{ name: 'preemptions', color: '#f59f00',
      v: names.map(function (t) { return teams[t].preemptions; }) }], 'preemptions (job stops caused by others)', 0);
    frame(box, title, [{ name: 'GPU-hours lost', color: '#e03131' }, { name: 'preemptions', color: '#f59f00' }],
      a + b,
      'Total: ' + num(get(p, 'training.gpu_hours_lost'), 1) + ' GPU-hours lost, ' +
      num(get(p, 'training.preemptions')) + ' preemptions, ' + num(get(p, 'training.shrinks')) + ' shrinks.');
    return 1;
  }

  /* ---------------------------------------------------------------- teams */

  var TEAM_CLASS = [['p1', 'P1 training', '#d9480f'], ['p2', 'P2 training', '#1c7ed6'],
    ['p3', 'P3 training', '#74c0fc']];
  var TEAM_STATE = [['training', 'training (incl. work later lost)', '#1c7ed6'],
    ['checkpointing', 'checkpointing', '#f59f00'], ['restoring', 'restoring', '#9c36b5'],
    ['other', 'other states', '#868e96']];
  var TEAM_IDS = ['chart-team-class-time', 'chart-team-state-time', 'chart-team-chargeback',
    'chart-teams-compare'];

  function money(v) {
    if (!ok(v)) return '\u2013';
    return (v < 0 ? '-$' : '$') + num(Math.abs(v), 2);
  }
  function teamsOf(pol) {
    var T = D.teams;
    return T && T.available && T.policies ? T.policies[pol] : null;
  }
  function priced(P) { return !!(P && P.total && P.total[1] !== 0); }
  function teamByName(P, name) {
    for (var i = 0; P && i < P.teams.length; i++) if (P.teams[i].name === name) return P.teams[i];
    return null;
  }
  function govSpec(name) {
    var g = get(D.teams, 'governance_summary.teams');
    if (!g) return null;
    if (Array.isArray(g)) {
      for (var i = 0; i < g.length; i++) if (g[i] && g[i].name === name) return g[i];
      return null;
    }
    return typeof g === 'object' ? g[name] || null : null;
  }
  /* "weight 2, quota 32 GPUs, borrow limit 8, lend cap 4" (governance runs only) */
  function govText(tm) {
    if (!D.teams || !D.teams.governance) return '';
    var sp = govSpec(tm.name) || {}, parts = [];
    var w = ok(sp.weight) ? sp.weight : tm.weight, q = sp.quota !== undefined ? sp.quota : tm.quota_gpus;
    if (ok(w)) parts.push('weight ' + num(w, w === Math.round(w) ? 0 : 2));
    if (ok(q)) parts.push('quota ' + num(q) + ' GPUs');
    else if (q && typeof q === 'object') parts.push('quota ' + Object.keys(q).map(function (k) {
      return esc(k) + ' ' + num(q[k]); }).join(', ') + ' GPUs');
    else parts.push('no quota');
    if (ok(sp.borrow_limit) && sp.borrow_limit >= 0) parts.push('borrow limit ' + num(sp.borrow_limit) + ' GPUs');
    if (ok(sp.lend_cap) && sp.lend_cap >= 0) parts.push('lend cap ' + num(sp.lend_cap) + ' GPUs');
    return parts.join(', ');
  }

  function teamTabs(P) {
    var box = $('team-tabs');
    if (!P || !P.teams.length) { box.innerHTML = ''; return; }
    var names = P.teams.map(function (t) { return t.name; });
    if (names.length > 16) {
      box.innerHTML = 'Team: <select id="team-select">' + names.map(function (n) {
        return '<option' + (n === state.team ? ' selected' : '') + '>' + esc(n) + '</option>';
      }).join('') + '</select>';
      $('team-select').addEventListener('change', function () { state.team = this.value; renderTeams(); report(); });
      return;
    }
    box.innerHTML = 'Team: ' + names.map(function (n) {
      return '<button role="tab" data-team="' + esc(n) + '"' + (n === state.team ? ' class="on"' : '') + '>' + esc(n) +
        '</button>';
    }).join('');
  }

  function teamFigures(P, tm) {
    var box = $('team-figures'), lostOwner = P.lost_owner || '(policy: lost work)';
    var kv = [
      ['GPU-hours', num(tm.gpu_hours, 1) + ' <small>(' + pct(tm.share, 1) + ' of the teams\u2019)</small>'],
      ['cost (chargeback)', money(tm.cost) + (priced(P) ? '' : ' <small>(no prices in this run)</small>')],
      ['jobs', num(tm.jobs)],
      ['mean queue time', dur(tm.mean_queue_s)],
      ['preemptions', num(tm.preemptions)],
      ['GPU-hours lost', num(ok(tm.gpu_hours_lost) ? tm.gpu_hours_lost : tm.lost_gpu_hours, 2) +
        ' <small>charged to ' + esc(lostOwner) + ': ' + money(tm.lost_cost) + '</small>'],
      ['borrowed: on lent GPUs (tier C)', num(tm.tier_c_gpu_hours, 1) + ' GPU-h'],
      ['borrowed: above quota', ok(tm.above_quota_gpu_hours) ? num(tm.above_quota_gpu_hours, 1) + ' GPU-h' :
        '\u2013 <small>(no usage_teams.csv)</small>']];
    var g = govText(tm);
    if (g) kv.push(['governance', g]);
    box.innerHTML = '<h3>Team <b>' + esc(tm.name) + '</b> under <b style="color:' + (POLICY_COLORS[state.policy] || '#495057') +
      '">' + esc(state.policy) + '</b></h3><dl class="kv">' + kv.map(function (x) {
        return '<div><dt>' + esc(x[0]) + '</dt><dd>' + x[1] + '</dd></div>';
      }).join('') + '</dl>';
  }

  function teamTimeCharts(P, tm) {
    var s = tm.series;
    if (!s || !P.t) {
      var why = !P.t ? 'no timeline rows for this policy, so no time axis' : 'only the ' + num(D.teams.max_series) +
        ' largest teams of a policy get time series (to keep the page small); this team\u2019s totals are above';
      emptyBox($('chart-team-class-time'), 'GPUs held over time by class', why);
      emptyBox($('chart-team-state-time'), 'GPUs held over time by state', why);
      return;
    }
    var tl = { t: P.t, step: P.step };
    var res = 'usage.csv: ' + num(P.n_raw) + ' intervals of ' + dur(P.raw_step) +
      (P.factor > 1 ? ', drawn as averages over ' + dur(P.step) : '') + '. ';
    var lines = [];
    if (s.tier_c) lines.push({ name: 'on lent GPUs (tier C)', color: '#e8590c', v: s.tier_c, dash: '5,3', axis: 1, unit: 'GPUs', width: 1.4 });
    if (D.teams.governance && ok(tm.quota_gpus))
      lines.push({ name: 'quota (' + num(tm.quota_gpus) + ' GPUs)', color: '#0b7285', dash: '7,3', axis: 1, unit: 'GPUs',
        v: P.t.map(function () { return tm.quota_gpus; }) });
    var cls = TEAM_CLASS.filter(function (c) { return s[c[0]]; });
    expected['chart-team-class-time'] = 1;
    drawn['chart-team-class-time'] = timeChart('chart-team-class-time', { tl: tl, height: 260,
      title: 'GPUs held over time by class: ' + tm.name,
      stacks: cls.map(function (c) { return { name: c[1], color: c[2], v: s[c[0]] }; }),
      lines: lines, yLabel: 'GPUs (= GPU-hours per hour)',
      note: res + 'Every state counted (training, checkpointing, restoring, work later lost). Drag to zoom, double-click to reset.' });
    /* training held = classes minus the other states (not embedded, to keep the page small) */
    var n = P.t.length, tr = [], i;
    for (i = 0; i < n; i++) {
      var x = 0;
      TEAM_CLASS.forEach(function (c) { if (s[c[0]] && ok(s[c[0]][i])) x += s[c[0]][i]; });
      ['checkpointing', 'restoring', 'other'].forEach(function (k) { if (s[k] && ok(s[k][i])) x -= s[k][i]; });
      tr.push(Math.max(0, Math.round(x * 10) / 10));
    }
    var sv = { training: tr, checkpointing: s.checkpointing, restoring: s.restoring, other: s.other };
    var slines = s.lost_h ? [{ name: 'work lost: GPU-hours thrown away, booked at the stop (right axis)', color: '#e03131',
      v: s.lost_h, axis: 2, unit: 'GPU-h', digits: 2, width: 1.6 }] : [];
    expected['chart-team-state-time'] = 1;
    drawn['chart-team-state-time'] = timeChart('chart-team-state-time', { tl: tl, height: 260,
      title: 'GPUs held over time by state: ' + tm.name,
      stacks: TEAM_STATE.filter(function (c) { return sv[c[0]]; }).map(function (c) { return { name: c[1], color: c[2], v: sv[c[0]] }; }),
      lines: slines, yLabel: 'GPUs (= GPU-hours per hour)', y2Label: 'GPU-hours lost',
      note: 'Lost work is booked when a job stops (as in timeline.csv); the training layer is what the jobs held, ' +
        'including the work later thrown away' + (s.lost_h ? '' : ' (none for this team)') + '.' });
  }

  function teamChargeback(P, tm) {
    var box = $('chart-team-chargeback'), title = 'Chargeback of ' + tm.name + ': GPU-hours and cost by state';
    var bs = tm.by_state || {}, st = Object.keys(bs);
    if (!st.length) { emptyBox(box, title, 'no GPU-hours for this team in usage.csv'); return 0; }
    var order = ['training', 'checkpointing', 'restoring', 'lost'];
    st.sort(function (a, b) { return (order.indexOf(a) + 99 * (order.indexOf(a) < 0)) - (order.indexOf(b) + 99 * (order.indexOf(b) < 0)); });
    var lostOwner = P.lost_owner || '(policy: lost work)';
    var cats = st.map(function (k) { return k === 'lost' ? 'lost ' + lostOwner : k; });
    var pr = priced(P), W = pr ? Math.floor((boxWidth(box) - 10) / 2) : boxWidth(box);
    var a = hbarSvg(W, st, [{ name: 'GPU-hours', color: '#1c7ed6', v: st.map(function (k) { return bs[k][0]; }) }],
      'GPU-hours by state', 1);
    var b = pr ? hbarSvg(W, st, [{ name: 'cost', color: '#2b8a3e', v: st.map(function (k) { return bs[k][1]; }) }],
      'cost by state ($)', 2, money) : '';
    var tot = 0, totc = 0, rows = '';
    st.forEach(function (k, i) {
      var lost = k === 'lost';
      if (!lost) { tot += bs[k][0]; totc += bs[k][1]; }
      rows += '<tr' + (lost ? ' class="lostrow"' : '') + '><td>' + esc(cats[i]) + '</td><td>' + num(bs[k][0], 2) + '</td><td>' +
        money(bs[k][1]) + '</td><td class="l">' + (lost ? 'the policy (shown separately, not billed to ' + esc(tm.name) + ')' :
          esc(tm.name)) + '</td></tr>';
    });
    var cb = Object.keys(tm.by_class || {}).map(function (k) {
      return esc(k.toUpperCase()) + ' ' + num(tm.by_class[k][0], 1) + ' GPU-h / ' + money(tm.by_class[k][1]);
    }).join(', ');
    var table = '<table><tr><th>state</th><th>GPU-hours</th><th>cost</th><th class="l">charged to</th></tr>' + rows +
      '<tr class="tot"><td>billed to ' + esc(tm.name) + '</td><td>' + num(tot, 2) + '</td><td>' + money(totc) +
      '</td><td class="l">lost work excluded</td></tr></table>';
    frame(box, title, [{ name: 'GPU-hours', color: '#1c7ed6' }].concat(pr ? [{ name: 'cost ($)', color: '#2b8a3e' }] : []),
      '<div style="display:flex;gap:10px">' + a + b + '</div><div class="tablebox">' + table + '</div>',
      'By class: ' + cb + '. Costs are usage.csv\u2019s (GPU-hours \u00d7 the price of the GPU type and cost category)' +
      (priced(P) ? '.' : '; this run has no prices (cluster file <code>prices:</code>, docs/governance.md), so every cost is $0.'));
    return 1;
  }

  function teamsCompare(P) {
    var box = $('chart-teams-compare'), title = 'GPU-hours and cost per team (' + state.policy + ')';
    var tms = P.teams.slice(0, 40);
    if (!tms.length) { emptyBox(box, title, 'no team used GPUs under this policy'); return 0; }
    var names = tms.map(function (t) { return t.name; }), pr = priced(P);
    var W = pr ? Math.floor((boxWidth(box) - 10) / 2) : boxWidth(box);
    var hs = [{ name: 'GPU-hours', color: '#1c7ed6', v: tms.map(function (t) { return t.gpu_hours; }) }];
    if (tms.some(function (t) { return t.tier_c_gpu_hours > 0; }))
      hs.push({ name: 'of which on lent GPUs (tier C)', color: '#ffa94d', v: tms.map(function (t) { return t.tier_c_gpu_hours; }) });
    var a = hbarSvg(W, names, hs, 'GPU-hours held (all states)', 0);
    var cs = [{ name: 'cost billed to the team ($)', color: '#2b8a3e', v: tms.map(function (t) { return t.cost; }) }];
    if (tms.some(function (t) { return t.lost_cost > 0; }))
      cs.push({ name: 'lost work, charged to the policy ($)', color: '#f783ac', v: tms.map(function (t) { return t.lost_cost; }) });
    var b = pr ? hbarSvg(W, names, cs, 'cost ($)', 2, money) : '';
    frame(box, title, hs.concat(pr ? cs : []).map(function (x) { return { name: x.name, color: x.color }; }),
      '<div style="display:flex;gap:10px">' + a + b + '</div>',
      (P.teams.length > tms.length ? 'The ' + tms.length + ' largest of ' + P.teams.length + ' teams. ' : '') +
      (pr ? '' : 'No prices in this run: every cost is $0, so only GPU-hours are drawn.'));
    return 1;
  }

  function teamsTable(P, fallback) {
    var box = $('teams-table'), pol = state.policy, gov = D.teams && D.teams.governance;
    if (fallback) {
      var st = (SP[pol] || {}).teams || {}, nm = Object.keys(st), tot = 0;
      nm.sort(function (a, b) { return (st[b].gpu_hours || 0) - (st[a].gpu_hours || 0) || (a < b ? -1 : 1); });
      nm.forEach(function (t) { tot += st[t].gpu_hours || 0; });
      box.innerHTML = nm.length ? '<table><tr><th>team</th><th>GPU-hours</th><th>share</th><th>preemptions</th><th>GPU-h lost</th>' +
        '<th>mean queue</th><th>jobs</th></tr>' + nm.map(function (t) {
          var x = st[t];
          return '<tr><td>' + esc(t) + '</td><td>' + num(x.gpu_hours, 1) + '</td><td>' + pct(tot > 0 ? x.gpu_hours / tot : NaN, 1) +
            '</td><td>' + num(x.preemptions) + '</td><td>' + num(x.gpu_hours_lost, 2) + '</td><td>' + dur(x.mean_queue_s) +
            '</td><td>' + num(x.jobs) + '</td></tr>';
        }).join('') + '</table><div class="note">From summary.json only (no cost, no state or time breakdown without usage.csv).</div>' : '';
      return;
    }
    var h = '<table><tr><th>team</th><th>GPU-hours</th><th>share</th><th>cost billed</th><th>preemptions</th>' +
      '<th>GPU-h lost</th><th>lost cost (policy)</th><th>mean queue</th><th>tier C GPU-h</th><th>above quota GPU-h</th>' +
      (gov ? '<th>weight</th><th>quota GPUs</th>' : '') + '</tr>';
    P.teams.forEach(function (t) {
      h += '<tr' + (t.name === state.team ? ' class="sel"' : '') + '><td><a href="#teams" data-team="' + esc(t.name) + '">' +
        esc(t.name) + '</a></td><td>' + num(t.gpu_hours, 1) + '</td><td>' + pct(t.share, 1) + '</td><td>' + money(t.cost) +
        '</td><td>' + num(t.preemptions) + '</td><td>' + num(t.lost_gpu_hours, 2) + '</td><td>' + money(t.lost_cost) +
        '</td><td>' + dur(t.mean_queue_s) + '</td><td>' + num(t.tier_c_gpu_hours, 1) + '</td><td>' +
        (ok(t.above_quota_gpu_hours) ? num(t.above_quota_gpu_hours, 1) : '\u2013') + '</td>' +
        (gov ? '<td>' + num(t.weight, 2) + '</td><td>' + (ok(t.quota_gpus) ? num(t.quota_gpus) : 'none') + '</td>' : '') + '</tr>';
    });
    var span = gov ? 12 : 10;
    if (P.teams_count > P.teams.length)
      h += '<tr><td>(' + num(P.teams_count - P.teams.length) + ' more teams)</td><td>' + num(P.teams_not_listed[0], 1) +
        '</td><td></td><td>' + money(P.teams_not_listed[1]) + '</td><td colspan="' + (span - 4) + '"></td></tr>';
    h += '<tr class="lostrow"><td>' + esc(P.lost_owner) + '</td><td>' + num(P.lost[0], 2) + '</td><td></td><td>' +
      money(P.lost[1]) + '</td><td colspan="' + (span - 4) + '" class="l">work thrown away by preemptions and failures: ' +
      'charged to the policy, not to the teams (already inside the teams\u2019 GPU-hours above)</td></tr>';
    var c = P.categories || {};
    h += '</table><div class="note">Share: of all teams\u2019 GPU-hours. GPU-hours include every state (lost work too); ' +
      '\u201ccost billed\u201d excludes lost work. Whole cluster under ' + esc(pol) + ': ' + num(P.total[0], 1) + ' GPU-hours, ' +
      money(P.total[1]) + ' = teams ' + num(P.teams_total[0], 1) + ' GPU-h (' + money(P.teams_total[1]) + ') + services ' +
      num(P.services_total[0], 1) + ' GPU-h (' + money(P.services_total[1]) + ') + idle ' + num(P.idle_total[0], 1) +
      ' GPU-h (' + money(P.idle_total[1]) + '; reserved ' + num(get(c, 'reserved.0'), 1) + ') + lost work ' +
      num(P.lost[0], 2) + ' GPU-h (' + money(P.lost[1]) + ').</div>';
    box.innerHTML = h;
  }

  function servicesTable(P) {
    var box = $('services-table');
    if (!P) {
      box.innerHTML = '<div class="note">' + (D.teams && D.teams.available ? 'No usage.csv rows for this policy.' :
        'No per-service replica-hours and cost without usage.csv.') + '</div>';
      return;
    }
    if (!P.services.length) { box.innerHTML = '<div class="note">No service held GPUs under this policy.</div>'; return; }
    var h = '<table><tr><th>service</th><th>GPUs / replica</th><th>replica-hours</th><th>mean replicas</th><th>floor (min replicas)</th>' +
      '<th>GPU-hours</th><th>of which warming</th><th>cost</th></tr>';
    P.services.forEach(function (s) {
      h += '<tr><td>' + esc(s.name) + '</td><td>' + num(s.gpus_per_replica) + '</td><td>' + num(s.replica_hours, 1) + '</td><td>' +
        num(s.mean_replicas, 2) + '</td><td>' + num(s.min_replicas) + '</td><td>' + num(s.gpu_hours, 1) + '</td><td>' +
        num(s.warming_gpu_hours, 1) + '</td><td>' + money(s.cost) + '</td></tr>';
    });
    box.innerHTML = h + '</table><div class="note">usage.csv rows of owner kind <code>service</code> (serving and warming ' +
      'replicas, any tier)' + (P.services_meta ? '' : '; usage_services.csv is missing, so no replica sizes') +
      (P.services_count > P.services.length ? '; the ' + P.services.length + ' largest of ' + P.services_count + ' services' : '') +
      '.</div>';
  }

  function renderTeams() {
    var pol = state.policy, T = D.teams, P = teamsOf(pol);
    TEAM_IDS.forEach(function (id) { delete drawn[id]; delete expected[id]; });
    var tabs = document.querySelectorAll('#team-policy-tabs button');
    for (var i = 0; i < tabs.length; i++) tabs[i].className = tabs[i].getAttribute('data-policy') === pol ? 'on' : '';
    var note = $('teams-note'), card = $('team-card');
    var cmp = $('chart-teams-compare');
    if (!P) {
      card.style.display = 'none';
      cmp.style.display = 'none';
      cmp.innerHTML = '';
      $('team-tabs').innerHTML = '';
      note.innerHTML = !T || !T.available ? '<b>No team pages:</b> ' + esc((T && T.error) || 'no usage data') +
        '. The table below comes from summary.json.' : 'usage.csv has no rows for <b>' + esc(pol) + '</b> (did it fail?).';
      teamsTable(null, true);
      servicesTable(null);
      return;
    }
    card.style.display = '';
    cmp.style.display = '';
    if (!teamByName(P, state.team)) state.team = P.teams.length ? P.teams[0].name : null;
    note.innerHTML = 'Per team, from usage.csv (GPU-seconds per interval \u00d7 owner \u00d7 class \u00d7 state \u00d7 tier \u00d7 ' +
      'GPU type, priced per cost category) and summary.json (preemptions, queue times). ' + num(P.teams_count) +
      ' team' + (P.teams_count === 1 ? '' : 's') + ' under <b>' + esc(pol) + '</b>' +
      (D.teams.governance ? '; this run has a governance section (weights, quotas)' : '; no governance section (all weights 1, no quotas)') + '.';
    teamTabs(P);
    var tm = teamByName(P, state.team);
    if (tm) {
      teamFigures(P, tm);
      teamTimeCharts(P, tm);
      if (Object.keys(tm.by_state || {}).length) expected['chart-team-chargeback'] = 1;
      drawn['chart-team-chargeback'] = teamChargeback(P, tm);
    } else {
      card.style.display = 'none';
    }
    expected['chart-teams-compare'] = 1;
    drawn['chart-teams-compare'] = teamsCompare(P);
    teamsTable(P, false);
    servicesTable(P);
  }

  function teamsInit() {
    var box = $('team-policy-tabs');
    box.innerHTML = 'Policy: ' + POL.map(function (p) {
      return '<button role="tab" data-policy="' + esc(p) + '">' + esc(p) + '</button>';
    }).join('');
    box.addEventListener('click', function (e) {
      var p = e.target && e.target.getAttribute && e.target.getAttribute('data-policy');
      if (p) { state.policy = p; renderPolicy(); }
    });
    var pick = function (e) {
      var t = e.target && e.target.getAttribute && e.target.getAttribute('data-team');
      if (t) { e.preventDefault(); state.team = t; renderTeams(); report(); }
    };
    $('team-tabs').addEventListener('click', pick);
    $('teams-table').addEventListener('click', pick);
  }

  /* ------------------------------------------------------ capacity signals */

  var SIG_METRICS = [
    ['preemptions per day per 100 GPUs', 'preemptions_per_day_per_100_gpus', function (v) { return num(v, 2); }],
    ['stops by inference', 'stops_by_inference', function (v) { return num(v); }],
    ['stops by training (priority, quota)', 'stops_by_contention', function (v) { return num(v); }],
    ['p95 queue', 'p95_queue_h', function (v) { return num(v, 1) + ' h'; }],
    ['mean queued GPUs', 'mean_queue_gpus', function (v) { return num(v, 1); }],
    ['utilization', 'utilization', function (v) { return pct(v, 1); }],
    ['idle fraction', 'idle_fraction', function (v) { return pct(v, 1); }],
    ['idle while jobs waited', 'idle_while_queued_gpu_hours', function (v) { return num(v, 0) + ' GPU-h'; }],
    ['GPU-hours lost', 'gpu_hours_lost', function (v) { return num(v, 1); }],
    ['SLO attainment', 'slo_attainment', function (v) { return num(v, 5); }]];

  function sigValue(f, th) {
    var v = f.value, t = f.threshold;
    switch (f.signal) {
    case 'preemptions': return [num(v, 1) + ' /day/100 GPUs', '> ' + num(t, 1)];
    case 'queue': return t === th.queue_p95_h ? [num(v, 1) + ' h p95 queue', '> ' + num(t, 0) + ' h'] :
      [pct(v, 0) + ' of the cluster queued', '> ' + pct(t, 0)];
    case 'waste': return [pct(v, 1), t === th.utilization_low ? 'utilization < ' + pct(t, 0) : 'idle > ' + pct(t, 0)];
    case 'contention': return [num(v) + ' stops', ''];
    default: return ['', ''];
    }
  }

  function renderSignals() {
    var box = $('signals-body'), G = D.signals;
    if (!box) return;
    if (!G || G.error || !G.policies) {
      box.innerHTML = '<div class="empty">Capacity signals unavailable: ' + esc((G && G.error) || 'not computed') + '</div>';
      return;
    }
    var th = G.thresholds || {};
    var h = '<p class="note">The rules of <code>tide capacity DIR</code> (docs/governance.md) with the default thresholds: ' +
      'preemptions by inference &gt; ' + num(th.preempt_per_day_per_100_gpus, 1) + ' per day per 100 GPUs; p95 queue &gt; ' +
      num(th.queue_p95_h, 0) + ' h or mean queued GPUs &gt; ' + pct(th.queue_gpus_fraction, 0) + ' of the cluster; utilization &lt; ' +
      pct(th.utilization_low, 0) + ' or idle &gt; ' + pct(th.idle_high, 0) + '.</p>';
    h += '<table class="findings"><tr><th>policy</th><th class="l">level</th><th class="l">signal</th><th>value</th><th>threshold</th>' +
      '<th class="l">finding</th></tr>';
    POL.forEach(function (p) {
      var x = G.policies[p];
      if (!x) return;
      (x.findings || []).forEach(function (f, i) {
        var vt = sigValue(f, th);
        h += '<tr' + (p === state.policy ? ' class="sel"' : '') + '><td>' + (i ? '' : '<span style="color:' +
          (POLICY_COLORS[p] || '#495057') + '">\u25cf</span> ' + esc(p)) + '</td><td class="l"><span class="lvl ' +
          esc(f.level) + '">' + esc(f.level) + '</span></td><td class="l">' + esc(f.signal) + '</td><td>' + vt[0] +
          '</td><td>' + vt[1] + '</td><td class="l msg">' + esc(f.message) + '</td></tr>';
      });
    });
    h += '</table>';
    h += '<h3 class="sub">The numbers behind them</h3><table><tr><th>policy</th>' + SIG_METRICS.map(function (m) {
      return '<th>' + esc(m[0]) + '</th>'; }).join('') + '</tr>';
    POL.forEach(function (p) {
      var m = get(G, 'policies.' + p + '.metrics');
      if (!m) return;
      h += '<tr' + (p === state.policy ? ' class="sel"' : '') + '><td>' + esc(p) + '</td>' + SIG_METRICS.map(function (c) {
        return '<td>' + (ok(m[c[1]]) ? c[2](m[c[1]]) : '\u2013') + '</td>'; }).join('') + '</tr>';
    });
    h += '</table>';
    var sw = G.sweep || {};
    if (sw.available) {
      h += '<h3 class="sub">From the sweep (' + esc(sw.source || 'sweep.csv') + ')</h3><ul>' +
        (sw.steps || []).slice(0, 60).map(function (x) { return '<li>' + esc(x.message) + '</li>'; }).join('') +
        (sw.recommend || []).slice(0, 30).map(function (x) { return '<li><b>\u21d2 ' + esc(x.message) + '</b></li>'; }).join('') +
        '</ul>' + (sw.note ? '<p class="note">' + esc(sw.note) + '</p>' : '');
    } else {
      h += '<p class="note">No sweep over <code>reserve</code> in this directory (sweep.csv): run <code>tide sim ... --sweep ' +
        'reserve=8:64:8</code> to see what more Tier A GPUs buy in SLO and cost in training GPU-hours.</p>';
    }
    box.innerHTML = h;
  }

  /* -------------------------------------------------------------- scatter */

  /* pts: [{x, y, label, color, title, front}], both axes "higher is better". */
  function scatter(box, title, pts, xl, yl, c) {
    var W = boxWidth(box), H = c.height || 360, m = { l: 70, r: 30, t: 14, b: 46 };
    var pw = W - m.l - m.r, ph = H - m.t - m.b;
    var xs = pts.map(function (p) { return p.x; }).filter(ok),
        ys = pts.map(function (p) { return p.y; }).filter(ok);
    if (ok(c.hline)) ys.push(c.hline);
    if (!xs.length) { emptyBox(box, title, 'no data'); return 0; }
    var xlo = Math.min.apply(null, xs), xhi = Math.max.apply(null, xs);
    var ylo = Math.min.apply(null, ys), yhi = Math.max.apply(null, ys);
    var padx = Math.max((xhi - xlo) * 0.08, Math.abs(xhi) * 1e-5, 1e-6),
        pady = Math.max((yhi - ylo) * 0.08, Math.abs(yhi) * 1e-3, 1e-6);
    var xr = niceRange(xlo - padx, xhi + padx, 6), yr = niceRange(ylo - pady, yhi + pady, 5);
    if (c.xmax !== undefined && xr.hi > c.xmax && xhi <= c.xmax) xr = clampRange(xr, c.xmax);
    if (c.ymax !== undefined && yr.hi > c.ymax && yhi <= c.ymax) yr = clampRange(yr, c.ymax);
    var X = function (x) { return m.l + (x - xr.lo) / (xr.hi - xr.lo) * pw; };
    var Y = function (y) { return m.t + ph - (y - yr.lo) / (yr.hi - yr.lo) * ph; };
    var s = '<svg width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '">';
    xr.ticks.forEach(function (t) {
      s += line(X(t), m.t, X(t), m.t + ph, '#eceef0') + text(X(t), m.t + ph + 15, tickText(t, xr.step));
    });
    yr.ticks.forEach(function (t) {
      s += line(m.l, Y(t), m.l + pw, Y(t), '#eceef0') + text(m.l - 6, Y(t) + 4, tickText(t, yr.step), 'end');
    });
    s += '<rect x="' + m.l + '" y="' + m.t + '" width="' + pw + '" height="' + ph + '" fill="none" stroke="#888"/>';
    s += text(m.l + pw / 2, H - 8, xl);
    var cy = m.t + ph / 2;
    s += '<text x="16" y="' + cy + '" font-size="11" fill="#333" text-anchor="middle" transform="rotate(-90 16 ' +
      cy + ')">' + esc(yl) + '</text>';
    if (ok(c.hline)) {
      s += line(m.l, Y(c.hline), m.l + pw, Y(c.hline), '#495057', ' stroke-dasharray="6,4" stroke-width="1.5"');
      s += text(m.l + pw - 4, Y(c.hline) - 5, c.hlabel, 'end', ' font-weight="600"');
    }
    var fr = pts.filter(function (p) { return p.front && ok(p.x) && ok(p.y); })
      .sort(function (a, b) { return a.x - b.x || b.y - a.y; });
    if (fr.length > 1) {
      s += '<path d="' + fr.map(function (p, i) { return (i ? 'L' : 'M') + r1(X(p.x)) + ',' + r1(Y(p.y)); }).join('') +
        '" fill="none" stroke="#212529" stroke-width="1.2" stroke-dasharray="4,3"/>';
    }
    var placed = [];
    pts.forEach(function (p) {
      if (!ok(p.x) || !ok(p.y)) return;
      var x = X(p.x), y = Y(p.y);
      s += '<circle cx="' + r1(x) + '" cy="' + r1(y) + '" r="' + (p.front ? 6 : c.small ? 3.5 : 5) + '" fill="' +
        p.color + '" fill-opacity="' + (c.small && !p.front ? 0.55 : 0.9) + '" stroke="' +
        (p.front ? '#212529' : '#fff') + '" stroke-width="' + (p.front ? 1.6 : 1) + '"><title>' +
        esc(p.title || p.label) + '</title></circle>';
      if (p.label && !c.small) {
        var ly = y - 9;
        placed.forEach(function (q) { if (Math.abs(q[0] - x) < 70 && Math.abs(q[1] - ly) < 12) ly = q[1] + 13; });
        placed.push([x, ly]);
        var lab = p.label + (p.front ? ' \u2605' : ''), left = x + 8 + 7 * lab.length > m.l + pw;
        s += text(left ? x - 8 : x + 8, ly, lab, left ? 'end' : 'start', ' fill="' + p.color + '" font-weight="600"');
      }
    });
    s += '</svg>';
    frame(box, title, c.legend, (c.pre || '') + s, c.note);
    return 1;
  }

  /* Indexes of points not dominated on (x, y) (both maximised). */
  function paretoFront(pts) {
    return pts.map(function (p, i) {
      if (!ok(p.x) || !ok(p.y)) return false;
      for (var j = 0; j < pts.length; j++) {
        var q = pts[j];
        if (j !== i && ok(q.x) && ok(q.y) && q.x >= p.x && q.y >= p.y && (q.x > p.x || q.y > p.y)) return false;
      }
      return true;
    });
  }

  var METRICS = {
    useful: { name: 'useful utilization (%)', get: function (p) { return 100 * p.useful_utilization; }, oracle: true },
    util: { name: 'utilization (%)', get: function (p) { return 100 * p.utilization; }, oracle: true },
    train: { name: 'productive training GPU-hours', get: function (p) { return get(p, 'gpu_hours.training'); }, oracle: false }
  };

  function pareto(id) {
    var box = $(id), met = METRICS[state.metric];
    var pts = POL.filter(function (p) { return SP[p] && !SP[p].error; }).map(function (p) {
      var s = SP[p];
      return { x: 100 * get(s, 'inference.slo_attainment'), y: met.get(s), label: p,
        color: POLICY_COLORS[p] || '#495057',
        title: p + ': SLO ' + pct(get(s, 'inference.slo_attainment'), 3) + ', ' + met.name + ' ' + num(met.get(s), 2) };
    });
    var fr = paretoFront(pts);
    pts.forEach(function (p, i) { p.front = fr[i]; });
    var oracle = get(S, 'oracle.max_utilization');
    var sel = '<div>y axis: <select id="metric-select">' + Object.keys(METRICS).map(function (k) {
      return '<option value="' + k + '"' + (k === state.metric ? ' selected' : '') + '>' + esc(METRICS[k].name) + '</option>';
    }).join('') + '</select></div>';
    var r = scatter(box, 'Pareto: training goodput against inference SLO attainment (\u2605 = not dominated)', pts,
      'inference SLO attainment (% of requests served within capacity)', met.name, {
        hline: met.oracle && ok(oracle) ? 100 * oracle : undefined, ymax: met.oracle ? 100 : undefined,
        hlabel: 'oracle bound (perfect foresight): ' + pct(oracle, 1), xmax: 100, pre: sel,
        legend: pts.map(function (p) { return { name: p.label, color: p.color }; }),
        note: met.oracle ? 'The dashed line is summary.json oracle.max_utilization: inference need plus all ' +
          'training work that could have run, over GPUs \u00d7 horizon. Upper right is better.' :
          'Training GPU-hours spent making progress (gpu_hours.training). Upper right is better.'
      });
    var s = $('metric-select');
    if (s) s.addEventListener('change', function () { state.metric = s.value; drawn[id] = pareto(id); });
    return r;
  }

  function sweepChart(id) {
    var box = $(id), sw = D.sweep;
    if (!sw || !sw.rows || !sw.rows.length) return 0;
    var front = {};
    (sw.front || []).forEach(function (i) { front[i] = true; });
    var pts = sw.rows.map(function (r, i) {
      return { x: 100 * r.slo_attainment, y: 100 * r.useful_utilization, color: POLICY_COLORS[r.policy] || '#495057',
        front: !!front[i], label: r.policy,
        title: r.policy + ' @ ' + r.label + ': useful ' + pct(r.useful_utilization) + ', SLO ' + pct(r.slo_attainment, 3) +
          ', queue ' + dur(r.mean_queue_s) + ', lost ' + num(r.gpu_hours_lost, 1) + ' GPU-h' };
    });
    var pols = [];
    sw.rows.forEach(function (r) { if (pols.indexOf(r.policy) < 0) pols.push(r.policy); });
    return scatter(box, 'Sweep ' + (sw.spec || '') + ': ' + sw.rows.length + ' runs (' + (sw.points || '?') +
      ' parameter points \u00d7 policies); outlined = Pareto front', pts,
      'inference SLO attainment (%)', 'useful utilization (%)', {
        small: true, xmax: 100, height: 420,
        legend: pols.map(function (p) { return { name: p, color: POLICY_COLORS[p] || '#495057' }; }),
        note: 'Hover a point for its parameters. The front is over every (point, policy) pair: ' +
          'none of its members is beaten on both axes by another run.'
      });
  }

  function sweepTable() {
    var sw = D.sweep, box = $('sweep-table');
    if (!sw || !sw.rows || !box) return;
    var keys = sw.keys || [];
    var h = '<h3>Pareto front (' + (sw.front || []).length + ' of ' + sw.rows.length + ' runs)</h3><table><tr><th>policy</th>' +
      keys.map(function (k) { return '<th>' + esc(k) + '</th>'; }).join('') +
      '<th>useful %</th><th>SLO</th><th>util %</th><th>mean queue</th><th>lost GPU-h</th><th>preempt</th><th>reclaims (late)</th>' +
      '<th>runs alike</th></tr>';
    var sig = function (r) {
      return [r.policy, r.useful_utilization, r.slo_attainment, r.utilization, r.mean_queue_s, r.gpu_hours_lost,
        r.preemptions, r.reclaims, r.reclaims_late].join('|');
    };
    var groups = [], at = {};
    (sw.front || []).forEach(function (i) {
      var r = sw.rows[i], k = sig(r);
      if (at[k] === undefined) { at[k] = groups.length; groups.push({ r: r, n: 0 }); }
      groups[at[k]].n++;
    });
    groups.forEach(function (gr) {
      var r = gr.r;
      h += '<tr><td>' + esc(r.policy) + '</td>' + keys.map(function (k) {
        return '<td>' + esc(r.params && r.params[k] !== undefined ? r.params[k] : '') + '</td>';
      }).join('') + '<td>' + num(100 * r.useful_utilization, 2) + '</td><td>' + num(r.slo_attainment, 5) + '</td><td>' +
        num(100 * r.utilization, 2) + '</td><td>' + dur(r.mean_queue_s) + '</td><td>' + num(r.gpu_hours_lost, 1) +
        '</td><td>' + num(r.preemptions) + '</td><td>' + num(r.reclaims) + ' (' + num(r.reclaims_late) + ')</td><td>' +
        (gr.n > 1 ? gr.n + ' (knobs this policy ignores)' : '1') + '</td></tr>';
    });
    box.innerHTML = h + '</table>';
  }

  /* ------------------------------------------------------ summary table */

  var COLS = [
    ['util %', function (p) { return 100 * p.utilization; }, 2, 1],
    ['useful %', function (p) { return 100 * p.useful_utilization; }, 2, 1],
    ['productive %', function (p) { return 100 * p.productive_utilization; }, 2, 1],
    ['capacity SLO attain\u00adment', function (p) { return get(p, 'inference.slo_attainment'); }, 5, 1],
    ['unserved req', function (p) { return get(p, 'inference.unserved_requests'); }, 0, -1],
    ['TTFT SLO attain\u00adment', function (p) { return get(p, 'inference.latency.all.ttft_slo_attainment'); }, 5, 1],
    ['P50 TTFT s', function (p) { return get(p, 'inference.latency.all.ttft_p50_s'); }, 3, -1],
    ['P99 TTFT s', function (p) { return get(p, 'inference.latency.all.ttft_p99_s'); }, 3, -1],
    ['P99 TTFT vs isolated', function (p) { return get(p, 'inference.latency.vs_isolated.ttft_p99_x'); }, 3, -1],
    ['P50 TBT ms', function (p) { return 1000 * get(p, 'inference.latency.all.tbt_p50_s'); }, 1, -1],
    ['P99 TBT ms', function (p) { return 1000 * get(p, 'inference.latency.all.tbt_p99_s'); }, 1, -1],
    ['rejected req', function (p) { return get(p, 'inference.latency.all.rejected'); }, 0, -1],
    ['P99 checkpoint write s', function (p) { return get(p, 'faults.storage.transfer_times.ckpt_periodic.p99_s'); }, 0, -1],
    ['P99 reclaim checkpoint s', function (p) { return get(p, 'faults.storage.transfer_times.ckpt_asked.p99_s'); }, 0, -1],
    ['P99 weight load s', function (p) { return get(p, 'faults.storage.transfer_times.weight_load.p99_s'); }, 0, -1],
    ['storage peak / bandwidth', function (p) { return get(p, 'faults.storage.peak_demand_ratio'); }, 2, -1],
    ['jobs done', function (p) { return get(p, 'training.jobs_completed'); }, 0, 1],
    ['mean JCT h', function (p) { return get(p, 'training.jobs_completed') > 0 ? get(p, 'training.mean_jct_s') / 3600 : NaN; }, 2, -1],
    ['mean queue h', function (p) { return get(p, 'training.mean_queue_s') / 3600; }, 2, -1],
    ['p95 queue h', function (p) { return get(p, 'training.p95_queue_s') / 3600; }, 1, -1],
    ['preempt\u00adions', function (p) { return get(p, 'training.preemptions'); }, 0, -1],
    ['GPU-h lost', function (p) { return get(p, 'training.gpu_hours_lost'); }, 1, -1],
    ['reclaims', function (p) { return get(p, 'reclaim.count'); }, 0, 0],
    ['late', function (p) { return get(p, 'reclaim.late'); }, 0, -1],
    ['lease expiries', function (p) { return get(p, 'lease.expired'); }, 0, -1],
    ['Tier A breach GPU-h', function (p) { return get(p, 'tier_a.breach_gpu_s') / 3600; }, 2, -1],
    ['P99 lead s (to GPUs back)', function (p) { return get(p, 'reclaim.p99_lead_s'); }, 0, 0],
    ['P99 to ready s', function (p) { return get(p, 'reclaim.p99_notice_to_ready_s'); }, 0, 0],
    ['leases', function (p) { return get(p, 'reclaim.leases_granted'); }, 0, 0],
    ['lent GPU-h', function (p) { return get(p, 'reclaim.borrowed_gpu_hours'); }, 0, 0],
    ['idle while queued GPU-h', function (p) { return get(p, 'idle_while_queued_gpu_hours'); }, 0, -1]];

  function summaryTable() {
    var box = $('summary-table');
    var good = POL.filter(function (p) { return SP[p] && !SP[p].error; });
    var best = COLS.map(function (c) {
      if (!c[3] || good.length < 2) return null;
      var vals = good.map(function (p) { return c[1](SP[p]); }).filter(ok);
      return vals.length ? (c[3] > 0 ? Math.max.apply(null, vals) : Math.min.apply(null, vals)) : null;
    });
    var h = '<table><tr><th>policy</th>' + COLS.map(function (c) { return '<th>' + esc(c[0]) + '</th>'; }).join('') + '</tr>';
    POL.forEach(function (p) {
      var s = SP[p];
      h += '<tr' + (p === state.policy ? ' class="sel"' : '') + '><td><span style="color:' +
        (POLICY_COLORS[p] || '#495057') + '">\u25cf</span> ' + esc(p) + '</td>';
      if (!s || s.error) {
        h += '<td colspan="' + COLS.length + '" style="text-align:left;color:#c92a2a">failed: ' +
          esc(s ? s.error : 'not in summary.json') + '</td></tr>';
        return;
      }
      COLS.forEach(function (c, i) {
        var v = c[1](s);
        var isBest = best[i] !== null && ok(v) && Math.abs(v - best[i]) <= 1e-9 * Math.max(1, Math.abs(v));
        h += '<td' + (isBest ? ' class="best"' : '') + '>' + num(v, c[2]) + '</td>';
      });
      h += '</tr>';
    });
    box.innerHTML = h + '</table><div class="note">Green: best among the policies (where higher or lower is ' +
      'clearly better). Cluster ' + num(S.cluster_gpus) + ' GPUs, horizon ' + dur(S.horizon_s) + ', seed ' +
      esc(S.seed) + '. Oracle bound on utilization: ' + pct(get(S, 'oracle.max_utilization'), 1) + '.</div>';
  }

  /* ------------------------------------------------------ five questions */

  function faultsOf(pol) {
    var f = get(SP[pol], 'faults');
    return f !== undefined ? f : S.faults;
  }
  function flat(o, pre, out) {
    out = out || [];
    if (o === null || typeof o !== 'object') { out.push((pre || 'value') + ' = ' + o); return out; }
    Object.keys(o).forEach(function (k) {
      var v = o[k], name = pre ? pre + '.' + k : k;
      if (v !== null && typeof v === 'object' && out.length < 40) flat(v, name, out);
      else if (out.length < 40) out.push(name + ' = ' + (typeof v === 'number' ? num(v, Math.abs(v) < 100 && v !== Math.round(v) ? 3 : 0) : v));
    });
    return out;
  }
  function verdict(cls, s) { return '<span class="' + cls + '">' + s + '</span> '; }

  function questions(pol) {
    var box = $('questions'), p = SP[pol];
    if (!p || p.error) {
      box.innerHTML = '<p>Policy <b>' + esc(pol) + '</b> failed: ' + esc(p ? p.error : 'no summary') + '</p>';
      return;
    }
    var iso = SP.isolated && !SP.isolated.error ? SP.isolated : null;
    var q = [], slo = get(p, 'inference.slo_attainment'), uns = get(p, 'inference.unserved_requests');
    var dem = get(p, 'inference.demanded_requests'), misses = D.misses[pol] || [];
    var missT = misses.reduce(function (a, b) { return a + (b[1] - b[0]); }, 0);
    /* 1 */
    var a1 = 'Capacity SLO attainment <b>' + pct(slo, 3) + '</b>, ' + big(uns) + ' of ' + big(dem) + ' requests unserved';
    if (iso && pol !== 'isolated') {
      var d = slo - get(iso, 'inference.slo_attainment');
      a1 = (d > 1e-4 ? verdict('ok', 'better than isolated.') : d >= -1e-4 ? verdict('ok', 'as good as isolated.') :
        d >= -1e-3 ? verdict('warn', 'slightly below isolated.') :
        verdict('badv', 'below isolated.')) + a1 + '; isolated: ' + pct(get(iso, 'inference.slo_attainment'), 3) + ', ' +
        big(get(iso, 'inference.unserved_requests')) + ' unserved (' + (d >= 0 ? '+' : '') + num(100 * d, 3) + ' pp).';
    } else if (pol === 'isolated') a1 = verdict('ok', 'this is the baseline.') + a1 + '.';
    else a1 += '. (No isolated baseline in this run: add it with --policy isolated,...)';
    a1 += ' The timeline shows ready < demand in ' + misses.length + ' stretch' + (misses.length === 1 ? '' : 'es') +
      (misses.length ? ' totalling ' + dur(missT) + ' (shaded red in the charts)' : '') + '.';
    var la = get(p, 'inference.latency.all');
    if (la) {
      a1 += ' Latency (queueing model): P99 TTFT <b>' + num(la.ttft_p99_s, 3) + ' s</b>, P99 TBT <b>' +
        num(1000 * la.tbt_p99_s, 1) + ' ms</b>, ' + pct(la.ttft_slo_attainment, 3) + ' of requests within the TTFT target';
      var li = iso && pol !== 'isolated' ? get(iso, 'inference.latency.all') : null;
      a1 += li ? ' (isolated: ' + num(li.ttft_p99_s, 3) + ' s, ' + num(1000 * li.tbt_p99_s, 1) + ' ms).' : '.';
    }
    var ta = p.tier_a || {};
    if (ta.reserve_gpus > 0)
      a1 += ' Tier A (' + num(ta.reserve_gpus) + ' GPUs): ' + (ta.breach_gpu_s > 0 ?
        verdict('badv', num(ta.breach_gpu_s / 3600, 2) + ' GPU-hours below the reserve') +
        '(failed GPUs not yet replaced by healthy ones).' : verdict('ok', 'never below the reserve.'));
    q.push(['Did inference keep its SLO (vs the isolated baseline)?', a1]);
    /* 2 */
    var jct = function (x) { return x.jobs_completed > 0 ? dur(x.mean_jct_s) : '\u2013 (no job completed)'; };
    var t = p.training || {}, a2 = 'Mean time-to-train (JCT) <b>' + jct(t) + '</b> over <b>' + num(t.jobs_completed) +
      '</b> completed of ' + num(t.jobs_submitted) + ' jobs; mean queue ' + dur(t.mean_queue_s) + '. Work lost: <b>' +
      num(t.gpu_hours_lost, 1) + ' GPU-hours</b>, <b>' + num(t.preemptions) + '</b> preemptions, ' + num(t.shrinks) + ' shrinks.';
    if (iso && pol !== 'isolated') {
      var it = iso.training || {};
      a2 += ' Isolated: JCT ' + jct(it) + ', ' + num(it.jobs_completed) + ' completed, ' + num(it.gpu_hours_lost, 1) +
        ' GPU-h lost, ' + num(it.preemptions) + ' preemptions (' + (t.jobs_completed >= it.jobs_completed ? '+' : '') +
        num(t.jobs_completed - it.jobs_completed) + ' jobs).';
    }
    q.push(['How long did training take, and how much work was lost?', a2]);
    /* 3 */
    var r = p.reclaim || {}, a3;
    if (!r.count) {
      a3 = r.leases_granted ? 'No reclaim was needed: ' + num(r.leases_granted) + ' leases, none recalled.' :
        'Not applicable: <b>' + esc(pol) + '</b> lends no GPUs under leases, so nothing is reclaimed (inference ' +
        'capacity comes from its own partition or from preemption).';
    } else {
      var L = D.leases[pol], leads = [];
      if (L) L.rows.forEach(function (x) {
        (x[7] || []).forEach(function (ep) { if (ok(ep[2]) && ep[4] === 'reclaim') leads.push(ep[2] - ep[0]); });
      });
      leads.sort(function (a, b) { return a - b; });
      a3 = 'P99 reclaim notice \u2192 warm replica taking traffic: <b>' + dur(r.p99_notice_to_ready_s) + '</b>; notice \u2192 GPUs ' +
        'returned: <b>' + dur(r.p99_lead_s) + '</b> (P99) over ' + num(r.count) + ' reclaims, ' +
        (r.late ? verdict('badv', num(r.late) + ' late') : verdict('ok', 'none late')) +
        (get(p, 'lease.expired') > 0 ? verdict('warn', num(get(p, 'lease.expired')) + ' lease(s) expired') : '') +
        '(' + num(r.leases_granted) +
        ' leases, ' + num(r.borrowed_gpu_hours, 0) + ' GPU-hours borrowed).' +
        (leads.length ? ' From events.csv (' + leads.length + ' reclaim notices): median notice \u2192 GPUs back ' +
          '(returned, or the job shrank off them) ' + dur(leads[Math.floor(leads.length / 2)]) + ', max ' +
          dur(leads[leads.length - 1]) + '.' : '');
    }
    q.push(['How fast did reclaimed GPUs serve again (P99 notice \u2192 warm replica ready)?', a3]);
    /* 4 */
    var st = D.storage[pol], f = faultsOf(pol), fs = f && typeof f === 'object' ? f.storage : undefined, a4;
    var tl = D.timeline[pol], ck = 0, ckT = 0;
    if (tl && tl.cols.checkpointing) tl.cols.checkpointing.forEach(function (x, i) {
      var y = x + ((tl.cols.restoring || [])[i] || 0) + ((tl.cols.warming || [])[i] || 0);
      if (y > ck) { ck = y; ckT = tl.t[i]; }
    });
    if (st || fs !== undefined) {
      var lim = ok(get(fs, 'gbps')) ? fs.gbps : st && ok(st.limit_gbps) ? st.limit_gbps : null;
      var sat = get(fs, 'saturated_s'), peakI = get(fs, 'peak_demand_gbps');
      var hit = (ok(sat) && sat > 0) || (st && st.near_limit_intervals > 0);
      var spiky = st && st.mean > 0 && st.max > 3 * st.mean;
      a4 = hit ? verdict('badv', 'Yes: traffic reached the bandwidth limit.') :
        spiky ? verdict('warn', 'Spiky, but below the limit.') : verdict('ok', 'No marked spikes.');
      if (st) a4 += 'Storage demand (' + esc(st.column) + ', interval averages): peak <b>' + num(st.max, 2) +
        ' GB/s</b> at ' + clock(st.peak_t) + (lim ? ' against a ' + num(lim, 1) + ' GB/s limit (' + num(100 * st.max / lim, 0) +
        '%)' : '') + ', P99 ' + num(st.p99, 2) + ', mean ' + num(st.mean, 3) + ' GB/s' +
        (st.mean > 0 ? ' (peak/mean ' + num(st.max / st.mean, 1) + '\u00d7)' : '') + '; traffic in ' +
        num(st.active_intervals) + ' of ' + num(st.intervals) + ' intervals' +
        (lim ? ', ' + num(st.near_limit_intervals) + ' at \u2265 90% of the limit' : '') + '.';
      if (fs && typeof fs === 'object') {
        var known = ['gbps', 'peak_demand_gbps', 'mean_demand_gbps', 'saturated_s', 'transfers', 'moved_gb',
          'p99_ckpt_s', 'p99_warmup_s', 'uplinks', 'busiest_uplink'];
        a4 += ' From summary.json faults.storage: instantaneous peak demand ' + num(peakI, 2) + ' GB/s, saturated for ' +
          dur(sat) + ', ' + num(fs.transfers) + ' transfers moving ' + (fs.moved_gb >= 1000 ? num(fs.moved_gb / 1000, 1) + ' TB' :
          num(fs.moved_gb, 0) + ' GB') + '; P99 checkpoint ' +
          dur(fs.p99_ckpt_s) + ', P99 warm-up ' + dur(fs.p99_warmup_s) + '.';
        var bu = fs.busiest_uplink;
        if (Array.isArray(fs.uplinks) && fs.uplinks.length && bu && typeof bu === 'object')
          a4 += ' Rack uplinks: ' + num(fs.uplinks.length) + '; the busiest, rack ' + esc(bu.rack) + ', peaked at ' +
            num(bu.peak_demand_ratio, 1) + '\u00d7 its uplink and was saturated for ' + dur(bu.saturated_s) +
            ' (table below the storage chart).';
        var rest = Object.keys(fs).filter(function (k) { return known.indexOf(k) < 0; });
        if (rest.length) a4 += ' Also: ' + esc(rest.map(function (k) { return flat(fs[k], k).join(', '); }).join(', ')) + '.';
      } else if (fs !== undefined) a4 += ' summary.json faults.storage: ' + esc(flat(fs).join(', ')) + '.';
    } else {
      a4 = 'Not simulated: this run has no storage model (no storage_gbps column in timeline.csv, no faults.storage in ' +
        'summary.json), so checkpoint and weight-load traffic cost no bandwidth. To see spikes, re-run with a shared ' +
        'bandwidth, e.g. <code>tide sim ... --inject storage:50</code> (GB/s), and rebuild this report.';
    }
    a4 += ' For reference, GPUs checkpointing + restoring + warming peaked at ' + num(ck, 1) + ' (interval average) at ' +
      clock(ckT) + '.';
    q.push(['Did checkpoint and weight-load traffic make bandwidth spikes?', a4]);
    /* 5 */
    var bw = D.burst[pol], a5;
    if (bw && bw.length) {
      var allHeld = bw.every(function (b) { return b.short_intervals === 0; });
      var worstSlo = Math.min.apply(null, bw.map(function (b) { return ok(b.slo) ? b.slo : 1; }));
      a5 = (allHeld ? verdict('ok', 'Tier A held.') : worstSlo >= 0.99 ? verdict('warn', 'Tier A mostly held.') :
        verdict('badv', 'Tier A did not hold.')) + bw.map(function (b) {
        return (ok(b.factor) ? num(b.factor, 1) + '\u00d7 burst ' : 'Burst ') + clock(b.start) + ' \u2013 ' + clock(b.end) +
          (b.end_known ? '' : ' (end not recorded: first hour shown)') + ' (from ' + esc(b.source) + '): SLO \u2248 <b>' +
          pct(b.slo, 2) + '</b> over the window (from the timeline), ready < demand in ' + num(b.short_intervals) + ' of ' +
          num(b.intervals) + ' intervals, worst ready/demand ' + (ok(b.min_ready_ratio) ? num(b.min_ready_ratio, 2) : '\u2013') +
          ', peak demand ' + num(b.peak_demand_rps, 1) + ' req/s' +
          (b.day_before ? '; the same hours a day earlier: SLO \u2248 ' + pct(b.day_before.slo, 2) + ', peak ' +
            num(b.day_before.peak_demand_rps, 1) + ' req/s' : '') + '.';
      }).join(' ');
      if (iso && pol !== 'isolated' && D.burst.isolated && D.burst.isolated.length)
        a5 += ' Isolated over the same window' + (D.burst.isolated.length > 1 ? 's' : '') + ': SLO \u2248 ' +
          D.burst.isolated.map(function (b) { return pct(b.slo, 2); }).join(', ') + '.';
    } else {
      a5 = 'Not tested: no demand burst was injected in this run. To check Tier A under a 2\u00d7 mis-forecast, re-run ' +
        'with e.g. <code>tide sim ... --inject burst:2x@3d+2h</code> (every service\u2019s demand doubled on day 4 from ' +
        '00:00 to 02:00, unseen by the forecast; <code>burst:SERVICE:2x@T+D</code> for one service) and rebuild this ' +
        'report: the answer is then read off the timeline over the burst window.';
    }
    q.push(['Did Tier A hold under a 2\u00d7 mis-forecast (demand burst)?', a5]);
    box.innerHTML = '<p>Policy <b style="color:' + (POLICY_COLORS[pol] || '#495057') + '">' + esc(pol) + '</b></p><ol>' +
      q.map(function (x) { return '<li><span class="q">' + esc(x[0]) + '</span><br>' + x[1] + '</li>'; }).join('') + '</ol>';
  }

  /* ------------------------------------------------------------- faults */

  function faultMarks(pol) {
    var f = D.faults[pol];
    if (!f || !f.rows) return [];
    return f.rows.map(function (r) {
      return { t: r[0], color: '#ae3ec9', label: r[1] + (r[2] ? ' (' + r[2] + ')' : '') + (r[3] ? ' job ' + r[3] : '') +
        (r[4] ? ' ' + r[4] : '') + ' at ' + clock(r[0]) };
    });
  }
  function faultList(pol) {
    var box = $('fault-list'), f = D.faults[pol];
    if (!box) return;
    if (!f || !f.total) { box.innerHTML = ''; return; }
    var h = '<div class="chart"><h3>Fault events (' + num(f.total) + (f.total > f.rows.length ? ', first ' + f.rows.length + ' listed' : '') +
      ')</h3><div class="tablebox" style="max-height:240px;overflow-y:auto"><table><tr><th>time</th><th>kind</th><th>reason</th>' +
      '<th>job</th><th>service</th><th>gpus</th><th>value</th></tr>';
    f.rows.forEach(function (r) {
      h += '<tr><td>' + clock(r[0]) + '</td><td class="l">' + esc(r[1]) + '</td><td class="l">' + esc(r[2] || '') +
        '</td><td class="l">' + esc(r[3] || '') + '</td><td class="l">' + esc(r[4] || '') + '</td><td>' + num(r[5]) + '</td><td>' + num(r[6], 2) + '</td></tr>';
    });
    box.innerHTML = h + '</table></div></div>';
  }

  /* ------------------------------------------------------------ rendering */

  function seriesOf(tl, cols) {
    return cols.map(function (c) { return { name: c[1], color: c[2], v: tl.cols[c[0]] }; });
  }
  function sumCols(tl, names) {
    var out = null;
    names.forEach(function (k) {
      var a = tl.cols[k];
      if (!a) return;
      if (!out) out = a.slice(); else for (var i = 0; i < out.length; i++) out[i] += a[i];
    });
    return out;
  }

  function renderPolicy() {
    var pol = state.policy, tl = D.timeline[pol];
    var ids = ['chart-gpu-state', 'chart-forecast', 'chart-gpu-class', 'chart-training', 'chart-leases', 'chart-pipeline', 'chart-storage',
      'chart-team-hours', 'chart-class-hours', 'chart-team-loss', 'chart-power'];
    ids.forEach(function (id) { delete drawn[id]; delete expected[id]; });
    var tabs = document.querySelectorAll('#policy-tabs button');
    for (var i = 0; i < tabs.length; i++) tabs[i].className = tabs[i].getAttribute('data-policy') === pol ? 'on' : '';
    dayControls();
    questions(pol);
    faultList(pol);
    var bands = (D.misses[pol] || []);
    var marks = faultMarks(pol);
    var demand = [{ name: 'inference demand (req/s, right axis)', color: '#212529', v: tl && tl.cols.demand_rps, axis: 2, unit: 'req/s', width: 1.6 },
      { name: 'ready capacity (req/s, right axis)', color: '#212529', v: tl && tl.cols.ready_rps, axis: 2, dash: '5,3', unit: 'req/s', width: 1.4 }];
    var res = tl ? 'Timeline: ' + num(tl.n_raw) + ' intervals of ' + dur(tl.raw_step) +
      (tl.factor > 1 ? ', drawn as averages over ' + dur(tl.step) : '') + '. ' : '';
    if (!tl) {
      ids.slice(0, 3).forEach(function (id) { expected[id] = 1; emptyBox($(id), id, 'no timeline for ' + esc(pol)); });
    } else {
      expected['chart-gpu-state'] = 1;
      drawn['chart-gpu-state'] = timeChart('chart-gpu-state', { tl: tl,
        title: 'GPUs by state (interval averages) with inference demand and ready capacity',
        stacks: seriesOf(tl, STATE_COLS), lines: demand, yLabel: 'GPUs (cluster: ' + S.cluster_gpus + ')', yMax: S.cluster_gpus,
        y2Label: 'requests/s', bands: bands,
        bandName: 'SLO miss: ready < demand', marks: marks, markName: 'fault event',
        note: res + 'Red bands: ready capacity below demand (at full timeline resolution). Drag to zoom, double-click to reset.' });
      if (tl.cols.forecast_rps) {
        expected['chart-forecast'] = 1;
        drawn['chart-forecast'] = timeChart('chart-forecast', { tl: tl, height: 260,
          title: 'Inference: forecast band against demand and ready capacity',
          stacks: [],
          areas: [{ name: 'forecast peak \u2192 sized for (peak \u00d7 (1 + margin))', color: 'rgba(116,143,252,.35)',
            lo: tl.cols.forecast_rps, hi: tl.cols.sized_rps, axis: 1, unit: 'req/s' }],
          lines: [{ name: 'demand', color: '#212529', v: tl.cols.demand_rps, axis: 1, unit: 'req/s', width: 1.6 },
            { name: 'ready capacity', color: '#2b8a3e', v: tl.cols.ready_rps, axis: 1, dash: '5,3', unit: 'req/s', width: 1.6 }],
          yLabel: 'requests/s', bands: bands, bandName: 'SLO miss: ready < demand',
          note: 'The band is what tide acts on: the forecast baseline peak over the next hour (bottom) up to the ' +
            'size it scales to, the peak times one plus the learned burst margin (top); summed over services, as ' +
            'known at the start of each interval. Per-service columns (forecast_rps:SERVICE, ...) are in timeline.csv.' });
      } else {
        $('chart-forecast').innerHTML = '';
      }
      expected['chart-gpu-class'] = 1;
      drawn['chart-gpu-class'] = timeChart('chart-gpu-class', { tl: tl,
        title: 'GPUs by class: inference and training priorities',
        stacks: seriesOf(tl, CLASS_COLS),
        lines: [{ name: 'Tier A reserve (GPUs)', color: '#0b7285', v: tl.cols.tier_a_gpus, dash: '6,3', axis: 1, unit: 'GPUs' },
          { name: 'lent under leases (GPUs)', color: '#e8590c', v: tl.cols.leased_gpus, axis: 1, unit: 'GPUs', width: 1.2 }].concat(demand),
        yLabel: 'GPUs (cluster: ' + S.cluster_gpus + ')', yMax: S.cluster_gpus, y2Label: 'requests/s', bands: bands,
        bandName: 'SLO miss: ready < demand',
        note: 'Training GPUs include every state (training, checkpointing, restoring, lost).' });
      expected['chart-training'] = 1;
      drawn['chart-training'] = timeChart('chart-training', { tl: tl, height: 260,
        title: 'Training: queue depth and running work',
        stacks: [],
        lines: [{ name: 'GPUs held by training jobs', color: '#1c7ed6', v: sumCols(tl, ['p1_gpus', 'p2_gpus', 'p3_gpus']), axis: 1, unit: 'GPUs', width: 2 },
          { name: 'GPUs asked by queued jobs', color: '#e8590c', v: tl.cols.queue_gpus, axis: 1, unit: 'GPUs', width: 2 },
          { name: 'jobs queued (right axis)', color: '#e8590c', v: tl.cols.queue_jobs, axis: 2, dash: '4,3', unit: 'jobs' },
          { name: 'jobs running (right axis)', color: '#1c7ed6', v: tl.cols.running_jobs, axis: 2, dash: '4,3', unit: 'jobs' }],
        yLabel: 'GPUs', y2Label: 'jobs' });
    }
    expected['chart-leases'] = 1;
    drawn['chart-leases'] = leaseChart('chart-leases', pol);
    if (D.pipeline && D.pipeline[pol] && D.pipeline[pol].rows.length) expected['chart-pipeline'] = 1;
    drawn['chart-pipeline'] = pipelineChart('chart-pipeline', pol);
    var st = D.storage[pol], sbox = $('chart-storage');
    if (tl && st) {
      expected['chart-storage'] = 1;
      sbox.style.display = '';
      var extra = (D.extra_columns || []).map(function (k, i) {
        return { name: k + (k === st.column ? ' (GB/s demanded, bucket max)' : ''), color: EXTRA_COLORS[i % EXTRA_COLORS.length],
          v: tl.cols[k], axis: 1, unit: k === st.column ? 'GB/s' : '', digits: 2, width: 1.8 };
      });
      drawn['chart-storage'] = timeChart('chart-storage', { tl: tl, height: 240,
        title: 'Storage bandwidth (checkpoint and weight-load traffic)', stacks: [],
        lines: [{ name: 'GPUs checkpointing + restoring (right axis)', color: 'rgba(245,159,0,.75)', axis: 2, unit: 'GPUs',
          v: sumCols(tl, ['checkpointing', 'restoring']), width: 1 }].concat(extra), yLabel: 'GB/s', y2Label: 'GPUs',
        note: 'Extra timeline columns, drawn as bucket maxima so that spikes survive downsampling.' });
    } else {
      sbox.style.display = 'none';
      sbox.innerHTML = '';
    }
    uplinkTable(pol);
    powerSection(pol);
    expected['chart-team-hours'] = 1;
    drawn['chart-team-hours'] = teamHours('chart-team-hours', pol);
    expected['chart-class-hours'] = 1;
    drawn['chart-class-hours'] = classHours('chart-class-hours', pol);
    expected['chart-team-loss'] = 1;
    drawn['chart-team-loss'] = teamLoss('chart-team-loss', pol);
    summaryTable();
    renderTeams();
    renderSignals();
    report();
  }

  /* Power by domain (summary.json policies.<pol>.power.series): each power
   * domain's highest planned draw per bucket as a share of its budget (of its
   * nameplate without one), the 100% line, and the jobs that were capped. */
  var POWER_COLORS = ['#1c7ed6', '#e8590c', '#2b8a3e', '#862e9c', '#c92a2a', '#0b7285', '#5f3dc4', '#d9480f', '#087f5b', '#495057'];
  /* The per-rack uplink figures (summary.json faults.storage.uplinks, tide sim
   * --uplink or a cluster file's uplink_gbps): one row per rack, the busiest
   * marked; nothing when the run has no uplinks. */
  function uplinkTable(pol) {
    var f = faultsOf(pol), fs = f && typeof f === 'object' ? f.storage : undefined, tb = $('uplink-table');
    var U = get(fs, 'uplinks'), b = get(fs, 'busiest_uplink');
    if (!Array.isArray(U) || !U.length) { tb.innerHTML = ''; return; }
    var busy = b && typeof b === 'object' ? b.rack : null;
    var h = '<p class="note">Rack uplinks (per-domain bandwidth budgets beside the ' + num(fs.gbps, 1) +
      ' GB/s storage; summary.json faults.storage.uplinks): demand is what the rack\'s transfers would take at their ' +
      'declared rates, rate what they got; saturated: seconds with demand above the uplink.' +
      (busy !== null ? ' Busiest: rack ' + esc(busy) + ', ' + num(b.peak_demand_ratio, 1) + '\u00d7 its uplink at peak.' : '') +
      '</p><table class="uplinks"><thead><tr><th>rack</th><th>uplink GB/s</th><th>peak demand GB/s</th>' +
      '<th>peak rate GB/s</th><th>saturated s</th><th>GB moved</th><th>transfers</th></tr></thead><tbody>';
    U.forEach(function (u) {
      h += '<tr data-rack="' + esc(u.rack) + '"' + (u.rack === busy ? ' class="busiest"' : '') + '><td>' + esc(u.rack) +
        '</td><td>' + num(u.gbps, 2) + '</td><td>' + num(u.peak_demand_gbps, 2) + '</td><td>' + num(u.peak_rate_gbps, 2) +
        '</td><td>' + num(u.saturated_s, 0) + '</td><td>' + num(u.moved_gb, 0) + '</td><td>' + num(u.transfers, 0) +
        '</td></tr>';
    });
    tb.innerHTML = h + '</tbody></table>';
  }

  function powerSection(pol) {
    var P = (S.policies[pol] || {}).power, box = $('chart-power'), tb = $('power-table');
    if (!P || !P.series || !P.series.domains || !P.series.domains.length) {
      box.style.display = 'none'; box.innerHTML = ''; tb.innerHTML = '';
      return;
    }
    box.style.display = '';
    var se = P.series, doms = se.domains, n = doms[0].max_w.length, t = [];
    for (var i = 0; i < n; i++) t.push(i * se.step_s);
    var ptl = { t: t, step: se.step_s, raw_step: se.step_s, n_raw: n, factor: 1, cols: {} };
    var lines = doms.map(function (d, k) {
      var ref = d.budget_w > 0 ? d.budget_w : d.nameplate_w;
      return { name: 'domain ' + k + (d.budget_w > 0 ? ' (budget ' + num(d.budget_w / 1000, 1) + ' kW)' : ' (no budget)'),
        color: POWER_COLORS[k % POWER_COLORS.length], axis: 1, unit: '%', digits: 1, width: 1.3,
        v: d.max_w.map(function (w) { return ok(w) && ref > 0 ? 100 * w / ref : null; }) };
    });
    lines.push({ name: 'budget (100%)', color: '#c92a2a', dash: '6,3', axis: 1, unit: '%', width: 1.6,
      v: t.map(function () { return 100; }) });
    expected['chart-power'] = 1;
    var en = P.energy_kwh || {};
    drawn['chart-power'] = timeChart('chart-power', { tl: ptl, height: 260,
      title: 'Power by domain against its budget (highest planned draw per ' + dur(se.step_s) + ')',
      stacks: [], lines: lines, yLabel: P.budgeted ? '% of budget' : '% of nameplate',
      note: 'Energy ' + num(en.total, 0) + ' kWh (serving ' + num(en.serving, 0) + ', training ' + num(en.training, 0) +
        ', idle ' + num(en.idle, 0) + '); ' + num(P.energy_per_request_j, 1) + ' J per served request, ' +
        num(P.energy_per_useful_training_gpu_hour_kwh, 3) + ' kWh per training GPU-hour. Budget breaches: ' +
        num(P.breaches) + '; caps set ' + num(P.caps) + ', starts held ' + num(P.starts_held) + ', jobs stopped for power ' +
        num(P.stops) + '.' });
    if (!P.capped_jobs) { tb.innerHTML = P.budgeted ? '<p class="note">No training was capped.</p>' : ''; return; }
    var h = '<p class="note">' + num(P.capped_jobs) + ' jobs ran under a power cap for ' + num(P.capped_gpu_hours, 0) +
      ' GPU-hours in all; the caps cost ' + num(P.cap_delay_h, 1) + ' h of full-width progress and changed energy by ' +
      num(P.cap_energy_kwh, 1) + ' kWh (negative: saved) against the same progress uncapped. The most capped:</p>' +
      '<table><thead><tr><th>job</th><th>priority</th><th>GPUs</th><th>capped h</th><th>delay h</th><th>energy kWh</th></tr></thead><tbody>';
    (P.jobs || []).slice(0, 20).forEach(function (j) {
      h += '<tr><td>' + esc(j.job) + '</td><td>P' + j.priority + '</td><td>' + num(j.gpus) + '</td><td>' + num(j.capped_h, 1) +
        '</td><td>' + num(j.delay_h, 2) + '</td><td>' + num(j.energy_kwh, 1) + '</td></tr>';
    });
    tb.innerHTML = h + '</tbody></table>';
  }

  function dayControls() {
    var box = $('day-controls'), v = curView(), cur = -1;
    for (var d = 0; d < DAYS; d++) if (state.view && v[0] === d * 86400 && v[1] === Math.min(HORIZON, (d + 1) * 86400)) cur = d;
    var h = 'Time window: <select id="day-select"><option value="-1">all ' + DAYS + ' day' + (DAYS > 1 ? 's' : '') + '</option>';
    for (d = 0; d < DAYS; d++) h += '<option value="' + d + '"' + (d === cur ? ' selected' : '') + '>day ' + (d + 1) + '</option>';
    if (state.view && cur < 0) h += '<option value="-2" selected>' + esc(clock(v[0]) + ' \u2013 ' + clock(v[1])) + '</option>';
    h += '</select> <button id="day-prev" title="previous day">\u25c0 day</button><button id="day-next" title="next day">day \u25b6</button>' +
      '<button id="zoom-in">zoom in</button><button id="zoom-out">zoom out</button><button id="zoom-reset">all</button>' +
      '<span class="hint">or drag across a chart to zoom, double-click to reset</span>';
    box.innerHTML = h;
    $('day-select').addEventListener('change', function () {
      var k = +this.value;
      if (k >= 0) setView([k * 86400, Math.min(HORIZON, (k + 1) * 86400)]);
      else if (k === -1) setView(null);
    });
    var shift = function (dir) {
      var w = curView(), d0 = Math.floor(w[0] / 86400) + dir;
      if (!state.view) d0 = dir > 0 ? 0 : DAYS - 1;
      d0 = Math.max(0, Math.min(DAYS - 1, d0));
      setView([d0 * 86400, Math.min(HORIZON, (d0 + 1) * 86400)]);
    };
    $('day-prev').addEventListener('click', function () { shift(-1); });
    $('day-next').addEventListener('click', function () { shift(1); });
    $('zoom-in').addEventListener('click', function () {
      var w = curView(), c = (w[0] + w[1]) / 2, h2 = (w[1] - w[0]) / 4;
      setView([c - h2, c + h2]);
    });
    $('zoom-out').addEventListener('click', function () {
      var w = curView(), c = (w[0] + w[1]) / 2, h2 = (w[1] - w[0]);
      var f = fullView();
      if (h2 * 2 >= f[1] - f[0]) setView(null); else setView([Math.max(f[0], c - h2), Math.min(f[1], c + h2)]);
    });
    $('zoom-reset').addEventListener('click', function () { setView(null); });
  }

  function report() {
    var e = 0, n = 0, missing = [];
    Object.keys(expected).forEach(function (k) { e++; if (drawn[k]) n++; else missing.push(k); });
    var b = document.body;
    b.setAttribute('data-charts-expected', String(e));
    b.setAttribute('data-charts-drawn', String(n));
    b.setAttribute('data-charts-missing', missing.join(' '));
    b.setAttribute('data-errors', String((window.__errors || []).length));
    b.setAttribute('data-policy', state.policy || '');
  }

  function meta() {
    var m = $('meta');
    m.innerHTML = esc(D.dir) + ' \u2014 ' + num(S.cluster_gpus) + ' GPUs, ' + dur(S.horizon_s) + ', ' +
      POL.length + ' polic' + (POL.length === 1 ? 'y' : 'ies') + ', seed ' + esc(S.seed);
    var notes = $('notes-body');
    notes.innerHTML = '<ul><li>GPU columns of timeline.csv are interval averages; demand, ready capacity and queues are ' +
      'instantaneous at the start of each interval. SLO-miss bands and the burst-window figures use every timeline row; ' +
      'the drawn series are downsampled to at most 2000 points per policy.</li>' +
      '<li>summary.json figures (SLO attainment, JCT, P99s) are exact; figures marked \u2248 are read off the timeline.</li>' +
      '<li>Extra timeline columns in this run: ' + ((D.extra_columns || []).length ? esc(D.extra_columns.join(', ')) : 'none') +
      '. Fault rows in events.csv: ' + POL.map(function (p) { return esc(p) + ' ' + num(get(D.faults, p + '.total') || 0); }).join(', ') +
      '.</li><li>Event rows per kind: ' + POL.map(function (p) {
        var k = D.kinds[p] || {};
        return '<b>' + esc(p) + '</b> ' + Object.keys(k).map(function (x) { return esc(x) + ' ' + num(k[x]); }).join(', ');
      }).join('; ') + '.</li></ul>';
  }

  function tabsInit() {
    var box = $('policy-tabs');
    box.innerHTML = 'Policy: ' + POL.map(function (p) {
      return '<button role="tab" data-policy="' + esc(p) + '">' + esc(p) + '</button>';
    }).join('');
    box.addEventListener('click', function (e) {
      var p = e.target && e.target.getAttribute && e.target.getAttribute('data-policy');
      if (p) { state.policy = p; renderPolicy(); }
    });
  }

  function renderAll() {
    meta();
    expected['chart-pareto'] = 1;
    drawn['chart-pareto'] = pareto('chart-pareto');
    var sw = $('sweep');
    if (D.sweep && D.sweep.rows && D.sweep.rows.length) {
      sw.className = '';
      expected['chart-sweep'] = 1;
      drawn['chart-sweep'] = sweepChart('chart-sweep');
      sweepTable();
    } else {
      sw.className = 'off';
    }
    renderPolicy();
  }

  function selftest() {
    var bad = [], runs = 0;
    POL.forEach(function (p) {
      state.policy = p;
      [null, [86400, Math.min(HORIZON, 2 * 86400)]].forEach(function (v) {
        state.view = v && v[1] > v[0] ? v : null;
        renderPolicy();
        runs++;
        Object.keys(expected).forEach(function (k) { if (!drawn[k]) bad.push(p + ':' + k); });
      });
      var P = teamsOf(p);
      (P ? P.teams : []).forEach(function (t) {
        state.team = t.name;
        renderTeams();
        runs++;
        Object.keys(expected).forEach(function (k) { if (!drawn[k]) bad.push(p + ':' + t.name + ':' + k); });
      });
      state.team = null;
    });
    Object.keys(METRICS).forEach(function (k) {
      state.metric = k;
      if (!pareto('chart-pareto')) bad.push('pareto:' + k);
    });
    state.metric = 'useful';
    pareto('chart-pareto');
    state.policy = POL.indexOf('elastic') >= 0 ? 'elastic' : POL[0];
    state.view = null;
    renderPolicy();
    document.body.setAttribute('data-selftest', (bad.length ? 'fail ' + bad.join(',') : 'ok') + ' renders=' + runs);
  }

  state.policy = POL.indexOf('elastic') >= 0 ? 'elastic' : POL[0];
  /* #policy=NAME&day=N opens that policy and day (links, screenshots) */
  var hp = /policy=([^&]+)/.exec(location.hash), hd = /day=(\d+)/.exec(location.hash);
  if (hp && POL.indexOf(decodeURIComponent(hp[1])) >= 0) state.policy = decodeURIComponent(hp[1]);
  if (hd && +hd[1] >= 1 && +hd[1] <= DAYS) state.view = [(+hd[1] - 1) * 86400, Math.min(HORIZON, +hd[1] * 86400)];
  /* #team=NAME opens that team's page; #teams, #signals (alone or with the
   * above, e.g. #teams&policy=preempt&team=research) scroll to that section */
  var ht = /team=([^&]+)/.exec(location.hash);
  if (ht) state.team = decodeURIComponent(ht[1]);
  /* #only=teams,signals shows just those sections (screenshots: headless
   * Chromium captures the top of the page whatever the fragment) */
  var ho = /only=([a-z,-]+)/.exec(location.hash);
  if (ho) {
    var keep = ho[1].split(','), secs = document.querySelectorAll('main > section');
    for (var si = 0; si < secs.length; si++) if (keep.indexOf(secs[si].id) < 0) secs[si].style.display = 'none';
  }
  tabsInit();
  teamsInit();
  renderAll();
  if (location.hash === '#selftest') selftest();
  var hs = /^#(teams|signals|per-policy|compare|sweep|notes)(&|$)/.exec(location.hash);
  if (hs && $(hs[1])) $(hs[1]).scrollIntoView();
  var rt = null;
  window.addEventListener('resize', function () {
    clearTimeout(rt);
    rt = setTimeout(function () { renderAll(); }, 150);
  });
})();
