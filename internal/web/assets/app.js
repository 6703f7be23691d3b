// intercom web: the page. Everything shown is built with textContent (never
// HTML from data); the server pushes state and history over one
// EventSource; changes go out as JSON POSTs carrying the page's token.
"use strict";
(function () {
  const token = document.querySelector('meta[name="intercom-token"]').content;
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...kids) => {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") n.className = v; else if (k.startsWith("on")) n.addEventListener(k.slice(2), v); else n.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) n.append(k instanceof Node ? k : String(k));
    return n;
  };
  const svg = (tag, attrs, text) => {
    const n = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
    if (text != null) n.textContent = text;
    return n;
  };
  const fmtTime = (s) => { const d = new Date(s); return isNaN(d) ? "" : d.toLocaleTimeString(); };
  const fmtDate = (s) => { const d = new Date(s); return isNaN(d) ? "" : d.toLocaleString(); };

  let state = { sessions: [], topics: [], runs: [], person: {} };
  const entries = new Map(); // cursor -> item, the timeline
  let selected = null;
  const drafts = {}; // question id -> answer being typed (kept across re-renders)

  async function api(path, body) {
    const opts = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json", "X-Intercom-Token": token }, body: JSON.stringify(body) };
    const res = await fetch(path, opts);
    const data = await res.json().catch(() => ({ error: res.statusText }));
    if (!res.ok) throw new Error(data.error || res.statusText);
    return data;
  }

  // Tabs.
  function showTab(name) {
    document.querySelectorAll(".tabs button").forEach((b) => b.classList.toggle("active", b.dataset.tab === name));
    document.querySelectorAll(".tab").forEach((t) => t.classList.toggle("active", t.id === "tab-" + name));
    if (name === "conversations") loadConversation();
  }
  document.querySelectorAll(".tabs button").forEach((b) => b.addEventListener("click", () => showTab(b.dataset.tab)));

  // Sessions.
  function nameOf(id) { const s = state.sessions.find((x) => x.id === id); return s ? s.name : id; }
  function renderSessions() {
    const ul = $("sessions");
    ul.replaceChildren();
    for (const s of state.sessions) {
      const st = s.state || s.status || "idle";
      const li = el("li", { class: s.connected ? "online" : "offline", "data-session": s.name, title: s.id, onclick: () => { $("conv-session").value = s.id; showTab("conversations"); } },
        el("span", { class: "state " + st.split(":")[0] }, st),
        el("span", { class: "dot" + (s.connected ? " on" : "") }),
        el("span", { class: "name" }, s.name),
        el("div", { class: "meta" }, [s.project || s.cwd || "", s.model].filter(Boolean).join(" · ") || "\u00a0"));
      if (s.holds && s.holds.length) {
        const holds = el("div");
        for (const r of s.holds) holds.append(el("span", { class: "chip held", title: "holds" }, r));
        li.append(holds);
      }
      if (s.queued) li.append(el("span", { class: "chip" }, s.queued + " queued"));
      ul.append(li);
    }
    for (const sel of [$("send-to"), $("conv-session")]) {
      const keep = sel.value;
      const first = sel.id === "conv-session" ? [el("option", { value: "" }, "all")] : [];
      sel.replaceChildren(...first, ...state.sessions.filter((s) => s.id !== state.person.id).map((s) => el("option", { value: s.id }, s.name + (s.connected ? "" : " (offline)"))));
      if ([...sel.options].some((o) => o.value === keep)) sel.value = keep;
    }
    $("person").textContent = "you are " + (state.person.name || "");
    $("person-name").textContent = state.person.name || "";
  }

  // Entries as rows (conversations, search).
  function kindOf(it) {
    if (it.record) return "topic";
    const m = it.message;
    if (m.expects_reply) return "ask";
    if (m.reply_to) return "reply";
    if (m.topic) return "topic";
    return "message";
  }
  function textOf(it) { return it.record ? it.record.message : it.message.text; }
  function marked(snippet) {
    const out = [];
    for (const [i, part] of snippet.split("\u0002").entries()) {
      if (i === 0) { out.push(part); continue; }
      const [hit, rest] = part.split("\u0003");
      out.push(el("mark", {}, hit), rest || "");
    }
    return out;
  }
  function row(it, snippet) {
    const head = it.record
      ? el("div", { class: "head" }, el("b", {}, it.from_name), " published on ", el("b", {}, it.record.topic), " (" + it.record.event + ") · " + fmtDate(it.at))
      : el("div", { class: "head" }, el("b", {}, it.from_name), " → ", el("b", {}, it.to_name), " · " + kindOf(it) + " · " + fmtDate(it.message.sent_at));
    const text = el("div", { class: "text" });
    text.append(...(snippet ? marked(snippet) : [textOf(it)]));
    return el("li", { "data-id": it.message ? it.message.id : "", onclick: () => openEntry(it) }, head, text);
  }

  // Timeline: a lane per session, time downwards, an arrow per message.
  function renderTimeline() {
    const box = $("timeline");
    const items = [...entries.values()].sort((a, b) => (a.cursor < b.cursor ? -1 : 1)).slice(-150);
    if (!items.length) { box.replaceChildren(el("p", { class: "empty" }, "No messages yet.")); return; }
    const lanes = [];
    const lane = (id, name) => { let i = lanes.findIndex((l) => l.id === id); if (i < 0) { lanes.push({ id, name }); i = lanes.length - 1; } return i; };
    for (const s of state.sessions.filter((s) => s.connected)) lane(s.id, s.name);
    for (const it of items) {
      if (it.message) { lane(it.message.from.id, it.from_name); lane(it.message.to, it.to_name); }
      else lane(it.record.from.id, it.from_name);
    }
    const W = Math.max(box.clientWidth - 10, 200), gap = Math.max(110, (W - 80) / Math.max(lanes.length, 1)), top = 30, step = 34;
    const width = 80 + gap * lanes.length, height = top + step * (items.length + 1);
    const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "messages between sessions over time" });
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }));
    defs.append(marker);
    root.append(defs);
    const x = (i) => 80 + gap * i + gap / 2;
    lanes.forEach((l, i) => {
      root.append(svg("line", { x1: x(i), y1: top - 6, x2: x(i), y2: height, class: "lane" }));
      root.append(svg("text", { x: x(i), y: 16, "text-anchor": "middle", class: "lane-name" }, l.name));
    });
    items.forEach((it, n) => {
      const y = top + step * (n + 1);
      const k = kindOf(it);
      const g = svg("g", { class: "msg " + k, "data-id": it.message ? it.message.id : "" });
      g.addEventListener("click", () => openEntry(it));
      const from = lane(it.message ? it.message.from.id : it.record.from.id);
      const to = it.message ? lane(it.message.to) : from;
      root.append(svg("text", { x: 4, y: y + 4, class: "time" }, fmtTime(it.at)));
      if (from === to) {
        g.append(svg("line", { x1: x(from), y1: y, x2: x(from) + 26, y2: y }), svg("circle", { cx: x(from), cy: y, r: 4, fill: "#8a63d2" }));
      } else {
        const dir = to > from ? 1 : -1;
        g.append(svg("line", { x1: x(from), y1: y, x2: x(to) - dir * 4, y2: y, "marker-end": "url(#arrow)" }));
      }
      const label = (textOf(it) || "").replace(/\s+/g, " ");
      const short = label.length > 60 ? label.slice(0, 57) + "…" : label;
      g.append(svg("text", { x: (x(from) + x(to)) / 2 + (from === to ? 40 : 0), y: y - 5, "text-anchor": from === to ? "start" : "middle" }, short));
      g.append(svg("title", {}, label));
      root.append(g);
    });
    box.replaceChildren(root);
    box.scrollTop = box.scrollHeight;
  }

  // A message opened: its text, fields and trace.
  async function openEntry(it) {
    selected = it;
    const d = $("detail");
    const dl = el("dl");
    const add = (k, v) => { if (v) dl.append(el("dt", {}, k), el("dd", {}, v)); };
    d.replaceChildren(el("h2", {}, it.record ? "Topic record" : "Message"), el("div", { class: "text", id: "detail-text" }, textOf(it)), dl);
    if (it.record) {
      add("topic", it.record.topic); add("event", it.record.event); add("from", it.from_name); add("resource", it.record.resource); add("published", fmtDate(it.record.published_at));
      return;
    }
    const m = it.message;
    add("id", m.id); add("from", it.from_name); add("to", it.to_name); add("kind", kindOf(it)); add("reply to", m.reply_to); add("topic", m.topic); add("sent", fmtDate(m.sent_at));
    for (const a of m.attachments || []) add("attached", a.name || a.path || "(attachment)");
    const tr = el("div", { id: "trace" }, el("p", { class: "status" }, "loading trace…"));
    d.append(el("h2", {}, "Trace"), tr);
    try {
      const t = await api("/api/trace?id=" + encodeURIComponent(m.id));
      if (selected !== it) return;
      const tb = el("table");
      const line = (what, when) => tb.append(el("tr", {}, el("th", {}, what), el("td", {}, fmtDate(when) + "." + String(new Date(when).getMilliseconds()).padStart(3, "0"))));
      line("stored", t.stored_at);
      for (const p of t.pushed_at || []) line("pushed", p);
      for (const f of t.fetched_at || []) line("fetched", f);
      if (t.acked_at) line("delivered", t.acked_at);
      tr.replaceChildren(el("p", { class: "status" }, "state: " + t.state), tb);
    } catch (e) { tr.replaceChildren(el("p", { class: "status" }, "no trace: " + e.message)); }
  }

  // Conversations.
  async function loadConversation() {
    const sid = $("conv-session").value;
    const list = $("conversation");
    try {
      const r = await api("/api/history?session=" + encodeURIComponent(sid));
      list.replaceChildren(...r.items.map((it) => row(it)));
      if (!r.items.length) list.replaceChildren(el("p", { class: "empty" }, "No history."));
    } catch (e) { list.replaceChildren(el("p", { class: "status" }, e.message)); }
  }
  $("conv-session").addEventListener("change", loadConversation);

  // Search.
  async function search() {
    const q = $("search-input").value.trim();
    showTab("search");
    if (!q) return;
    const p = new URLSearchParams({ q, from: $("search-from").value, to: $("search-to").value, since: $("search-since").value });
    $("search-status").textContent = "searching…";
    try {
      const r = await api("/api/search?" + p);
      $("search-status").textContent = r.items.length + " found for “" + q + "”";
      $("search-results").replaceChildren(...r.items.map((it) => row(it, it.snippet)));
    } catch (e) { $("search-status").textContent = e.message; $("search-results").replaceChildren(); }
  }
  $("search-form").addEventListener("submit", (ev) => { ev.preventDefault(); search(); });
  for (const id of ["search-from", "search-to", "search-since"]) $(id).addEventListener("change", search);

  // Topics.
  function renderTopics() {
    const box = $("topics");
    if (!state.topics.length) { box.replaceChildren(el("p", { class: "empty" }, "No topics.")); return; }
    box.replaceChildren(...state.topics.map((t) => {
      const card = el("div", { class: "card", "data-topic": t.topic }, el("h3", {}, t.topic));
      if (t.resources && t.resources.length) {
        const rs = el("div");
        for (const r of t.resources) rs.append(el("span", { class: "chip" + (r.state === "held" ? " held" : "") }, r.resource + ": " + r.state + (r.holder ? " by " + r.holder.name : "")));
        card.append(rs);
      }
      const tb = el("table", {}, el("tr", {}, el("th", {}, "from"), el("th", {}, "event"), el("th", {}, "message"), el("th", {}, "published")));
      for (const r of t.records || []) tb.append(el("tr", {}, el("td", {}, r.from.name), el("td", {}, r.event), el("td", {}, r.message), el("td", {}, fmtDate(r.published_at))));
      card.append(tb, el("p", { class: "meta" }, "subscribers: " + ((t.subscribers || []).map((s) => s.name).join(", ") || "none")));
      return card;
    }));
  }

  // Runs and their questions, answerable here.
  function renderRuns() {
    const box = $("runs");
    let open = 0;
    if (!state.runs.length) { box.replaceChildren(el("p", { class: "empty" }, "No supervised runs.")); }
    else box.replaceChildren(...state.runs.map((r) => {
      const card = el("div", { class: "card", "data-run": r.id }, el("h3", {}, r.child_session || r.agent), el("p", { class: "meta" }, [r.id, r.state, "supervisor " + (r.supervisor_name || r.supervisor), fmtDate(r.created_at)].join(" · ")));
      for (const q of r.questions) {
        const waiting = q.state === "awaiting_input";
        if (waiting) open++;
        const qd = el("div", { class: "question" + (waiting ? "" : " done"), "data-question": q.id }, el("div", { class: "meta" }, q.reason + " · " + q.state + " · " + fmtDate(q.created_at)), el("div", { class: "text" }, q.message));
        if (waiting) {
          const ta = el("textarea", { rows: "2", class: "answer-text", placeholder: "Your answer" });
          ta.value = drafts[q.id] || "";
          ta.addEventListener("input", () => { drafts[q.id] = ta.value; });
          const status = el("span", { class: "status" });
          const form = el("form", { class: "answer" }, ta, el("div", { class: "row" }, status, el("button", { type: "submit" }, "Answer")));
          form.addEventListener("submit", async (ev) => {
            ev.preventDefault();
            status.textContent = "sending…";
            try { const rec = await api("/api/answer", { run: r.id, question: q.id, text: ta.value }); status.textContent = rec.note || "answered"; }
            catch (e) { status.textContent = e.message; }
          });
          qd.append(form);
        }
        card.append(qd);
      }
      return card;
    }));
    const badge = $("runs-badge");
    badge.textContent = open; badge.classList.toggle("hidden", open === 0);
  }

  // Sending as the person.
  $("send-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    $("send-status").textContent = "sending…";
    try {
      const r = await api("/api/send", { to: $("send-to").value, text: $("send-text").value, ask: $("send-ask").checked });
      $("send-status").textContent = "stored as " + r.id; $("send-text").value = "";
    } catch (e) { $("send-status").textContent = e.message; }
  });

  // Live.
  function connect() {
    const es = new EventSource("/api/events");
    es.addEventListener("open", () => { $("live").textContent = "live"; $("live").className = "live on"; });
    es.addEventListener("error", () => { $("live").textContent = "reconnecting…"; $("live").className = "live off"; });
    es.addEventListener("state", (ev) => {
      state = JSON.parse(ev.data);
      renderSessions(); renderTopics();
      renderRuns();
      renderTimeline();
    });
    const add = (items) => { for (const it of items || []) entries.set(it.cursor, it); renderTimeline(); };
    es.addEventListener("timeline", (ev) => add(JSON.parse(ev.data).items));
    es.addEventListener("entries", (ev) => add(JSON.parse(ev.data)));
  }
  window.addEventListener("resize", renderTimeline);
  connect();
})();
