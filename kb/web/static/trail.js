// kb serve — the Trail page: the exploration graph as a top-down card tree (seed explore-tree).
// Data: GET <data-src> (/trail.json?rev=…), polled every 3 s; zoom, pan, selection,
// folds, filter and mode survive a refresh. Research text reaches the DOM only through
// textContent; the only URLs used are the server's (ref_urls), and only same-origin paths.
"use strict";

(function () {
  const root = document.getElementById("trail");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const canvas = $("trail-canvas"), world = $("trail-world"), svg = $("trail-edges");
  const FOLD_ABOVE = 400;  // more nodes than this: start folded below the second level
  const CARD_W = 240, CARD_H = 104, GAP_X = 22, GAP_Y = 46, ROW_MAX = 1500, SVGNS = "http://www.w3.org/2000/svg";
  const state = { data: null, commit: null, mode: "research", sel: null, folded: new Set(),
    kind: null, query: "", hits: [], hit: -1, zoom: 1, tx: 16, ty: 16, userZoomed: false, pos: {} };
  let byId = {};
  let cards = {}, edgeEls = {};
  let dragged = false;  // a drag (pan) ends without selecting what it ends on

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function safeUrl(u) { return typeof u === "string" && u.startsWith("/") && !u.startsWith("//") ? u : null; }

  // -- the tree shown: research (every live node) or trunk (goal -> topic -> leaf roots) --
  function shownParent(n) {
    if (state.mode === "research") return n.parent;
    let p = n.parent;
    for (let i = 0; p && i < 10000; i++) {
      if (inTrunk(byId[p])) return p;
      p = byId[p].parent;
    }
    return null;
  }
  function inTrunk(n) {
    if (!n) return false;
    if (n.kind === "goal" || n.kind === "topic") return true;
    const p = n.parent ? byId[n.parent] : null;
    return state.data.leaf_root_kinds.includes(n.kind) && !!p && p.kind === "topic";
  }
  function visibleNodes() {
    const nodes = state.data.nodes.filter((n) => state.mode === "research" || inTrunk(n));
    const kids = {}, roots = [];
    for (const n of nodes) {
      const p = shownParent(n);
      if (p && byId[p] && (state.mode === "research" || inTrunk(byId[p]))) (kids[p] = kids[p] || []).push(n.id);
      else roots.push(n.id);
    }
    // The kind filter keeps matching nodes and (dimmed) their ancestors.
    let keep = null;
    if (state.kind) {
      keep = new Set();
      for (const n of nodes) {
        if (n.kind !== state.kind) continue;
        for (let id = n.id, i = 0; id && i < 10000; i++) {
          if (keep.has(id)) break;
          keep.add(id);
          id = shownParent(byId[id]);
        }
      }
    }
    return { nodes, kids, roots, keep };
  }
  function subtreeSizes(v) {
    // Post-order without recursion: size[id] = number of descendants (folded ones included).
    const size = {}, order = [], stack = [...v.roots];
    const seen = new Set();
    while (stack.length) {
      const id = stack.pop();
      if (seen.has(id)) continue;
      seen.add(id); order.push(id);
      for (const c of v.kids[id] || []) stack.push(c);
    }
    for (let i = order.length - 1; i >= 0; i--) {
      const id = order[i];
      size[id] = (v.kids[id] || []).reduce((s, c) => s + 1 + (size[c] || 0), 0);
    }
    return size;
  }

  // -- layout: packed rows (children wrap into rows; the parent is centred over its block) --
  function layout(v) {
    const size = {}, rows = {};
    const order = [];
    const stack = v.roots.map((r) => [r, false]);
    while (stack.length) {  // post-order without recursion
      const [id, done] = stack.pop();
      if (v.keep && !v.keep.has(id)) continue;
      if (done) { order.push(id); continue; }
      stack.push([id, true]);
      if (!state.folded.has(id)) for (const c of (v.kids[id] || [])) stack.push([c, false]);
    }
    for (const id of order) {
      const kids = state.folded.has(id) ? [] : (v.kids[id] || []).filter((c) => !v.keep || v.keep.has(c));
      if (!kids.length) { size[id] = [CARD_W, CARD_H]; rows[id] = []; continue; }
      const rs = [];
      let row = [], w = 0, h = 0;
      for (const c of kids) {
        const [cw, ch] = size[c];
        if (row.length && w + GAP_X + cw > ROW_MAX) { rs.push([row, w, h]); row = []; w = 0; h = 0; }
        w += (row.length ? GAP_X : 0) + cw; h = Math.max(h, ch); row.push(c);
      }
      rs.push([row, w, h]);
      rows[id] = rs;
      const bw = Math.max(CARD_W, ...rs.map((r) => r[1]));
      const bh = CARD_H + rs.reduce((s, r) => s + GAP_Y + r[2], 0);
      size[id] = [bw, bh];
    }
    const pos = {};
    let y = 0;
    for (const r of v.roots) {
      if (!size[r]) continue;
      place(r, 0, y);
      y += size[r][1] + GAP_Y * 1.5;
    }
    function place(id, x, y0) {
      const todo = [[id, x, y0]];
      while (todo.length) {
        const [n, bx, by] = todo.pop();
        const [bw] = size[n];
        pos[n] = [bx + (bw - CARD_W) / 2, by];
        let ry = by + CARD_H + GAP_Y;
        for (const [row, rw, rh] of rows[n]) {
          let cx = bx + (bw - rw) / 2;
          for (const c of row) { todo.push([c, cx, ry]); cx += size[c][0] + GAP_X; }
          ry += rh + GAP_Y;
        }
      }
    }
    return pos;
  }

  // -- drawing --
  function draw() {
    if (!state.data) return;
    const v = visibleNodes();
    const pos = layout(v);
    const sizes = subtreeSizes(v);
    state.pos = pos;
    cards = {}; edgeEls = {};
    for (const c of Array.from(world.querySelectorAll(".tcard"))) c.remove();
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    let maxX = 0, maxY = 0;
    const frag = document.createDocumentFragment(), efrag = document.createDocumentFragment();
    for (const id of Object.keys(pos)) {
      const n = byId[id], [x, y] = pos[id];
      maxX = Math.max(maxX, x + CARD_W); maxY = Math.max(maxY, y + CARD_H);
      const card = el("div", "tcard k-" + n.kind + " s-" + n.status);
      card.dataset.id = id;
      cards[id] = card;
      card.style.left = x + "px"; card.style.top = y + "px";
      const head = el("div");
      head.append(el("span", "badge", n.kind), el("span", "tid", id + (n.hits > 1 ? " ×" + n.hits : "")));
      card.append(head, el("div", "ttitle", n.title), el("div", "tsum", n.kind === "topic" && n.digest ? n.digest : n.summary));
      const foot = el("div", "tfoot");
      foot.append(el("span", "", n.status));
      const kids = v.kids[id] || [];
      if (kids.length) {
        foot.append(el("span", "", "subtree " + sizes[id]));
        const b = el("button", "tfold", state.folded.has(id) ? "+" + kids.length : "−");
        b.type = "button"; b.title = state.folded.has(id) ? "unfold" : "fold";
        b.addEventListener("click", (ev) => { ev.stopPropagation(); toggleFold(id); });
        foot.append(b);
      }
      if (n.owner) foot.append(el("span", "", "@" + n.owner));
      card.append(foot);
      card.addEventListener("click", (ev) => { ev.stopPropagation(); if (!dragged) select(id, false); });
      frag.append(card);
      const p = shownParent(n);
      if (p && pos[p]) {
        const [px, py] = pos[p];
        const x1 = px + CARD_W / 2, y1 = py + CARD_H, x2 = x + CARD_W / 2, y2 = y, my = (y1 + y2) / 2;
        const e = document.createElementNS(SVGNS, "path");
        e.setAttribute("d", `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`);
        edgeEls[id] = e;
        efrag.append(e);
      }
    }
    world.append(frag);
    svg.append(efrag);
    svg.setAttribute("width", String(maxX + 40)); svg.setAttribute("height", String(maxY + 40));
    world.style.width = maxX + 40 + "px"; world.style.height = maxY + 40 + "px";
    state.extent = [maxX, maxY];
    state.styled = { sel: new Set(), match: new Set(), hl: new Set() };
    restyle(true);
    apply();
  }
  // Selection, matches, the kind filter's dimming and the highlighted path, without a new
  // layout (a click on a card among 5,000 must not rebuild them).
  function restyle(all) {
    const q = state.query, old = state.styled;
    const path = new Set();
    for (let id = state.sel, i = 0; id && i < 10000; i++) { path.add(id); id = shownParent(byId[id]); }
    const sel = new Set(state.sel && cards[state.sel] ? [state.sel] : []);
    const match = new Set(q ? state.hits.filter((h) => cards[h]) : []);
    const hl = new Set([...path].filter((id) => edgeEls[id] && path.has(shownParent(byId[id]))));
    for (const [name, now, was, map] of [["sel", sel, old.sel, cards], ["match", match, old.match, cards], ["hl", hl, old.hl, edgeEls]]) {
      for (const id of was) if (!now.has(id) && map[id]) map[id].classList.remove(name);
      for (const id of now) if (map[id]) map[id].classList.add(name);
    }
    state.styled = { sel, match, hl };
    if (all) for (const id in cards) cards[id].classList.toggle("dim", !!state.kind && byId[id].kind !== state.kind);
  }
  function apply() {
    world.style.transform = `translate(${state.tx}px, ${state.ty}px) scale(${state.zoom})`;
    $("z-pct").textContent = Math.round(state.zoom * 100) + "%";
  }
  function zoomAt(z, cx, cy) {
    z = Math.min(1.6, Math.max(0.2, z));
    state.tx = cx - (cx - state.tx) * (z / state.zoom);
    state.ty = cy - (cy - state.ty) * (z / state.zoom);
    state.zoom = z; state.userZoomed = true; apply();
  }
  function fit() {
    const w = canvas.clientWidth - 32, ext = state.extent ? state.extent[0] : w;
    state.zoom = Math.min(1, Math.max(0.2, w / Math.max(ext, 1)));
    state.tx = 16; state.ty = 16; apply();
  }
  function centre(id) {
    const p = state.pos[id];
    if (!p) return;
    state.tx = canvas.clientWidth / 2 - (p[0] + CARD_W / 2) * state.zoom;
    state.ty = canvas.clientHeight / 3 - (p[1] + CARD_H / 2) * state.zoom;
    apply();
  }

  // -- interaction --
  function matches(n, q) {
    return [n.title, n.summary, n.digest, (n.tags || []).join(" "), (n.refs || []).join(" "), n.id]
      .join(" ").toLowerCase().includes(q);
  }
  function unfoldTo(id) {
    let changed = false;
    for (let p = shownParent(byId[id]), i = 0; p && i < 10000; i++) {
      changed = state.folded.delete(p) || changed;
      p = shownParent(byId[p]);
    }
    return changed;
  }
  function select(id, jump) {
    if (!byId[id]) return;
    let relayout = false;
    if (state.mode === "trunk" && !inTrunk(byId[id])) { state.mode = "research"; syncMode(); outline(); relayout = true; }
    if (state.kind && byId[id].kind !== state.kind) { state.kind = null; legend(); relayout = true; }
    state.sel = id;
    relayout = unfoldTo(id) || relayout || !cards[id];
    if (relayout) draw(); else restyle(false);
    if (jump) centre(id);
    detail();
  }
  function toggleFold(id) {
    if (state.folded.has(id)) state.folded.delete(id); else state.folded.add(id);
    draw();
  }
  function search(next) {
    const q = $("trail-search").value.trim().toLowerCase();
    if (q !== state.query) {
      state.query = q; state.hit = -1;
      state.hits = q ? state.data.nodes.filter((n) => matches(n, q)).map((n) => n.id) : [];
    }
    if (next && state.hits.length) {
      state.hit = (state.hit + 1) % state.hits.length;
      select(state.hits[state.hit], true);
    } else if (Object.keys(cards).length) restyle(false); else draw();
    $("trail-hits").textContent = !q ? "" : state.hits.length ?
      (state.hit >= 0 ? state.hit + 1 + " / " : "") + state.hits.length + " matches" : "no match";
  }
  function syncMode() {
    for (const b of root.querySelectorAll("[data-mode]")) b.classList.toggle("on", b.dataset.mode === state.mode);
  }
  function legend() {
    const box = $("trail-legend");
    box.replaceChildren();
    const counts = {};
    for (const n of state.data.nodes) counts[n.kind] = (counts[n.kind] || 0) + 1;
    for (const k of state.data.kinds) {
      if (!counts[k]) continue;
      const chip = el("span", "legend-chip k-" + k + (state.kind === k ? " on" : state.kind ? " off" : ""), k + " " + counts[k]);
      chip.dataset.kind = k;
      chip.addEventListener("click", () => { state.kind = state.kind === k ? null : k; legend(); draw(); });
      box.append(chip);
    }
  }
  function outline() {
    const box = $("trail-outline"), rounds = $("trail-rounds");
    box.replaceChildren(); rounds.replaceChildren();
    const v = visibleNodes();
    const sizes = subtreeSizes(v);
    const add = (id, depth, label) => {
      const d = el("div", "o" + depth, label);
      d.dataset.id = id;
      d.addEventListener("click", () => select(id, true));
      box.append(d);
    };
    for (const r of v.roots) {
      const n = byId[r];
      add(r, 0, n.kind + ": " + n.title);
      for (const c of v.kids[r] || []) {
        const k = byId[c];
        if (state.mode === "trunk" ? k.kind === "topic" : k.kind === "step" || k.kind === "topic") {
          const size = sizes[c];
          add(c, 1, k.title + " · " + size);
          if (state.mode === "trunk") for (const g of v.kids[c] || []) add(g, 2, byId[g].kind + ": " + byId[g].title);
          if (k.kind === "step") {
            const chip = el("span", "chip", k.title + " · " + size);
            chip.addEventListener("click", () => select(c, true));
            rounds.append(chip);
          }
        }
      }
    }
  }
  function jumpLink(id) {
    const a = el("span", "jump", id + (byId[id] ? " " + byId[id].title : ""));
    a.addEventListener("click", () => select(id, true));
    return a;
  }
  function section(title, ...children) {
    const s = el("div", "sec");
    s.append(el("b", "", title), ...children);
    return s;
  }
  function detail() {
    const box = $("trail-detail");
    box.replaceChildren();
    const d = state.data, n = state.sel ? byId[state.sel] : null;
    if (n) {
      box.append(el("h3", "", n.title));
      box.append(el("div", "muted", n.kind + " · " + n.status + " · " + n.id + (n.owner ? " · @" + n.owner : "") +
        (n.updated_by ? " · last by " + n.updated_by : "") + (n.updated_at ? " · " + n.updated_at : "")));
      const text = n.kind === "topic" && n.digest ? n.digest + "\n\n" + (n.summary || "") : n.summary || "";
      if (text) {
        const sum = el("div", "summary", text.length > 300 ? text.slice(0, 300) + "…" : text);
        const s = section("Summary", sum);
        if (text.length > 300) {
          const more = el("span", "jump", "expand full text · " + text.length + " chars");
          more.addEventListener("click", () => { sum.textContent = text; more.remove(); });
          s.append(more);
        }
        box.append(s);
      }
      if ((n.tags || []).length) box.append(section("Tags", ...n.tags.map((t) => el("span", "tag", t))));
      if ((n.refs || []).length) {
        const refs = n.refs.map((r) => {
          const url = safeUrl(d.ref_urls[r]);
          if (!url) return el("div", "", r);
          const a = el("a", "ref", r); a.href = url;
          const w = el("div"); w.append(a); return w;
        });
        box.append(section("Refs", ...refs));
      }
      const side = d.edges.filter((e) => e.from === n.id || e.to === n.id);
      if (side.length) box.append(section("Relations", ...side.map((e) => {
        const other = e.from === n.id ? e.to : e.from;
        const w = el("div", "", (e.from === n.id ? e.kind + " → " : "← " + e.kind + " ") );
        w.append(jumpLink(other));
        if (e.note) w.append(el("span", "muted", " (" + e.note + ")"));
        return w;
      })));
      const chain = [];
      for (let p = n.parent, i = 0; p && byId[p] && i < 10000; i++) { chain.unshift(p); p = byId[p].parent; }
      if (chain.length) box.append(section("Path to root", ...chain.map((p) => { const w = el("div"); w.append(jumpLink(p)); return w; })));
      const kids = (n.children || []).filter((c) => byId[c]);
      if (kids.length) box.append(section("Children", ...kids.map((c) => { const w = el("div"); w.append(jumpLink(c)); return w; })));
    } else {
      const st = d.stats;
      box.append(el("h3", "", "Graph"));
      box.append(el("div", "", st.nodes + " nodes, " + d.edges.length + " relations, " + st.operations + " operations"));
      box.append(section("Kinds", ...Object.entries(st.by_kind).map(([k, c]) => el("div", "", k + ": " + c))));
      box.append(section("Status", ...Object.entries(st.by_status).map(([k, c]) => el("div", "", k + ": " + c))));
      box.append(section("Roots", ...d.roots.map((r) => { const w = el("div"); w.append(jumpLink(r)); return w; })));
      if (d.problems) box.append(section("Log problems", el("div", "", d.problems + " entries skipped (kb trail stats)")));
    }
    const fr = el("details", "sec frontier"); fr.open = !n;
    fr.append(el("summary", "", "Frontier · " + d.frontier.suggestions.length + " suggestions, " + d.frontier.avoid.length + " dead ends"));
    for (const s of d.frontier.suggestions) {
      const w = el("div", "sugg", s.action + " (" + s.track + "): ");
      w.append(jumpLink(s.id), el("div", "muted", s.reason));
      fr.append(w);
    }
    if (d.frontier.avoid.length) fr.append(el("b", "", "Avoid (dead ends)"));
    for (const a of d.frontier.avoid) {
      const w = el("div", "avoid"); w.append(jumpLink(a.id));
      if (a.reason) w.append(el("div", "muted", a.reason));
      fr.append(w);
    }
    box.append(fr);
  }
  function stats() {
    const d = state.data, st = d.stats;
    const open = d.nodes.filter((n) => n.status === "open" || n.status === "active").length;
    let depth = 0;
    for (const n of d.nodes) {
      let k = 0;
      for (let p = n.parent; p && byId[p] && k < 10000; k++) p = byId[p].parent;
      depth = Math.max(depth, k + 1);
    }
    $("trail-stats").textContent = `${st.nodes} nodes · ${open} open · ${d.edges.length} relations · depth ${depth}` +
      (d.truncated ? ` · the ${d.nodes.length} most recent shown` : "") + ` · ${d.commit.slice(0, 10)}`;
  }

  // -- data and polling --
  async function load(first) {
    let res;
    try { res = await fetch(root.dataset.src, { cache: "no-store" }); } catch (e) { return; }
    if (!res.ok) { $("trail-stats").textContent = "Could not read the graph (HTTP " + res.status + ")"; return; }
    const data = await res.json();
    if (!first && data.commit === state.commit) return;  // unchanged: keep everything as it is
    state.data = data; state.commit = data.commit;
    byId = {};
    for (const n of data.nodes) byId[n.id] = n;
    if (state.sel && !byId[state.sel]) state.sel = null;
    for (const f of Array.from(state.folded)) if (!byId[f]) state.folded.delete(f);
    if (first && data.nodes.length > FOLD_ABOVE) {
      // A big graph opens folded below the second level (as the seed's panel opens).
      for (const n of data.nodes) {
        let d = 0;
        for (let p = n.parent; p && byId[p] && d < 3; d++) p = byId[p].parent;
        if (d >= 1 && n.children.length) state.folded.add(n.id);
      }
    }
    state.query = null; // recompute hits against the new nodes
    stats(); legend(); outline();
    draw();
    search(false);
    detail();
    root.dataset.commit = data.commit;
    if (first && !state.userZoomed) fit();
  }

  $("mode-trunk").addEventListener("click", () => { state.mode = "trunk"; syncMode(); outline(); draw(); });
  $("mode-research").addEventListener("click", () => { state.mode = "research"; syncMode(); outline(); draw(); });
  $("t-fold").addEventListener("click", () => {
    const v = visibleNodes();
    for (const r of v.roots) for (const c of v.kids[r] || []) if ((v.kids[c] || []).length) state.folded.add(c);
    draw();
  });
  $("t-unfold").addEventListener("click", () => { state.folded.clear(); draw(); });
  $("t-fit").addEventListener("click", fit);
  $("t-latest").addEventListener("click", () => {
    // Nodes come in creation order: the last of the most recently updated is the newest.
    let last = null;
    for (const n of state.data.nodes) if (!last || n.updated_at >= last.updated_at) last = n;
    if (last) select(last.id, true);
  });
  $("z-in").addEventListener("click", () => zoomAt(state.zoom * 1.2, canvas.clientWidth / 2, canvas.clientHeight / 2));
  $("z-out").addEventListener("click", () => zoomAt(state.zoom / 1.2, canvas.clientWidth / 2, canvas.clientHeight / 2));
  const box = $("trail-search");
  let timer = null;
  box.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => search(false), 150); });
  box.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); clearTimeout(timer); search(true); } });
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = canvas.getBoundingClientRect();
    if (ev.ctrlKey || ev.metaKey) zoomAt(state.zoom * (ev.deltaY < 0 ? 1.1 : 1 / 1.1), ev.clientX - r.left, ev.clientY - r.top);
    else if (ev.shiftKey) { state.tx -= ev.deltaY; apply(); }
    else { state.ty -= ev.deltaY; state.tx -= ev.deltaX; apply(); }
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("mousedown", (ev) => {
    if (ev.target.closest(".tfold")) return;
    dragged = false;
    drag = [ev.clientX, ev.clientY, state.tx, state.ty];
  });
  window.addEventListener("mousemove", (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag[0], dy = ev.clientY - drag[1];
    if (Math.abs(dx) + Math.abs(dy) > 3) { dragged = true; canvas.classList.add("dragging"); }
    if (dragged) { state.tx = drag[2] + dx; state.ty = drag[3] + dy; apply(); }
  });
  window.addEventListener("mouseup", () => { drag = null; canvas.classList.remove("dragging"); });
  canvas.addEventListener("click", (ev) => { if (!dragged && !ev.target.closest(".tcard")) { state.sel = null; restyle(false); detail(); } });
  canvas.addEventListener("dblclick", (ev) => { if (!ev.target.closest(".tcard")) fit(); });

  load(true);
  setInterval(() => { if ($("t-poll").checked) load(false); }, 3000);
})();
