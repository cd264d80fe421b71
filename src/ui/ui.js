/* tide live dashboard (docs/ui.md): served by `tide serve` at /ui/ from the
 * binary, nothing loaded from elsewhere. Snapshots come from the API
 * (/v1/cluster, /v1/nodes, /v1/services, /v1/leases, /v1/jobs, /v1/usage)
 * with the token kept in sessionStorage; the event stream (/v1/stream, read
 * with fetch so that it can carry the token) feeds the events list and
 * triggers a refresh; when it drops, the page reconnects with Last-Event-ID
 * and catches up without a reload. Charts come from chart.js (shared with the
 * simulation report). State for tests on <body>: data-conn (connecting, live,
 * reconnecting, unauthorized), data-refreshes, data-connects, data-errors. */
(function () {
  'use strict';

  var TOKEN_KEY = 'tide-token';
  var HIST_MAX = 720;          /* samples kept per service (a replay keeps its timeline) */
  var EVENTS_MAX = 500;
  var AHEAD_S = 3600;          /* the forecast drawn ahead of now */
  var body = document.body;
  var S = {
    cluster: null, nodes: [], services: [], leases: [], queued: [], running: [], usage: null,
    fetchedAt: 0, hist: {}, lastId: null, view: null, events: [], refreshes: 0, connects: 0,
    svc: null, job: null,
    replay: null, at: 0        /* `tide ui DIR`: the run's bounds and the time shown */
  };

  var C = TideChart.make({
    horizon: function () { return engineNow() + AHEAD_S; },
    view: function () { return S.view || histView(); },
    setView: function (v) { S.view = v; renderServices(); }
  });
  var $ = C.$, esc = C.esc, num = C.num, dur = C.dur, clock = C.clock;

  var STATES = [
    ['serving', 'serving', '#2f9e44'], ['warming', 'warming', '#a9e34b'],
    ['lent', 'training on a lease', '#1c7ed6'], ['reclaiming', 'checkpointing for a reclaim', '#f59f00'],
    ['training', 'dedicated training', '#5f3dc4'], ['idle', 'idle', '#dee2e6'], ['down', 'down', '#c92a2a']];
  var OWNER_COLORS = ['#e64980', '#15aabf', '#fab005', '#7950f2', '#40c057', '#fd7e14', '#228be6',
    '#be4bdb', '#82c91e', '#f03e3e'];

  function ownerColor(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return OWNER_COLORS[h % OWNER_COLORS.length];
  }
  function engineNow() {
    if (!S.cluster) return 0;
    if (S.replay) return S.cluster.now_s;
    return S.cluster.now_s + (Date.now() - S.fetchedAt) / 1000 * (S.cluster.speed || 1);
  }
  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }
  function setConn(s) {
    body.setAttribute('data-conn', s);
    $('conn').textContent = s;
  }

  /* ------------------------------------------------------------ the API */

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }
  function headers() {
    var h = {};
    if (token()) h.Authorization = 'Bearer ' + token();
    return h;
  }
  function Unauthorized() {}
  async function api(path) {
    if (S.replay) path += (path.indexOf('?') < 0 ? '?' : '&') + 'at=' + S.at;
    var r = await fetch(path, { headers: headers(), cache: 'no-store' });
    if (r.status === 401) throw new Unauthorized();
    if (!r.ok) throw new Error(path + ': HTTP ' + r.status);
    return r.json();
  }
  function showLogin(on) {
    $('login').hidden = !on;
    $('logout').hidden = on || !token();
    if (on) setConn('unauthorized');
  }

  var refreshing = false, again = false, timer = null;
  function schedule() {
    if (timer) return;
    timer = setTimeout(function () { timer = null; refresh(); }, 250);
  }
  async function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    try {
      var r = await Promise.all([api('/v1/cluster'), api('/v1/nodes'), api('/v1/services'),
        api('/v1/leases?active=1'), api('/v1/jobs?state=queued&limit=1000'),
        api('/v1/jobs?state=running&limit=1000'), api('/v1/jobs?state=reclaiming&limit=1000'),
        api('/v1/usage?by=team')]);
      S.cluster = r[0]; S.fetchedAt = Date.now();
      S.nodes = r[1].nodes; S.services = r[2].services; S.leases = r[3].leases;
      S.queued = r[4].jobs; S.running = r[5].jobs.concat(r[6].jobs); S.usage = r[7];
      if (S.replay) {
        S.events = (await api('/v1/events?limit=300')).events;
        renderEvents();
      } else sample();
      showLogin(false);
      renderAll();
      S.refreshes++;
      body.setAttribute('data-refreshes', String(S.refreshes));
    } catch (e) {
      if (e instanceof Unauthorized) showLogin(true);
      /* else: the daemon is away; the stream's reconnection refreshes again */
    }
    refreshing = false;
    if (again) { again = false; schedule(); }
  }

  /* ------------------------------------------------------ service history */

  function hist(name) {
    if (!S.hist[name]) S.hist[name] = [];
    return S.hist[name];
  }
  function push(name, p) {
    var h = hist(name);
    while (h.length && h[h.length - 1].t > p.t) h.pop(); /* a restart went back in time */
    if (h.length && h[h.length - 1].t === p.t) h[h.length - 1] = p; else h.push(p);
    if (h.length > HIST_MAX) h.splice(0, h.length - HIST_MAX);
  }
  function sample() {
    var t = S.cluster.now_s;
    S.services.forEach(function (s) {
      push(s.name, { t: t, demand: s.demand_rps, ready: s.ready_rps,
        warming: s.warming * s.replica_rps, peak: s.forecast_peak_rps,
        peakm: s.forecast_peak_margin_rps });
    });
  }
  function histView() {
    var h = hist(S.svc || ''), now = engineNow();
    if (S.replay) return [Math.max(S.replay.start_s, now - 6 * 3600), Math.min(S.replay.end_s, now + 2 * 3600)];
    var t0 = h.length ? h[0].t : now - 3600;
    return [Math.max(0, Math.min(t0, now - 600)), now + AHEAD_S];
  }

  /* ------------------------------------------------------------- views */

  function renderAll() {
    renderCluster();
    renderLeases();
    renderServices();
    renderQueue();
    renderGantt();
    renderTeams();
    if (S.job) renderJob();
    var c = S.cluster;
    $('now').textContent = clock(c.now_s) + ' \u00b7 ' + c.policy + ' \u00b7 ' + c.backend +
      (S.replay ? '' : ' \u00b7 ' + num(c.speed, 0) + '\u00d7') +
      (c.mode === 'shadow' ? ' \u00b7 SHADOW: enacts nothing (tide shadow)' : '');
  }

  function legend() {
    $('gpu-legend').innerHTML = STATES.map(function (s) {
      return '<span class="item"><i style="background:' + s[2] + '"></i>' + esc(s[1]) + '</span>';
    }).join('') + '<span class="item"><i style="background:#495057;box-shadow:inset 0 0 0 3px #495057;' +
      'border-radius:50%"></i>white dot: Tier A reserve</span>' +
      '<span class="item">top edge: owner (team or service)</span>';
  }

  function gpuCell(n, g) {
    var owner = g.team ? 'team ' + g.team : g.service ? 'service ' + g.service : '';
    var tip = 'GPU ' + g.gpu + ' \u00b7 node ' + (n.name || n.node) + ' \u00b7 ' + g.state +
      (owner ? ' \u00b7 ' + owner : '') + (g.owner ? ' \u00b7 ' + g.owner : '') +
      (g.latest_return_s != null ? ' \u00b7 returns by ' + clock(g.latest_return_s) : '');
    var job = g.owner && g.owner.indexOf('job:') === 0 ? g.owner.slice(4) : '';
    return '<div class="gpu' + (g.tier_a ? ' tier-a' : '') + '" data-gpu="' + g.gpu +
      '" data-node="' + n.node + '" data-state="' + g.state + '"' +
      (job ? ' data-job="' + esc(job) + '"' : '') +
      (owner ? ' style="border-top-color:' + ownerColor(g.team || g.service) + '"' : '') +
      ' title="' + esc(tip) + '"></div>';
  }

  function renderCluster() {
    var racks = {}, order = [], counts = {};
    S.nodes.forEach(function (n) {
      if (!racks[n.domain]) { racks[n.domain] = []; order.push(n.domain); }
      racks[n.domain].push(n);
      n.gpus.forEach(function (g) { counts[g.state] = (counts[g.state] || 0) + 1; });
    });
    var h = '';
    order.forEach(function (d) {
      h += '<div class="rack" data-rack="' + d + '"><div class="rl">domain ' + d + '</div>';
      racks[d].forEach(function (n) {
        h += '<div class="node' + (n.up ? '' : ' down') + '" data-node="' + n.node + '" title="' +
          esc((n.name || 'node ' + n.node) + ' \u00b7 ' + n.type) + '">';
        n.gpus.forEach(function (g) { h += gpuCell(n, g); });
        h += '</div>';
      });
      h += '</div>';
    });
    $('gpu-map').innerHTML = h;
    $('cluster-sum').textContent = STATES.filter(function (s) { return counts[s[0]]; })
      .map(function (s) { return counts[s[0]] + ' ' + s[0]; }).join(', ');
  }

  function renderLeases() {
    var box = $('lease-countdown');
    if (!S.leases.length) { box.innerHTML = '<div class="empty">no active lease</div>'; return; }
    box.innerHTML = S.leases.map(function (l) {
      var who = l.job ? '<a class="job" href="#job=' + encodeURIComponent(l.job) + '">' + esc(l.job) +
        '</a>' : 'team ' + esc(l.team || '?');
      return '<div class="lease' + (l.noticed ? ' noticed' : '') + '" data-lease="' + l.id +
        '" data-until="' + (l.latest_return_s == null ? '' : l.latest_return_s) + '">' + who +
        ' \u00b7 ' + l.gpus + ' GPUs \u00b7 ' + (l.noticed ? 'reclaim notice, back by ' :
        'returns by ') + '<span class="cd"></span></div>';
    }).join('');
    tickLeases();
  }
  function tickLeases() {
    var now = engineNow(), speed = S.cluster ? S.cluster.speed || 1 : 1;
    var els = document.querySelectorAll('#lease-countdown .lease');
    for (var i = 0; i < els.length; i++) {
      var u = els[i].getAttribute('data-until'), cd = els[i].querySelector('.cd');
      if (u === '') { cd.textContent = 'no deadline'; continue; }
      var left = Math.max(0, +u - now);
      cd.textContent = clock(+u) + ' (in ' + dur(left) + (speed !== 1 ? ', ' + dur(left / speed) +
        ' of wall time' : '') + ')';
    }
  }

  function renderServices() {
    var box = $('service-chart');
    if (!S.services.length) { box.innerHTML = '<div class="empty">no service</div>'; return; }
    if (!S.svc || !S.services.some(function (s) { return s.name === S.svc; })) S.svc = S.services[0].name;
    var h = hist(S.svc), now = engineNow(), last = h[h.length - 1] || {};
    var pts = S.replay ? (h.length ? h : [{ t: now }]) :
      h.concat([{ t: Math.max(now, (last.t || 0) + 1), peak: last.peak, peakm: last.peakm },
        { t: now + AHEAD_S, peak: last.peak, peakm: last.peakm }]);
    var tl = { t: pts.map(function (p) { return p.t; }), step: 60 };
    var col = function (k) { return pts.map(function (p) { return p[k]; }); };
    C.timeChart('service-chart', {
      title: 'Service ' + S.svc + ': demand, ready capacity, forecast (drawn ahead of now)',
      tl: tl, unit: 'req/s',
      stacks: [{ name: 'ready capacity', color: 'rgba(47,158,68,.35)', v: col('ready') },
        { name: 'warming capacity', color: 'rgba(169,227,75,.5)', v: col('warming') }],
      lines: [{ name: 'demand', color: '#212529', v: col('demand'), width: 2, unit: 'req/s' },
        { name: 'forecast peak', color: '#1c7ed6', v: col('peak'), dash: '5,3', unit: 'req/s' },
        { name: 'forecast peak with margin', color: '#e8590c', v: col('peakm'), dash: '2,2',
          unit: 'req/s' }],
      marks: S.events.filter(function (e) {
        return e.kind === 'ckpt_notice' || e.kind === 'lease_return';
      }).slice(0, 50).map(function (e) {
        return { t: e.time_s, label: e.kind + (e.job ? ' ' + e.job : ''), color: '#e8590c' };
      }).concat(S.replay ? [{ t: now, label: 'replay time', color: '#7048e8' }] : []),
      markName: 'reclaim notices and returns', yLabel: 'requests / s', height: 260
    });
    var rows = '<tr><th>service</th><th>demand</th><th>ready</th><th>warming</th><th>ready req/s</th>' +
      '<th>margin</th><th>forecast peak</th><th>with margin</th></tr>';
    S.services.forEach(function (s) {
      rows += '<tr data-service="' + esc(s.name) + '"><td><a href="#services" data-svc="' + esc(s.name) +
        '">' + esc(s.name) + '</a></td><td class="n">' + num(s.demand_rps, 1) + '</td><td class="n">' +
        s.ready + '</td><td class="n">' + s.warming + '</td><td class="n">' + num(s.ready_rps, 0) +
        '</td><td class="n">' + num(100 * s.margin, 0) + '%</td><td class="n">' +
        num(s.forecast_peak_rps, 1) + '</td><td class="n">' + num(s.forecast_peak_margin_rps, 1) + '</td></tr>';
    });
    $('service-table').innerHTML = rows;
  }

  function idleGpus() {
    var n = 0;
    S.nodes.forEach(function (nd) { nd.gpus.forEach(function (g) { if (g.state === 'idle') n++; }); });
    return n;
  }
  var WHY = {
    Ready: 'fits the idle GPUs: starts at the next scheduling step',
    Resources: 'head of its priority: waits for GPUs',
    Priority: 'jobs ahead of it come first',
    Reservation: 'fits now, but would delay the head job\'s reservation',
    Quota: 'its team is at its quota and borrow limit',
    Draining: 'GPUs are being emptied for it (preemption under way)',
    GangTooLarge: 'the healthy nodes cannot hold its gangs'
  };
  function queueOrder() {
    return S.queued.slice().sort(function (a, b) {
      if (a.position != null && b.position != null) return a.position - b.position;
      return a.priority - b.priority || a.submitted_s - b.submitted_s;
    });
  }
  /* why pending: the engine's reason (reason, expected_start_s, position of
   * /v1/jobs); from GPUs needed and idle for a daemon without them */
  function renderQueue() {
    var q = queueOrder();
    var idle = idleGpus(), now = S.cluster.now_s;
    var h = '<thead><tr><th>#</th><th>job</th><th>team</th><th>priority</th><th>GPUs</th><th>waiting</th>' +
      '<th>reason</th><th>expected start</th><th>why pending</th></tr></thead><tbody>';
    q.forEach(function (j, i) {
      var reason = j.reason || (j.gpus > idle ? 'Resources' : 'Ready');
      var why = (j.preemptions ? 'requeued after a reclaim; ' : '') + (WHY[reason] || reason) +
        (reason === 'Resources' || reason === 'Priority' ? ' (needs ' + j.gpus + ' GPUs, ' + idle + ' idle)' : '');
      var es = j.expected_start_s;
      h += '<tr data-job="' + esc(j.id) + '" data-reason="' + esc(reason) + '"><td class="n">' +
        (j.position != null ? j.position : i + 1) + '</td><td><a class="job" href="#job=' +
        encodeURIComponent(j.id) + '">' + esc(j.id) + '</a></td><td>' + esc(j.team) + '</td><td>P' +
        j.priority + '</td><td class="n">' + j.gpus + '</td><td class="n">' +
        dur(Math.max(0, now - j.submitted_s)) + '</td><td class="reason">' + esc(reason) + '</td><td>' +
        (es != null ? esc(clock(es) + ' (in ' + dur(Math.max(0, es - now)) + ')') : '\u2013') +
        '</td><td class="why">' + esc(why) + '</td></tr>';
    });
    $('queue-table').innerHTML = h + '</tbody>';
    $('queue-sum').textContent = q.length + ' queued (in the scheduler\'s order), ' +
      S.running.length + ' running';
  }

  /* Gantt: running gangs from their start to their expected end, queued jobs
   * with an expected start (the EASY reservation; in a replay, when the run
   * started them) drawn hatched from then for their duration. */
  function expectedEnd(j, now) {
    if (j.expected_end_s != null) return j.expected_end_s;
    var w = j.width || j.dp_max || 1;
    return now + Math.max(0, (j.duration_s - (j.progress_s || 0)) * (j.dp_max || 1) / w);
  }
  function renderGantt() {
    var now = engineNow(), rows = [];
    S.running.forEach(function (j) {
      var st = j.run_started_s != null ? j.run_started_s : j.started_s != null ? j.started_s : now;
      rows.push({ j: j, a: st, b: expectedEnd(j, now),
        cls: j.state === 'reclaiming' ? 'reclaiming' : j.lease != null ? 'lent' : 'running' });
    });
    queueOrder().forEach(function (j) {
      if (j.expected_start_s != null)
        rows.push({ j: j, a: j.expected_start_s, b: j.expected_start_s + j.duration_s, cls: 'reserved' });
    });
    var box = $('gantt-chart');
    if (!rows.length) { box.innerHTML = '<div class="empty">nothing running or reserved</div>'; return; }
    rows.sort(function (x, y) { return x.a - y.a; });
    var t0 = now - 2 * 3600, t1 = now + 12 * 3600;
    var x = function (t) { return (100 * (Math.min(t1, Math.max(t0, t)) - t0) / (t1 - t0)).toFixed(2) + '%'; };
    var h = '<div class="row axis"><div class="lane">';
    for (var t = Math.ceil(t0 / 7200) * 7200; t <= t1; t += 7200)
      h += '<span style="left:' + x(t) + '">' + esc(clock(t)) + '</span>';
    h += '</div></div>';
    rows.slice(0, 120).forEach(function (r) {
      var j = r.j, a = Math.max(r.a, t0), b = Math.max(a, Math.min(r.b, t1));
      h += '<div class="row" data-job="' + esc(j.id) + '" data-kind="' + r.cls + '"><span class="lbl">' +
        esc(j.id + ' \u00b7 ' + (j.held_gpus || j.width * j.gang_gpus || j.gpus) + ' GPUs') +
        '</span><div class="lane"><div class="bar ' + r.cls + '" style="left:' + x(a) + ';width:calc(' +
        x(b) + ' - ' + x(a) + ')" title="' + esc(j.id + ' ' + r.cls + ' ' + clock(r.a) + ' \u2192 ' + clock(r.b)) +
        '"></div></div></div>';
    });
    h += '<div class="now" style="left:calc(155px + (100% - 155px) * ' + ((now - t0) / (t1 - t0)).toFixed(4) +
      ')"></div>';
    box.innerHTML = h;
  }

  /* Teams: the engine's team state (/v1/cluster teams: quota, used,
   * borrowed, fair-share usage, preemptions, lost GPU-hours) with GPUs on
   * leases from the map and jobs from the queue. */
  function renderTeams() {
    var T = {};
    function t(name) {
      if (!T[name]) T[name] = { gpus: 0, lent: 0, running: 0, queued: 0, pre: 0, lost: 0, hours: 0, info: null };
      return T[name];
    }
    S.nodes.forEach(function (n) {
      n.gpus.forEach(function (g) {
        if (!g.team) return;
        t(g.team).gpus++;
        if (g.state === 'lent' || g.state === 'reclaiming') t(g.team).lent++;
      });
    });
    S.running.forEach(function (j) { var x = t(j.team); x.running++; x.pre += j.preemptions; x.lost += j.lost_gpu_s; });
    S.queued.forEach(function (j) { var x = t(j.team); x.queued++; x.pre += j.preemptions; x.lost += j.lost_gpu_s; });
    ((S.usage && S.usage.rows) || []).forEach(function (r) { if (r.team) t(r.team).hours += r.gpu_hours; });
    var teams = (S.cluster && S.cluster.teams) || [];
    var borrowed = 0;
    teams.forEach(function (i) { t(i.team).info = i; borrowed += i.borrowed_gpus || 0; });
    var h = '<tr><th>team</th><th>quota</th><th>GPUs now</th><th>borrowed (beyond quota)</th>' +
      '<th>lent (unused quota others use)</th><th>on leases (inference GPUs)</th><th>fair-share usage (GPU-h)</th>' +
      '<th>running</th><th>queued</th><th>GPU-hours so far</th><th>preemptions</th><th>lost GPU-hours</th></tr>';
    Object.keys(T).sort().forEach(function (k) {
      var x = T[k], i = x.info || {};
      var unused = i.quota_gpus != null ? Math.max(0, i.quota_gpus - (i.used_gpus || 0)) : 0;
      var lent = Math.min(unused, borrowed);
      h += '<tr data-team="' + esc(k) + '"><td>' + esc(k) + '</td><td class="n">' +
        (i.quota_gpus != null ? i.quota_gpus : '\u2013') + '</td><td class="n">' + x.gpus + '</td><td class="n">' +
        (i.borrowed_gpus || 0) + '</td><td class="n">' + lent + '</td><td class="n">' + x.lent +
        '</td><td class="n">' + num((i.usage_gpu_s || 0) / 3600, 1) + '</td><td class="n">' + x.running +
        '</td><td class="n">' + x.queued + '</td><td class="n">' +
        num(i.gpu_hours != null ? i.gpu_hours : x.hours, 1) + '</td><td class="n">' +
        (i.preemptions != null ? i.preemptions : x.pre) + '</td><td class="n">' +
        num(i.lost_gpu_hours != null ? i.lost_gpu_hours : x.lost / 3600, 2) + '</td></tr>';
    });
    $('teams-table').innerHTML = h;
  }

  /* ------------------------------------------------------------ job page */

  async function renderJob() {
    var id = S.job;
    $('job').hidden = false;
    $('job-id').textContent = id;
    try {
      var j = await api('/v1/jobs/' + encodeURIComponent(id));
      if (S.job !== id) return;
      var keys = ['team', 'state', 'priority', 'gpus', 'width', 'phase', 'progress_s', 'committed_s',
        'duration_s', 'submitted_s', 'started_s', 'preemptions', 'lost_gpu_s', 'lease'];
      var h = '<table class="grid"><tr>' + keys.map(function (k) { return '<th>' + k + '</th>'; }).join('') +
        '</tr><tr>' + keys.map(function (k) {
          var v = j[k];
          return '<td>' + esc(v === null || v === undefined ? '\u2013' : typeof v === 'number' ? num(v, 0) : v) + '</td>';
        }).join('') + '</tr></table>';
      var ev = S.events.filter(function (e) { return e.job === id; });
      h += '<h3>Events (' + ev.length + ' seen by this page)</h3><ol>' + ev.map(function (e) {
        return '<li>' + esc(clock(e.time_s) + ' ' + e.kind + (e.width != null ? ' width ' + e.width : '') +
          (e.gpus != null ? ' ' + e.gpus + ' GPUs' : '') + (e.reason ? ' (' + e.reason + ')' : '')) + '</li>';
      }).join('') + '</ol>';
      $('job-body').innerHTML = h;
    } catch (e) {
      $('job-body').innerHTML = '<div class="empty">' + esc(e instanceof Unauthorized ? 'unauthorized' :
        'cannot read the job (not yours, or unknown)') + '</div>';
    }
  }
  function route() {
    var m = /job=([^&]+)/.exec(location.hash);
    S.job = m ? decodeURIComponent(m[1]) : null;
    if (S.job) { renderJob(); $('job').scrollIntoView(); } else $('job').hidden = true;
  }

  /* -------------------------------------------------------------- events */

  function evText(e) {
    return clock(e.time_s) + ' ' + e.kind + (e.job ? ' job ' + e.job : e.team ? ' team ' + e.team : '') +
      (e.service ? ' ' + e.service : '') + (e.gpus != null ? ' ' + e.gpus + ' GPUs' : '') +
      (e.width != null ? ' width ' + e.width : '') + (e.value != null ? ' = ' + num(e.value, 1) : '') +
      (e.reason ? ' (' + e.reason + ')' : '') + (e.source ? ' [' + e.source + ']' : '');
  }
  function evLi(e) {
    return '<li class="' + e.type + '" data-seq="' + e.seq + '" data-kind="' + esc(e.kind) + '">' +
      esc(evText(e)) + '</li>';
  }
  function renderEvents() {
    var f = $('ev-filter').value.trim().toLowerCase();
    $('events-feed').innerHTML = S.events.filter(function (e) {
      return !f || evText(e).toLowerCase().indexOf(f) >= 0;
    }).slice(0, 200).map(evLi).join('');
  }
  var evTimer = null;
  function addEvent(e) {
    S.events.unshift(e);
    if (S.events.length > EVENTS_MAX) S.events.length = EVENTS_MAX;
    if (e.kind === 'demand' && e.service && e.value != null) {
      var h = hist(e.service), prev = h.length ? h[h.length - 1] : {};
      if (!h.length || e.time_s > prev.t)
        push(e.service, { t: e.time_s, demand: e.value, ready: prev.ready, warming: prev.warming,
          peak: prev.peak, peakm: prev.peakm });
    }
    if (!evTimer) evTimer = setTimeout(function () { evTimer = null; renderEvents(); }, 200);
  }

  /* -------------------------------------------------------------- stream */

  function onBlock(block) {
    var id = null, ev = 'message', data = [];
    block.split('\n').forEach(function (l) {
      if (!l || l.charAt(0) === ':') return;
      var k = l.indexOf(':'), f = k < 0 ? l : l.slice(0, k), v = k < 0 ? '' : l.slice(k + 1);
      if (v.charAt(0) === ' ') v = v.slice(1);
      if (f === 'id') id = v; else if (f === 'event') ev = v; else if (f === 'data') data.push(v);
    });
    if (ev === 'hello') {
      S.connects++;
      body.setAttribute('data-connects', String(S.connects));
      setConn('live');
      schedule();
      return;
    }
    if (!data.length) return;
    if (id !== null) S.lastId = id;
    try { addEvent(JSON.parse(data.join('\n'))); } catch (e) { /* not JSON: ignore */ }
    schedule();
  }
  async function stream() {
    for (;;) {
      try {
        var h = headers();
        if (S.lastId !== null) h['Last-Event-ID'] = S.lastId;
        var r = await fetch('/v1/stream' + (S.lastId === null ? '?backlog=300' : ''),
          { headers: h, cache: 'no-store' });
        if (r.status === 401 || r.status === 403) {
          showLogin(true);
          await new Promise(function (res) { S.relogin = res; });
          continue;
        }
        if (r.ok && r.body) {
          var rd = r.body.getReader(), dec = new TextDecoder(), buf = '';
          for (;;) {
            var x = await rd.read();
            if (x.done) break;
            buf += dec.decode(x.value, { stream: true }).replace(/\r\n?/g, '\n');
            var k;
            while ((k = buf.indexOf('\n\n')) >= 0) { onBlock(buf.slice(0, k)); buf = buf.slice(k + 2); }
          }
        }
      } catch (e) { /* the daemon went away: reconnect below */ }
      setConn('reconnecting');
      await sleep(1000);
    }
  }

  /* ---------------------------------------------------------------- init */

  var ht = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (ht) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(ht[1]));
    history.replaceState(null, '', location.pathname);
  }
  $('login').addEventListener('submit', function (e) {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
    $('token').value = '';
    showLogin(false);
    setConn('connecting');
    if (S.relogin) { var f = S.relogin; S.relogin = null; f(); }
    refresh();
  });
  $('logout').addEventListener('click', function () {
    sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  });
  $('ev-filter').addEventListener('input', renderEvents);
  $('service-table').addEventListener('click', function (e) {
    var s = e.target.getAttribute && e.target.getAttribute('data-svc');
    if (s) { S.svc = s; S.view = null; renderServices(); }
  });
  $('gpu-map').addEventListener('click', function (e) {
    var j = e.target.getAttribute && e.target.getAttribute('data-job');
    if (j) location.hash = 'job=' + encodeURIComponent(j);
  });
  $('job-close').addEventListener('click', function (e) { e.preventDefault(); location.hash = ''; });
  window.addEventListener('hashchange', route);
  var rt = null;
  window.addEventListener('resize', function () {
    clearTimeout(rt);
    rt = setTimeout(function () { if (S.cluster) renderServices(); }, 150);
  });
  /* `tide ui DIR` (a replay, docs/ui.md): /v1/cluster says so; the same
   * views at the time of the slider (#t=SECONDS), no stream. */
  function hashTime() {
    var m = /(?:^#|&)t=(\d+)/.exec(location.hash);
    return m ? +m[1] : null;
  }
  async function startReplay(c) {
    var R = S.replay = c.replay, sl = $('replay-slider');
    S.at = hashTime() != null ? Math.min(R.end_s, Math.max(R.start_s, hashTime())) :
      Math.round((R.start_s + R.end_s) / 2);
    body.setAttribute('data-mode', 'replay');
    setConn('replay');
    $('replay').hidden = false;
    sl.min = R.start_s; sl.max = R.end_s; sl.step = 1;
    sl.value = S.at;
    var label = function () {
      $('replay-label').textContent = 'replay of ' + R.policy + ' at ' + clock(S.at) + ' (' + dur(S.at) + ' of ' +
        dur(R.end_s) + ')';
    };
    label();
    var tl = await api('/v1/replay/timeline');
    var h = hist('all services');
    tl.t.forEach(function (t, i) { h.push({ t: t, demand: tl.demand[i], ready: tl.ready[i] }); });
    var st = null;
    sl.addEventListener('input', function () {
      S.at = +sl.value;
      label();
      clearTimeout(st);
      st = setTimeout(function () { refresh(); }, 120);
    });
    window.addEventListener('hashchange', function () {
      var t = hashTime();
      if (t != null && t !== S.at) { S.at = t; sl.value = t; label(); refresh(); }
    });
    refresh();
  }
  async function start() {
    legend();
    route();
    var c = null;
    try { c = await api('/v1/cluster'); } catch (e) { /* live: the stream retries */ }
    if (c && c.replay) { HIST_MAX = 1e6; startReplay(c); return; }
    refresh();
    stream();
    setInterval(tickLeases, 500);
    setInterval(function () { if (S.cluster) renderServices(); }, 5000);
  }
  start();
})();
