/* Drives Debian's Chromium headless over the DevTools protocol on a pipe
 * (--remote-debugging-pipe: fd 3 to the browser, fd 4 from it; messages end
 * with NUL), no npm package and no WebSocket needed. Used by ui_live.sh.
 *   const b = await launch(chromiumPath, profileDir, width, height);
 *   const page = await b.page(url);  await page.eval('1 + 1');  b.close(); */
'use strict';
const { spawn } = require('child_process');
const zlib = require('zlib');

async function launch(bin, profile, width, height) {
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage', '--hide-scrollbars', '--remote-debugging-pipe',
    '--user-data-dir=' + profile, '--window-size=' + width + ',' + height, 'about:blank'];
  const p = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  let stderr = '';
  p.stderr.on('data', (d) => { stderr += d; if (stderr.length > 20000) stderr = stderr.slice(-10000); });
  const out = p.stdio[3], inp = p.stdio[4];
  let id = 0, buf = Buffer.alloc(0);
  const waiting = new Map(), listeners = [];
  inp.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    let k;
    while ((k = buf.indexOf(0)) >= 0) {
      const msg = JSON.parse(buf.slice(0, k).toString('utf8'));
      buf = buf.slice(k + 1);
      if (msg.id !== undefined && waiting.has(msg.id)) {
        const w = waiting.get(msg.id);
        waiting.delete(msg.id);
        if (msg.error) w.reject(new Error(w.method + ': ' + JSON.stringify(msg.error)));
        else w.resolve(msg.result);
      } else if (msg.method) {
        listeners.forEach((f) => f(msg));
      }
    }
  });
  function send(method, params, sessionId) {
    const m = { id: ++id, method, params: params || {} };
    if (sessionId) m.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      waiting.set(m.id, { resolve, reject, method });
      out.write(JSON.stringify(m) + '\0');
    });
  }
  const exited = new Promise((r) => p.on('exit', r));
  return {
    stderr: () => stderr,
    on: (f) => listeners.push(f),
    send,
    async page(url) {
      const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
      const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
      const s = (m, q) => send(m, q, sessionId);
      await s('Page.enable');
      await s('Runtime.enable');
      await s('Log.enable');
      await s('Network.enable');
      await s('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
      const pg = {
        sessionId,
        send: s,
        async eval(expr) {
          const r = await s('Runtime.evaluate', { expression: expr, returnByValue: true, awaitPromise: true });
          if (r.exceptionDetails) throw new Error('eval ' + expr + ': ' + JSON.stringify(r.exceptionDetails));
          return r.result.value;
        },
        async goto(u) { await s('Page.navigate', { url: u }); },
        async shot(file) {
          const r = await s('Page.captureScreenshot', { format: 'png', captureBeyondViewport: false });
          const png = Buffer.from(r.data, 'base64');
          require('fs').writeFileSync(file, png);
          return png;
        }
      };
      if (url) await pg.goto(url);
      return pg;
    },
    async close() {
      try { await Promise.race([send('Browser.close'), new Promise((r) => setTimeout(r, 3000))]); } catch (e) { /* gone */ }
      p.kill('SIGKILL');
      await exited;
    }
  };
}

/* A PNG (8-bit RGB or RGBA, not interlaced) decoded to {width, height, px(x, y) -> [r, g, b]}. */
function decodePng(buf) {
  let off = 8, w = 0, h = 0, ct = 0;
  const idat = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off), type = buf.toString('latin1', off + 4, off + 8);
    const data = buf.slice(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      w = data.readUInt32BE(0); h = data.readUInt32BE(4);
      if (data[8] !== 8 || data[12] !== 0) throw new Error('png: unsupported depth/interlace');
      ct = data[9];
    } else if (type === 'IDAT') idat.push(data);
    off += 12 + len;
  }
  const bpp = ct === 6 ? 4 : ct === 2 ? 3 : 0;
  if (!bpp) throw new Error('png: colour type ' + ct);
  const raw = zlib.inflateSync(Buffer.concat(idat)), stride = w * bpp, img = Buffer.alloc(h * stride);
  for (let y = 0; y < h; y++) {
    const f = raw[y * (stride + 1)], src = y * (stride + 1) + 1;
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? img[y * stride + x - bpp] : 0, b = y ? img[(y - 1) * stride + x] : 0,
        c = x >= bpp && y ? img[(y - 1) * stride + x - bpp] : 0;
      let v = raw[src + x];
      if (f === 1) v += a; else if (f === 2) v += b; else if (f === 3) v += (a + b) >> 1;
      else if (f === 4) { const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c; }
      img[y * stride + x] = v & 255;
    }
  }
  return { width: w, height: h, px: (x, y) => [0, 1, 2].map((i) => img[y * stride + x * bpp + i]) };
}

module.exports = { launch, decodePng };
