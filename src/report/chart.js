/* tide charts: the formatting helpers, scales, axes and the time chart
 * (stacks, lines, bands, marks; hover read-out, drag to zoom, double-click
 * to reset) shared by the simulation report (report.js) and the live
 * dashboard (src/ui/ui.js). Hand-written SVG markup strings, no libraries.
 *   var C = TideChart.make({horizon: fn -> seconds (the full time axis; the
 *     view starts at 0 unless view() says otherwise), view: fn -> [t0, t1] or
 *     null (null = the full axis), setView: fn(v) (zoom; null = reset)});
 *   C.timeChart(id, c) draws into the element with that id; C.esc, C.num, ... */
var TideChart = (function () {
  'use strict';

  function make(H) {
    function esc(s) {
      return String(s).replace(/[&<>"']/g, function (c) {
        return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
      });
    }
    function ok(v) { return typeof v === 'number' && isFinite(v); }
    function group(s) { return s.replace(/\B(?=(\d{3})+(?!\d))/g, ','); }
    function num(v, d) {
      if (!ok(v)) return '\u2013';
      var s = v.toFixed(d === undefined ? 0 : d), neg = s.charAt(0) === '-';
      if (neg) s = s.slice(1);
      var p = s.split('.');
      return (neg ? '-' : '') + group(p[0]) + (p.length > 1 ? '.' + p[1] : '');
    }
    function pct(v, d) { return ok(v) ? num(100 * v, d === undefined ? 2 : d) + '%' : '\u2013'; }
    function big(v) {
      if (!ok(v)) return '\u2013';
      var a = Math.abs(v);
      if (a >= 1e9) return num(v / 1e9, 2) + ' G';
      if (a >= 1e6) return num(v / 1e6, 2) + ' M';
      if (a >= 1e4) return num(v / 1e3, 1) + ' k';
      return num(v, a < 10 && v !== Math.round(v) ? 2 : 0);
    }
    function dur(s) {
      if (!ok(s)) return '\u2013';
      var a = Math.abs(s);
      if (a < 120) return num(s, 0) + ' s';
      if (a < 7200) return num(s / 60, 1) + ' min';
      if (a < 172800) return num(s / 3600, 1) + ' h';
      return num(s / 86400, 1) + ' d';
    }
    function pad2(x) { return (x < 10 ? '0' : '') + x; }
    function clock(t) {
      if (!ok(t)) return '\u2013';
      var d = Math.floor(t / 86400), r = t - d * 86400;
      var h = Math.floor(r / 3600), m = Math.floor((r - h * 3600) / 60);
      return 'day ' + (d + 1) + ' ' + pad2(h) + ':' + pad2(m);
    }
    function r1(x) { return Math.round(x * 10) / 10; }
    function $(id) { return document.getElementById(id); }
    function get(o, path) {
      var p = path.split('.');
      for (var i = 0; i < p.length; i++) {
        if (o === null || typeof o !== 'object') return undefined;
        o = o[p[i]];
      }
      return o;
    }

    /* ---------------------------------------------------------------- scales */

    function niceStep(span, n) {
      if (!(span > 0)) span = 1;
      var raw = span / n, p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10)), m = raw / p;
      return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
    }
    /* Ticks covering [lo, hi]: {lo, hi, ticks}. */
    function niceRange(lo, hi, n) {
      if (!ok(lo) || !ok(hi)) { lo = 0; hi = 1; }
      if (hi - lo < 1e-12) { hi = lo + (Math.abs(lo) > 0 ? Math.abs(lo) * 0.01 : 1); }
      var st = niceStep(hi - lo, n), a = Math.floor(lo / st + 1e-9) * st,
          b = Math.ceil(hi / st - 1e-9) * st, t = [];
      for (var x = a; x <= b + st * 1e-6; x += st) t.push(Math.abs(x) < st * 1e-9 ? 0 : x);
      return { lo: a, hi: b, ticks: t, step: st };
    }
    /* r with its top at exactly hi (ticks above dropped). */
    function clampRange(r, hi) {
      r.ticks = r.ticks.filter(function (t) { return t <= hi + r.step * 1e-6; });
      if (r.ticks[r.ticks.length - 1] < hi - 0.45 * r.step) r.ticks.push(hi);
      r.hi = hi;
      return r;
    }
    function tickText(v, st) {
      var d = 0;
      while (d < 6 && Math.abs(st * Math.pow(10, d) - Math.round(st * Math.pow(10, d))) > 1e-6) d++;
      return num(v, d);
    }
    var TSTEPS = [300, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
    function timeTicks(t0, t1, px) {
      var max = Math.max(2, Math.floor(px / 80)), st = TSTEPS[TSTEPS.length - 1];
      for (var i = 0; i < TSTEPS.length; i++)
        if ((t1 - t0) / TSTEPS[i] <= max) { st = TSTEPS[i]; break; }
      var out = [];
      for (var t = Math.ceil(t0 / st) * st; t <= t1 + 1e-6; t += st) out.push(t);
      return { ticks: out, step: st };
    }
    function timeLabel(t, st) {
      var d = Math.floor(t / 86400) + 1, r = t - (d - 1) * 86400;
      if (st >= 86400) return 'day ' + d;
      var hh = pad2(Math.floor(r / 3600)) + ':' + pad2(Math.floor((r % 3600) / 60));
      return r === 0 ? 'day ' + d : hh;
    }

    /* ---------------------------------------------------------- chart frame */

    function boxWidth(box) { return Math.max(480, Math.floor(box.clientWidth - 22)); }
    function legendHtml(items) {
      var h = '<div class="legend">';
      items.forEach(function (it) {
        var cls = it.kind === 'line' ? 'line' : it.kind === 'dash' ? 'dash' :
          it.kind === 'band' ? 'band' : '';
        var st = it.kind === 'dash' ? 'border-top-color:' + it.color : 'background:' + it.color;
        h += '<span class="item"><i class="' + cls + '" style="' + st + '"></i>' + esc(it.name) +
          '</span>';
      });
      return h + '</div>';
    }
    function frame(box, title, legend, svg, note) {
      box.innerHTML = '<h3>' + esc(title) + '</h3>' + (legend ? legendHtml(legend) : '') + svg +
        (note ? '<div class="note">' + note + '</div>' : '');
    }
    function emptyBox(box, title, msg) {
      box.innerHTML = '<h3>' + esc(title) + '</h3><div class="empty">' + msg + '</div>';
    }
    function text(x, y, s, anchor, extra) {
      return '<text x="' + r1(x) + '" y="' + r1(y) + '" font-size="11" fill="#444" text-anchor="' +
        (anchor || 'middle') + '"' + (extra || '') + '>' + esc(s) + '</text>';
    }
    function line(x1, y1, x2, y2, stroke, extra) {
      return '<line x1="' + r1(x1) + '" y1="' + r1(y1) + '" x2="' + r1(x2) + '" y2="' + r1(y2) +
        '" stroke="' + stroke + '"' + (extra || '') + '/>';
    }

    var tip = null;
    function showTip(e, html) {
      if (!tip) tip = $('tip');
      tip.innerHTML = html;
      tip.hidden = false;
      var x = e.clientX + 14, y = e.clientY + 14, w = tip.offsetWidth, h = tip.offsetHeight;
      if (x + w > window.innerWidth - 4) x = e.clientX - w - 14;
      if (y + h > window.innerHeight - 4) y = e.clientY - h - 14;
      tip.style.left = x + 'px';
      tip.style.top = y + 'px';
    }
    function hideTip() { if (!tip) tip = $('tip'); tip.hidden = true; }

    /* ------------------------------------------------------------ time view */

    function fullView() { var h = H.horizon(); return [0, h > 0 ? h : 86400]; }
    function curView() { return H.view() || fullView(); }
    function setView(v) {
      if (v) {
        var f = fullView();
        v = [Math.max(f[0], v[0]), Math.min(f[1], v[1])];
        if (v[1] - v[0] < 600) v = null;
      }
      H.setView(v);
    }

    /* index of the last point with t[i] <= x (binary search), -1 if none */
    function floorIdx(t, x) {
      var lo = 0, hi = t.length - 1, ans = -1;
      while (lo <= hi) {
        var mid = (lo + hi) >> 1;
        if (t[mid] <= x) { ans = mid; lo = mid + 1; } else hi = mid - 1;
      }
      return ans;
    }

    /* Interactions shared by time charts: hover read-out, drag to zoom,
     * double-click to reset. g: {m, pw, ph, v, read(t) -> html}. */
    function wire(box, g) {
      var svg = box.querySelector('svg');
      var ov = box.querySelector('rect.ov'), hl = box.querySelector('line.hl'),
          sel = box.querySelector('rect.sel');
      if (!svg || !ov) return;
      var drag = null;
      function tAt(x) { return g.v[0] + (x - g.m.l) / g.pw * (g.v[1] - g.v[0]); }
      function px(e) {
        var r = svg.getBoundingClientRect();
        return Math.max(g.m.l, Math.min(g.m.l + g.pw, e.clientX - r.left));
      }
      ov.addEventListener('mousemove', function (e) {
        var x = px(e);
        if (drag !== null) {
          sel.setAttribute('x', Math.min(drag, x));
          sel.setAttribute('width', Math.abs(x - drag));
          return;
        }
        hl.setAttribute('x1', x); hl.setAttribute('x2', x);
        hl.setAttribute('visibility', 'visible');
        var h = g.read(tAt(x), e);
        if (h) showTip(e, h); else hideTip();
      });
      ov.addEventListener('mouseleave', function () {
        hl.setAttribute('visibility', 'hidden');
        hideTip();
      });
      ov.addEventListener('mousedown', function (e) {
        e.preventDefault();
        drag = px(e);
        sel.setAttribute('x', drag); sel.setAttribute('width', 0);
        sel.setAttribute('visibility', 'visible');
        hideTip();
        var up = function (ev) {
          window.removeEventListener('mouseup', up);
          var x = px(ev), a = Math.min(drag, x), b = Math.max(drag, x);
          drag = null;
          sel.setAttribute('visibility', 'hidden');
          if (b - a > 5) setView([tAt(a), tAt(b)]);
        };
        window.addEventListener('mouseup', up);
      });
      ov.addEventListener('dblclick', function () { setView(null); });
    }

    function interactionLayers(m, pw, ph) {
      return '<line class="hl" x1="0" x2="0" y1="' + m.t + '" y2="' + (m.t + ph) +
        '" stroke="#333" stroke-width="1" visibility="hidden" pointer-events="none"/>' +
        '<rect class="sel" x="0" y="' + m.t + '" width="0" height="' + ph +
        '" fill="rgba(11,99,197,.15)" stroke="#0b63c5" visibility="hidden" pointer-events="none"/>' +
        '<rect class="ov" x="' + m.l + '" y="' + m.t + '" width="' + pw + '" height="' + ph +
        '" fill="transparent" style="cursor:crosshair"/>';
    }

    function xAxis(m, pw, ph, v, X) {
      var tt = timeTicks(v[0], v[1], pw), s = '';
      tt.ticks.forEach(function (t) {
        var x = X(t), day = t % 86400 === 0;
        s += line(x, m.t, x, m.t + ph, day ? '#c8ccd0' : '#eceef0');
        s += line(x, m.t + ph, x, m.t + ph + 4, '#666');
        s += text(x, m.t + ph + 16, timeLabel(t, tt.step), 'middle',
                  day && tt.step < 86400 ? ' font-weight="600"' : '');
      });
      var span = v[1] - v[0];
      var title = 'time since start (' + (tt.step >= 86400 ? 'days' : 'hours; bold = day start') +
        ')' + (span < H.horizon() - 1 ? ' \u2014 ' + clock(v[0]) + ' to ' + clock(v[1]) : '');
      s += text(m.l + pw / 2, m.t + ph + 34, title);
      return s;
    }
    function yAxis(m, pw, ph, yr, Y, label, right) {
      var s = '', x = right ? m.l + pw : m.l;
      yr.ticks.forEach(function (v) {
        var y = Y(v);
        if (!right) s += line(m.l, y, m.l + pw, y, '#eceef0');
        s += text(right ? x + 6 : x - 6, y + 4, tickText(v, yr.step), right ? 'start' : 'end');
      });
      s += line(x, m.t, x, m.t + ph, '#888');
      var cx = right ? m.l + pw + 58 : 16, cy = m.t + ph / 2;
      s += '<text x="' + cx + '" y="' + cy + '" font-size="11" fill="#333" text-anchor="middle" ' +
        'transform="rotate(-90 ' + cx + ' ' + cy + ')">' + esc(label) + '</text>';
      return s;
    }

    /* A time chart. c: {title, tl, stacks: [{name, color, v}], lines: [{name,
     * color, v, axis (1|2), dash, width}], areas: [{name, color, lo, hi, axis,
     * unit}] (filled between lo and hi), yLabel, y2Label, bands: [[t0,t1,..]],
     * bandName, marks: [{t, label, color}], note, height}. Returns 1 when drawn
     * with data. */
    function timeChart(id, c) {
      var box = $(id);
      if (!box) return 0;
      var T = c.tl.t, n = T.length;
      if (!n) { emptyBox(box, c.title, 'no timeline rows for this policy'); return 0; }
      var W = boxWidth(box), H = c.height || 300;
      var has2 = c.lines.some(function (l) { return l.axis === 2; });
      var m = { l: 62, r: has2 ? 74 : 22, t: 10, b: 44 };
      var pw = W - m.l - m.r, ph = H - m.t - m.b, v = curView();
      var X = function (t) { return m.l + (t - v[0]) / (v[1] - v[0]) * pw; };
      var dt = function (i) { return i + 1 < n ? T[i + 1] - T[i] : c.tl.step; };
      var i0 = Math.max(0, floorIdx(T, v[0])), i1 = n - 1;
      while (i1 > i0 && T[i1] >= v[1]) i1--;
      var cum = [], i, k, ymax = 0, y2max = 0, vis = 0;
      for (i = i0; i <= i1; i++) cum.push(0);
      var layers = [];
      c.stacks.forEach(function (s) {
        if (!s.v) return;
        var lo = cum.slice(), hi = [];
        for (i = i0; i <= i1; i++) {
          var x = ok(s.v[i]) ? s.v[i] : 0;
          hi.push(lo[i - i0] + x);
          cum[i - i0] += x;
          if (cum[i - i0] > ymax) ymax = cum[i - i0];
          vis++;
        }
        layers.push({ s: s, lo: lo, hi: hi });
      });
      (c.areas || []).forEach(function (a) {
        if (!a.hi) return;
        for (i = i0; i <= i1; i++) {
          if (!ok(a.hi[i])) continue;
          vis++;
          if (a.axis === 2) { if (a.hi[i] > y2max) y2max = a.hi[i]; } else if (a.hi[i] > ymax) ymax = a.hi[i];
        }
      });
      c.lines.forEach(function (l) {
        if (!l.v) return;
        for (i = i0; i <= i1; i++) {
          if (!ok(l.v[i])) continue;
          vis++;
          if (l.axis === 2) { if (l.v[i] > y2max) y2max = l.v[i]; } else if (l.v[i] > ymax) ymax = l.v[i];
        }
      });
      var head = c.stacks.length ? 1 : 1.06; /* lines-only charts: keep the top line off the frame */
      var yr = niceRange(0, ymax > 0 ? ymax * head : 1, 5);
      if (ok(c.yMax) && c.yMax > 0 && ymax <= c.yMax * 1.02) yr = clampRange(niceRange(0, c.yMax, 5), c.yMax);
      var Y = function (x) { return m.t + ph - (x - yr.lo) / (yr.hi - yr.lo) * ph; };
      var y2r = niceRange(0, y2max > 0 ? y2max * 1.06 : 1, 5);
      var Y2 = function (x) { return m.t + ph - (x - y2r.lo) / (y2r.hi - y2r.lo) * ph; };
      var xa = function (j) { return r1(X(Math.max(T[j], v[0]))); };
      var xb = function (j) { return r1(X(Math.min(T[j] + dt(j), v[1]))); };

      var clip = 'clip-' + id;
      var s = '<svg width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '">' +
        '<defs><clipPath id="' + clip + '"><rect x="' + m.l + '" y="' + m.t + '" width="' + pw +
        '" height="' + ph + '"/></clipPath></defs>';
      s += yAxis(m, pw, ph, yr, Y, c.yLabel, false);
      if (has2) s += yAxis(m, pw, ph, y2r, Y2, c.y2Label, true);
      s += xAxis(m, pw, ph, v, X);
      s += '<g clip-path="url(#' + clip + ')">';
      layers.forEach(function (L) {
        var d = '';
        for (k = 0; k < L.hi.length; k++) {
          var j = i0 + k, yh = r1(Y(L.hi[k]));
          d += (k ? 'L' : 'M') + xa(j) + ',' + yh + 'L' + xb(j) + ',' + yh;
        }
        for (k = L.lo.length - 1; k >= 0; k--) {
          var jj = i0 + k, yl = r1(Y(L.lo[k]));
          d += 'L' + xb(jj) + ',' + yl + 'L' + xa(jj) + ',' + yl;
        }
        s += '<path d="' + d + 'Z" fill="' + L.s.color + '" stroke="none"/>';
      });
      /* areas: a filled band between lo and hi (e.g. a forecast and the
       * forecast with its margin), drawn under the lines */
      (c.areas || []).forEach(function (a) {
        if (!a.hi || !a.lo) return;
        var YY = a.axis === 2 ? Y2 : Y, up = '', down = '';
        for (i = i0; i <= i1; i++) {
          var h = ok(a.hi[i]) ? a.hi[i] : 0, l = ok(a.lo[i]) ? a.lo[i] : 0;
          up += (up ? 'L' : 'M') + xa(i) + ',' + r1(YY(h)) + 'L' + xb(i) + ',' + r1(YY(h));
          down = 'L' + xb(i) + ',' + r1(YY(l)) + 'L' + xa(i) + ',' + r1(YY(l)) + down;
        }
        if (up) s += '<path d="' + up + down + 'Z" fill="' + a.color + '" stroke="none"/>';
      });
      c.lines.forEach(function (l) {
        if (!l.v) return;
        var d = '', pen = false, YY = l.axis === 2 ? Y2 : Y;
        for (i = i0; i <= i1; i++) {
          if (!ok(l.v[i])) { pen = false; continue; }
          var y = r1(YY(l.v[i]));
          d += (pen ? 'L' : 'M') + xa(i) + ',' + y + 'L' + xb(i) + ',' + y;
          pen = true;
        }
        s += '<path d="' + d + '" fill="none" stroke="' + l.color + '" stroke-width="' +
          (l.width || 1.6) + '"' + (l.dash ? ' stroke-dasharray="' + l.dash + '"' : '') + '/>';
      });
      (c.bands || []).forEach(function (b) {
        if (b[1] <= v[0] || b[0] >= v[1]) return;
        var a = X(Math.max(b[0], v[0])), e = X(Math.min(b[1], v[1]));
        s += '<rect x="' + r1(a) + '" y="' + m.t + '" width="' + r1(Math.max(1, e - a)) +
          '" height="' + ph + '" fill="rgba(224,49,49,.30)"/>';
      });
      (c.marks || []).forEach(function (mk) {
        if (mk.t < v[0] || mk.t > v[1]) return;
        var x = X(mk.t);
        s += line(x, m.t, x, m.t + ph, mk.color, ' stroke-dasharray="2,2"');
        s += '<path d="M' + r1(x - 4) + ',' + m.t + 'L' + r1(x + 4) + ',' + m.t + 'L' + r1(x) +
          ',' + (m.t + 7) + 'Z" fill="' + mk.color + '"/>';
      });
      s += '</g>';
      s += '<rect x="' + m.l + '" y="' + m.t + '" width="' + pw + '" height="' + ph +
        '" fill="none" stroke="#888"/>';
      s += interactionLayers(m, pw, ph) + '</svg>';

      var leg = [];
      c.stacks.forEach(function (x) { if (x.v) leg.push({ name: x.name, color: x.color }); });
      (c.areas || []).forEach(function (x) { if (x.hi) leg.push({ name: x.name, color: x.color }); });
      c.lines.forEach(function (x) {
        if (x.v) leg.push({ name: x.name, color: x.color, kind: x.dash ? 'dash' : 'line' });
      });
      if (c.bands && c.bands.length) leg.push({ name: c.bandName || 'SLO miss', color: '', kind: 'band' });
      if (c.marks && c.marks.length) leg.push({ name: c.markName || 'fault', color: c.marks[0].color, kind: 'dash' });
      frame(box, c.title, leg, s, c.note);
      wire(box, {
        m: m, pw: pw, ph: ph, v: v, read: function (t) {
          var j = floorIdx(T, t);
          if (j < 0) return '';
          var h = '<b>' + esc(clock(T[j])) + '</b> (+' + dur(dt(j)) + ')';
          for (var q = c.stacks.length - 1; q >= 0; q--) {
            var st = c.stacks[q];
            if (st.v) h += '<br><span style="color:' + st.color + '">\u25a0</span> ' + esc(st.name) +
              ': ' + num(st.v[j], 1) + ' ' + (c.unit || 'GPUs');
          }
          (c.areas || []).forEach(function (a) {
            if (a.hi) h += '<br><span style="color:' + a.color + '">\u25a0</span> ' + esc(a.name) +
              ': ' + num(a.lo[j], 1) + ' \u2013 ' + num(a.hi[j], 1) + (a.unit ? ' ' + a.unit : '');
          });
          c.lines.forEach(function (l) {
            if (l.v) h += '<br><span style="color:' + l.color + '">\u2014</span> ' + esc(l.name) +
              ': ' + num(l.v[j], l.digits === undefined ? 1 : l.digits) + (l.unit ? ' ' + l.unit : '');
          });
          (c.bands || []).forEach(function (b) {
            if (t >= b[0] && t < b[1]) h += '<br><b style="color:#c92a2a">SLO miss</b> ' +
              clock(b[0]) + ' \u2013 ' + clock(b[1]) + (ok(b[2]) ? ', worst ' + num(b[2], 1) + ' req/s short' : '');
          });
          (c.marks || []).forEach(function (mk) {
            if (Math.abs(mk.t - t) <= (v[1] - v[0]) / pw * 4) h += '<br><b style="color:' +
              mk.color + '">' + esc(mk.label) + '</b>';
          });
          return h;
        }
      });
      return vis > 0 ? 1 : 0;
    }


    return {
      esc: esc,
      ok: ok,
      group: group,
      num: num,
      pct: pct,
      big: big,
      dur: dur,
      pad2: pad2,
      clock: clock,
      r1: r1,
      get: get,
      niceStep: niceStep,
      niceRange: niceRange,
      clampRange: clampRange,
      tickText: tickText,
      timeTicks: timeTicks,
      timeLabel: timeLabel,
      boxWidth: boxWidth,
      legendHtml: legendHtml,
      frame: frame,
      emptyBox: emptyBox,
      text: text,
      line: line,
      showTip: showTip,
      hideTip: hideTip,
      fullView: fullView,
      curView: curView,
      setView: setView,
      floorIdx: floorIdx,
      wire: wire,
      interactionLayers: interactionLayers,
      xAxis: xAxis,
      yAxis: yAxis,
      timeChart: timeChart,
      TSTEPS: TSTEPS,
      $: $
    };
  }

  return { make: make };
})();
