// The page of tenure ui. Everything it shows comes from a store that
// anyone who can write it controls: it is put in the document only as
// text (textContent, setAttribute), never parsed as HTML.
"use strict";

const rows = new Map(); // name -> row, as the server sent it
let offset = 0;         // server clock minus ours, in ms
let lastMsg = null;     // the last message, for its summary fields
const MAX_LANES = 100;  // timeline lanes drawn (the names with the latest handovers)

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function age(iso) {
  if (!iso) return "-";
  let ms = Date.now() + offset - Date.parse(iso);
  if (ms < 0) ms = 0;
  if (ms < 10000) return (ms / 1000).toFixed(1) + "s ago";
  const s = Math.floor(ms / 1000);
  if (s < 120) return s + "s ago";
  if (s < 7200) return Math.floor(s / 60) + "m ago";
  if (s < 172800) return Math.floor(s / 3600) + "h ago";
  return Math.floor(s / 86400) + "d ago";
}

function clock(iso) {
  return iso ? iso.replace("T", " ").replace(/(\.\d{3})\d*/, "$1") : "-";
}

function rowElement(r) {
  const tr = el("tr");
  tr.setAttribute("data-name", r.name);
  tr.appendChild(el("td", "name", r.name));
  const holder = el("td", "holder");
  if (r.error) {
    holder.classList.add("error");
    holder.textContent = "unreadable: " + r.error;
  } else if (r.holder === "") {
    holder.classList.add("released");
    holder.textContent = r.successor ? "(released to " + r.successor + ")" : "(released)";
  } else {
    holder.textContent = r.holder;
    if (r.claim) {
      const b = el("span", "badge", "claim");
      b.title = "only a claim: its holder does not lead yet";
      holder.appendChild(b);
    }
  }
  tr.appendChild(holder);
  tr.appendChild(el("td", "num token", String(r.token)));
  const since = el("td", "since", age(r.acquiredAt));
  since.setAttribute("data-at", r.acquiredAt || "");
  since.title = clock(r.acquiredAt);
  tr.appendChild(since);
  const renewed = el("td", "renewed", age(r.renewedAt));
  renewed.setAttribute("data-at", r.renewedAt || "");
  renewed.title = clock(r.renewedAt) + " (lease " + r.leaseDuration + ")";
  tr.appendChild(renewed);
  tr.appendChild(el("td", "num transitions", String(r.transitions)));
  tr.appendChild(el("td", "meta", r.metadata ? r.metadata + (r.metadataCut ? " …" : "") : "-"));
  return tr;
}

function lastAt(r) {
  const h = r.history || [];
  return h.length ? Date.parse(h[h.length - 1].at) : 0;
}

function laneElement(r) {
  const lane = el("section", "lane");
  lane.setAttribute("data-name", r.name);
  lane.appendChild(el("h3", "", r.name));
  const ol = el("ol");
  const h = (r.history || []).slice().reverse();
  for (const e of h) {
    const li = el("li", "handover");
    li.setAttribute("data-holder", e.holder);
    li.setAttribute("data-token", String(e.token));
    if (e.first) li.classList.add("first");
    if (e.holder === "") li.classList.add("release");
    li.appendChild(el("span", "when", clock(e.at)));
    let what = e.holder === "" ? "released" : e.holder + "  token " + e.token;
    if (e.claim) what += "  (claim)";
    if (e.first) what += "  (first seen)";
    li.appendChild(document.createTextNode(what));
    ol.appendChild(li);
  }
  lane.appendChild(ol);
  return lane;
}

function render(changed) {
  const tbody = document.getElementById("rows");
  const names = Array.from(rows.keys()).sort();
  const frag = document.createDocumentFragment();
  for (const name of names) {
    const tr = rowElement(rows.get(name));
    if (changed.has(name)) tr.classList.add("changed");
    frag.appendChild(tr);
  }
  tbody.replaceChildren(frag);
  document.getElementById("empty").hidden = names.length > 0;

  const lanes = Array.from(rows.values()).sort((a, b) => lastAt(b) - lastAt(a) || (a.name < b.name ? -1 : 1)).slice(0, MAX_LANES);
  const tl = document.createDocumentFragment();
  for (const r of lanes) tl.appendChild(laneElement(r));
  document.getElementById("timeline").replaceChildren(tl);
  summary();
}

function summary() {
  const m = lastMsg;
  if (!m) return;
  let s = rows.size + (rows.size === 1 ? " election" : " elections");
  if (m.prefix) s += " under \u201c" + m.prefix + "\u201d";
  s += "; " + m.mode;
  document.getElementById("summary").textContent = s;
  const p = document.getElementById("problem");
  const problems = [];
  if (m.error) problems.push(m.error);
  if (m.truncated) problems.push("more than " + m.maxNames + " names: only the first " + m.maxNames + " are shown");
  p.textContent = problems.join("; ");
  p.hidden = problems.length === 0;
}

function receive(ev) {
  const m = JSON.parse(ev.data);
  offset = Date.parse(m.now) - Date.now();
  lastMsg = m;
  const changed = new Set();
  if (m.reset) rows.clear();
  for (const name of m.removed || []) rows.delete(name);
  for (const r of m.rows) {
    if (!m.reset) changed.add(r.name);
    rows.set(r.name, r);
  }
  render(changed);
}

function tick() {
  for (const td of document.querySelectorAll("td.since, td.renewed")) {
    td.textContent = age(td.getAttribute("data-at"));
  }
}

function connect() {
  const conn = document.getElementById("conn");
  const es = new EventSource("api/events");
  es.addEventListener("open", () => { conn.textContent = "live"; conn.className = "conn up"; });
  es.addEventListener("error", () => { conn.textContent = "reconnecting"; conn.className = "conn down"; });
  es.addEventListener("reset", receive);
  es.addEventListener("update", receive);
}

connect();
setInterval(tick, 1000);
