// headlab viewer. Inlined into the page; reads its data from <script> elements of the same page and makes no
// request to any host. Attention maps are stored per head (deflate, 8-bit, sqrt or linear scale), decoded on click.
(function () {
  'use strict';
  const meta = JSON.parse(document.getElementById('hl-meta').textContent);
  const L = meta.n_layers, H = meta.n_heads;
  const state = { metric: strongest(), ck: meta.steps.length - 1, sample: 0, layer: null, head: null,
                  query: null };
  const decoded = new Map();  // "ck-s-l-h" -> Uint8Array (T*T, row-major, quantized)
  const $ = (id) => document.getElementById(id);
  // every value that came from data (tokens, labels, names) goes through esc before it reaches markup
  const esc = (t) => String(t).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  const tip = $('tip');

  // ---- colours ---------------------------------------------------------------------------------------------
  const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142], [31, 158, 137],
                   [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];
  function viridis(t) {
    if (!Number.isFinite(t)) return 'rgb(221,221,221)';
    t = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
    const i = Math.min(VIRIDIS.length - 2, Math.floor(t)), f = t - i, a = VIRIDIS[i], b = VIRIDIS[i + 1];
    return `rgb(${a.map((v, k) => Math.round(v + f * (b[k] - v))).join(',')})`;
  }
  function isShare(metric) {  // every value in [0, 1]: an attention mass or share, drawn on 0-1 by default
    for (const sc of meta.scores) for (const row of (sc[metric] || [])) for (const v of row) {
      if (Number.isFinite(v) && (v < 0 || v > 1)) return false;
    }
    return true;
  }
  function strongest() {  // the page opens on the share with the highest score at the last checkpoint: where the
    // signal is (a grid of 0.03 masses on a 0-1 scale looks empty), not on whichever metric comes first
    let best = meta.metrics[0] || null, top = -Infinity;
    const last = meta.scores[meta.steps.length - 1] || {};
    for (const m of meta.metrics) {
      if (!isShare(m)) continue;
      for (const row of (last[m] || [])) for (const v of row) if (Number.isFinite(v) && v > top) { top = v; best = m; }
    }
    return best;
  }
  function range(metric) {  // one colour scale over all checkpoints, so the slider replay is comparable
    if (state.fixed) return [0, 1];
    let lo = Infinity, hi = -Infinity;
    for (const sc of meta.scores) for (const row of (sc[metric] || [])) for (const v of row) {
      if (Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    }
    if (!Number.isFinite(lo)) return [0, 1];
    return hi > lo ? [lo, hi] : [lo, lo + 1e-9];
  }
  const named = (m) => (meta.about && meta.about[m] ? `${m}: ${meta.about[m]},` : m);  // the detector's own words
  const clip = (t) => (t.length > 12 ? t.slice(0, 11) + '…' : t);  // a cut label says it is cut
  const fmt = (v) => (v === null || v === undefined || !Number.isFinite(v)) ? 'n/a' : (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(3));
  const score = (ck, m, l, h) => { const a = meta.scores[ck] && meta.scores[ck][m]; return a ? a[l][h] : NaN; };

  // ---- head grid ---------------------------------------------------------------------------------------------
  function buildGrid() {
    const g = $('grid');
    const wide = !!meta.labels;
    g.style.gridTemplateColumns = `34px repeat(${H}, ${wide ? 58 : 26}px)`;
    g.appendChild(Object.assign(document.createElement('div'), { className: 'collab', textContent: 'L\\H' }));
    for (let h = 0; h < H; h++) g.appendChild(Object.assign(document.createElement('div'), { className: 'collab', textContent: h }));
    for (let l = 0; l < L; l++) {
      g.appendChild(Object.assign(document.createElement('div'), { className: 'rowlab', textContent: l }));
      for (let h = 0; h < H; h++) {
        const c = document.createElement('div');
        c.className = 'cell' + (wide ? ' wide' : '') + (meta.sdh && meta.sdh[l][h] ? ' sdh' : '');
        c.id = `cell-${l}-${h}`;
        c.dataset.layer = l; c.dataset.head = h;
        if (meta.labels && meta.labels[l][h] !== '-') c.textContent = meta.labels[l][h];
        c.addEventListener('mousemove', (e) => showTip(e, l, h));
        c.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
        c.addEventListener('click', () => selectHead(l, h));
        g.appendChild(c);
      }
    }
  }
  function paintGrid() {
    const [lo, hi] = range(state.metric);
    for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
      const c = $(`cell-${l}-${h}`), v = score(state.ck, state.metric, l, h);
      c.style.background = viridis((v - lo) / (hi - lo));
      c.style.color = (v - lo) / (hi - lo) > 0.6 ? '#000' : '#fff';
      c.dataset.value = Number.isFinite(v) ? v.toFixed(6) : 'nan';
      c.classList.toggle('sel', l === state.layer && h === state.head);
    }
    $('scale').textContent = state.fixed ? `${named(state.metric)} on a fixed 0–1 scale`
      : `${named(state.metric)} stretched over its range ${fmt(lo)} … ${fmt(hi)}`;
    $('cblo').textContent = fmt(lo); $('cbhi').textContent = fmt(hi);
    $('cbar').style.background = `linear-gradient(to right, ${VIRIDIS.map((_, i) => viridis(i / (VIRIDIS.length - 1))).join(', ')})`;
  }
  function showTip(e, l, h) {
    const lines = [`head ${l}.${h}` + (meta.sdh && meta.sdh[l][h] ? '  (slash-dominance head)' : '')];
    if (meta.labels) lines.push(`label: ${meta.labels[l][h]}`);
    // a score no head has here (the token mass of texts without '/') is left out, not listed as n/a for every head
    const defined = (m) => ((meta.scores[state.ck] || {})[m] || []).some((row) => row.some(Number.isFinite));
    for (const m of meta.metrics) if (defined(m)) lines.push(`${m}: ${fmt(score(state.ck, m, l, h))}`);
    if (meta.steps.length > 1) lines.push(`step ${meta.steps[state.ck]}`);
    tip.textContent = lines.join('\n');
    tip.style.display = 'block';
    tip.style.left = (e.clientX + 14) + 'px';
    tip.style.top = (e.clientY + 10) + 'px';
  }

  // ---- attention maps ------------------------------------------------------------------------------------------
  function mapCheckpoint(ck) {  // the nearest checkpoint at or before ck that stores maps
    let best = meta.map_checkpoints[0];
    for (const c of meta.map_checkpoints) if (c <= ck) best = c;
    return best;
  }
  async function loadMap(ck, s, l, h) {
    const key = `${ck}-${s}-${l}-${h}`;
    if (decoded.has(key)) return decoded.get(key);
    const el = document.getElementById(`m-${key}`);
    if (!el) return null;
    const bin = atob(el.textContent.trim());
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'));
    const raw = new Uint8Array(await new Response(stream).arrayBuffer());
    const T = meta.samples[s].tokens.length;
    let full = raw;
    if (meta.causal) {  // lower triangle, row by row
      full = new Uint8Array(T * T);
      let k = 0;
      for (let i = 0; i < T; i++) { full.set(raw.subarray(k, k + i + 1), i * T); k += i + 1; }
    }
    decoded.set(key, full);
    return full;
  }
  const LINEAR = meta.scale === 'linear';
  const prob = (q) => LINEAR ? q / 255 : (q / 255) * (q / 255);

  async function drawMap() {
    const cv = $('map');
    if (state.layer === null) return;
    const s = state.sample, l = state.layer, h = state.head, ck = mapCheckpoint(state.ck);
    const tokens = meta.samples[s].tokens, T = tokens.length, marked = new Set(meta.samples[s].marked);
    const q = await loadMap(ck, s, l, h);
    const ctx = cv.getContext('2d');
    const pad = T <= 64 ? 70 : 12, size = Math.max(240, Math.min(560, T * 9));
    cv.width = pad + size + 4; cv.height = pad + size + 4;
    ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, cv.width, cv.height);
    if (!q) { ctx.fillStyle = '#900'; ctx.fillText('no map stored for this head', 20, 20); return; }
    const off = document.createElement('canvas'); off.width = T; off.height = T;
    const img = off.getContext('2d').createImageData(T, T);
    for (let i = 0; i < T * T; i++) {  // white -> dark blue by sqrt(p)
      const t = LINEAR ? Math.sqrt(q[i] / 255) : q[i] / 255;
      img.data[4 * i] = Math.round(255 - 247 * t); img.data[4 * i + 1] = Math.round(255 - 207 * t);
      img.data[4 * i + 2] = Math.round(255 - 148 * t); img.data[4 * i + 3] = 255;
    }
    off.getContext('2d').putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, pad, pad, size, size);
    const cell = size / T;
    ctx.fillStyle = '#e65100';
    for (const m of marked) {  // '/' ticks on both axes
      ctx.fillRect(pad - 6, pad + m * cell, 5, Math.max(1, cell));
      ctx.fillRect(pad + m * cell, pad - 6, Math.max(1, cell), 5);
    }
    if (T <= 64) {
      ctx.font = '9px monospace'; ctx.textBaseline = 'middle';
      for (let i = 0; i < T; i++) {
        ctx.fillStyle = marked.has(i) ? '#e65100' : '#333';
        const t = tokens[i].length > 9 ? tokens[i].slice(0, 8) + '…' : tokens[i];  // cut visibly; the tip has it whole
        ctx.textAlign = 'right'; ctx.fillText(t, pad - 8, pad + (i + 0.5) * cell);
        ctx.save(); ctx.translate(pad + (i + 0.5) * cell, pad - 8); ctx.rotate(-Math.PI / 2);
        ctx.textAlign = 'left'; ctx.fillText(t, 0, 0); ctx.restore();
      }
    }
    if (state.query !== null && state.query < T) {
      ctx.strokeStyle = '#e65100'; ctx.lineWidth = 1;
      ctx.strokeRect(pad, pad + state.query * cell, size, Math.max(1, cell));
    }
    cv.dataset.head = `${l}.${h}`; cv.dataset.checkpoint = ck; cv.dataset.sample = s;
    cv._geom = { pad, size, T, q };
    $('maptitle').textContent = `head ${l}.${h}` + (meta.steps.length > 1 ? ` at step ${meta.steps[ck]}` : '') +
      ` — ${meta.samples[s].name} (${T} tokens; rows = queries, columns = keys` +
      (marked.size ? `; orange = ${meta.marked_label})` : ')');  // no legend for what the text does not hold
    drawTokens(q, tokens, marked);
    drawTrajectory();
  }
  function mapCell(e) {
    const cv = $('map'), g = cv._geom; if (!g) return null;
    const r = cv.getBoundingClientRect(), sx = cv.width / r.width, sy = cv.height / r.height;
    const x = (e.clientX - r.left) * sx - g.pad, y = (e.clientY - r.top) * sy - g.pad;
    if (x < 0 || y < 0 || x >= g.size || y >= g.size) return null;
    return [Math.floor(y / g.size * g.T), Math.floor(x / g.size * g.T)];
  }

  // ---- token view: lines from each query to the keys it attends to -------------------------------------------------
  function drawTokens(q, tokens, marked) {
    const box = $('tokens'), T = tokens.length;
    box.innerHTML = '';
    const NS = 'http://www.w3.org/2000/svg';
    const bytesOf = (k, j) => ((meta.samples[k].bytes || [])[j] ? 'bytes ' + meta.samples[k].bytes[j] : '');
    if (T <= 48) {
      const rowH = 15, w = 330, svg = document.createElementNS(NS, 'svg');
      svg.setAttribute('width', w); svg.setAttribute('height', T * rowH + 10);
      let html = '';
      for (let i = 0; i < T; i++) {
        if (state.query !== null && i !== state.query) continue;
        for (let j = 0; j < T; j++) {
          const p = prob(q[i * T + j]);
          if (p < 0.04) continue;
          html += `<line x1="95" y1="${i * rowH + 10}" x2="235" y2="${j * rowH + 10}" stroke="#1565c0" ` +
                  `stroke-opacity="${Math.min(1, 0.25 + p)}" stroke-width="${(0.5 + 5 * p).toFixed(2)}"/>`;
        }
      }
      for (let i = 0; i < T; i++) {
        const cls = marked.has(i) ? 'slash' : '';
        html += `<text x="90" y="${i * rowH + 13}" text-anchor="end" class="${cls}" data-q="${i}" style="cursor:pointer">${esc(clip(tokens[i]))}</text>`;
        html += `<text x="240" y="${i * rowH + 13}" class="${cls}">${esc(clip(tokens[i]))}</text>`;
      }
      svg.innerHTML = html;
      svg.addEventListener('click', (e) => {
        const qi = e.target.getAttribute && e.target.getAttribute('data-q');
        if (qi !== null && qi !== undefined) { state.query = state.query === +qi ? null : +qi; drawMap(); }
      });
      box.appendChild(svg);
      box.insertAdjacentHTML('beforeend', '<div class="muted">queries (left) → keys (right); click a query to isolate it</div>');
    } else {
      const i = state.query !== null ? state.query : T - 1;
      const row = Array.from({ length: T }, (_, j) => [prob(q[i * T + j]), j]).sort((a, b) => b[0] - a[0]).slice(0, 12);
      let html = `<div>query ${i} <b class="${marked.has(i) ? 'slash' : ''}">${esc(tokens[i])}</b> attends to (click the map to pick a query):</div>`;
      for (const [p, j] of row) {
        html += `<div><span style="display:inline-block;width:${Math.round(200 * p) + 1}px;height:9px;background:#1565c0"></span> ` +
                `${p.toFixed(3)} key ${j} <span class="${marked.has(j) ? 'slash' : ''}" title="${esc(bytesOf(state.sample, j))}">${esc(tokens[j])}</span></div>`;
      }
      box.innerHTML = html;
    }
  }

  // ---- trajectory over checkpoints, with the tracker's phase bands ----------------------------------------------------
  const PHASE_COLOURS = { rising: '#c8e6c9', stable: '#bbdefb', falling: '#ffcdd2', flat: '#eeeeee' };
  function drawTrajectory() {
    const box = $('trajectory');
    if (meta.steps.length < 2 || state.layer === null) { box.innerHTML = ''; return; }
    const l = state.layer, h = state.head, m = state.metric, steps = meta.steps;
    const W = 380, Hh = 150, p = 34, xs = steps.map((s) => Math.log10(Math.max(1, s)));
    const x0 = Math.min(...xs), x1 = Math.max(...xs) || 1;
    const ys = steps.map((_, k) => score(k, m, l, h)), fin = ys.filter(Number.isFinite);
    const y0 = Math.min(0, ...fin), y1 = Math.max(1e-9, ...fin);
    const X = (s) => p + (Math.log10(Math.max(1, s)) - x0) / ((x1 - x0) || 1) * (W - p - 8);
    const Y = (v) => Hh - 22 - (v - y0) / ((y1 - y0) || 1) * (Hh - 32);
    let svg = `<svg width="${W}" height="${Hh}">`;
    const ph = meta.phases && meta.phases[m] && meta.phases[m][`${l}.${h}`];
    for (const b of (ph || [])) {
      svg += `<rect x="${X(b.start)}" y="8" width="${Math.max(1, X(b.end) - X(b.start))}" height="${Hh - 30}" fill="${PHASE_COLOURS[b.label] || '#eee'}"><title>${esc(b.label)} ${esc(b.start)}-${esc(b.end)}</title></rect>`;
    }
    const pts = steps.map((s, k) => Number.isFinite(ys[k]) ? `${X(s).toFixed(1)},${Y(ys[k]).toFixed(1)}` : null).filter(Boolean);
    svg += `<polyline fill="none" stroke="#263238" stroke-width="1.5" points="${pts.join(' ')}"/>`;
    svg += `<line x1="${X(steps[state.ck])}" x2="${X(steps[state.ck])}" y1="8" y2="${Hh - 22}" stroke="#e65100"/>`;
    svg += `<text x="${p}" y="${Hh - 6}" font-size="10">step ${steps[0]}</text><text x="${W - 8}" y="${Hh - 6}" font-size="10" text-anchor="end">${steps[steps.length - 1]} (log scale)</text>`;
    svg += `<text x="2" y="12" font-size="10">${fmt(y1)}</text><text x="2" y="${Hh - 24}" font-size="10">${fmt(y0)}</text></svg>`;
    box.innerHTML = `<div>${esc(m)} of head ${l}.${h} over training` + (ph ? ' (bands: rising / stable / falling / flat phases)' : '') + `</div>` + svg;
  }

  function bestHead() {  // open on the top head of the first metric (or the first labelled head)
    let best = null, bv = -Infinity;
    for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
      const v = meta.labels ? (meta.labels[l][h] !== '-' ? 1 : 0) : score(state.ck, state.metric, l, h);
      if (Number.isFinite(v) && v > bv) { bv = v; best = [l, h]; }
    }
    return best;
  }

  // ---- wiring ---------------------------------------------------------------------------------------------------
  function selectHead(l, h) {
    state.layer = l; state.head = h; state.query = null;
    paintGrid();
    drawMap().catch((err) => { $('status').textContent = 'could not draw the map: ' + err; });
  }
  function init() {
    $('title').textContent = meta.title;
    $('subtitle').textContent = meta.subtitle || '';
    const ms = $('metric');
    for (const m of meta.metrics) ms.appendChild(Object.assign(document.createElement('option'), { value: m, textContent: m, title: (meta.about || {})[m] || m }));
    ms.value = state.metric;
    const fixed = $('fixed');
    const pickScale = () => { state.fixed = isShare(state.metric); fixed.checked = state.fixed; };
    pickScale();
    fixed.addEventListener('change', () => { state.fixed = fixed.checked; paintGrid(); });
    ms.addEventListener('change', () => { state.metric = ms.value; pickScale(); paintGrid(); drawTrajectory(); });
    const ss = $('sample');
    meta.samples.forEach((s, k) => ss.appendChild(Object.assign(document.createElement('option'), { value: k, textContent: s.name })));
    ss.addEventListener('change', () => { state.sample = +ss.value; state.query = null; drawMap(); });
    const sl = $('checkpoint');
    if (meta.steps.length > 1) {
      sl.max = meta.steps.length - 1; sl.value = state.ck;
      const show = () => { $('steplabel').textContent = `step ${meta.steps[state.ck]}`; };
      sl.addEventListener('input', () => { state.ck = +sl.value; show(); paintGrid(); drawMap(); });
      show();
    } else {
      $('ckbox').style.display = 'none';
    }
    const cv = $('map');
    cv.addEventListener('mousemove', (e) => {
      const ij = mapCell(e); if (!ij) { $('readout').textContent = ''; return; }
      const [i, j] = ij, g = cv._geom, toks = meta.samples[state.sample].tokens;
      const by = meta.samples[state.sample].bytes || [], hex = (k) => (by[k] ? ` [bytes ${by[k]}]` : '');
      $('readout').textContent = `query ${i} ${JSON.stringify(toks[i])}${hex(i)} → key ${j} ${JSON.stringify(toks[j])}${hex(j)}: ${prob(g.q[i * g.T + j]).toFixed(4)}`;
    });
    cv.addEventListener('click', (e) => { const ij = mapCell(e); if (ij) { state.query = ij[0]; drawMap(); } });
    buildGrid();
    paintGrid();
    if (meta.circuit && meta.circuit.length) {
      let html = '<table class="circuit"><tr><th>head</th><th>layer</th><th>label (reader→key)</th><th>mass</th></tr>';
      for (const c of meta.circuit) html += `<tr><td>${esc(c.head)}</td><td>${esc(c.layer)}</td><td>${esc(c.label)}</td><td>${Number(c.mass).toFixed(3)}</td></tr>`;
      $('circuit').innerHTML = html + '</table>';
    } else {
      $('circuitbox').style.display = 'none';
    }
    $('notes').textContent = (meta.notes || []).join(' ');
    if (!meta.sdh) $('sdhlegend').style.display = 'none';
    const best = bestHead();
    if (best) selectHead(best[0], best[1]);
    document.body.dataset.ready = '1';
  }
  init();
})();
