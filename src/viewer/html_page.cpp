// The page template of the HTML export. Kept apart from the data code because it is mostly
// markup, style and a small script; it loads nothing from the network so it works offline.
#include <string>
#include <string_view>

#include "viewer/html_export.h"

namespace proton::viewer {

namespace {

constexpr std::string_view kHead = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>)HTML";

constexpr std::string_view kStyle = R"HTML( - proton-viewer</title>
<style>
body { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d1d1f; }
header { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; padding: 8px 12px;
         border-bottom: 1px solid #ddd; background: #f7f7f9; }
header h1 { font-size: 14px; margin: 0; }
#metric { color: #555; }
#crumbs span { color: #0a58ca; cursor: pointer; }
#crumbs span:hover { text-decoration: underline; }
#chart { position: relative; margin: 8px 12px; }
.f { position: absolute; height: 19px; box-sizing: border-box; border: 1px solid #fff;
     border-radius: 2px; padding: 0 4px; overflow: hidden; white-space: nowrap;
     text-overflow: ellipsis; font-size: 12px; line-height: 17px; cursor: pointer; }
.f:hover { border-color: #222; }
.f.focus { font-weight: 600; }
.f.hl { background: #d63384 !important; color: #fff; }
#source { margin: 0 12px 12px; font-size: 12px; }
.f.sel { outline: 2px solid #d63384; outline-offset: -2px; }
#layout { display: flex; align-items: flex-start; }
#layout main { flex: 1; min-width: 0; }
#advice { width: 340px; margin: 8px 12px 8px 0; font-size: 12px; }
#advice h2 { font-size: 13px; margin: 0 0 4px; }
@media (max-width: 1100px) {  /* narrow windows: the findings under the graph */
  #layout { flex-direction: column; align-items: stretch; }
  #advice { width: auto; margin: 0 12px 12px; }
}
#findings { margin: 0; padding-left: 20px; }
#findings li { margin-bottom: 6px; }
#findings a { color: #0a58ca; word-break: break-all; }
#detail { margin: 0 12px 12px; color: #333; min-height: 1.4em; font-family: ui-monospace, monospace; }
</style></head>
<body>
<header><h1>proton-viewer</h1><span id="metric"></span><span id="crumbs"></span>
<input id="search" placeholder="highlight (regex)" size="24">
<button id="reset" type="button">Reset zoom</button></header>
<div id="layout"><main>
<div id="detail"></div>
<div id="chart"></div>
<pre id="source"></pre>
</main>
<aside id="advice"><h2>Findings</h2><ol id="findings"></ol></aside></div>
<script id="profile-data" type="application/json">)HTML";

constexpr std::string_view kScript = R"HTML(</script>
<script>
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("profile-data").textContent);
  const chart = document.getElementById("chart");
  const crumbs = document.getElementById("crumbs");
  const detail = document.getElementById("detail");
  const ROW = 20;
  const nodes = [];
  const anchors = new Map();  // a finding's frame, by the index "a" the export gave it
  // Index the tree iteratively: deep call paths must not exhaust the JS stack.
  const todo = [[data.tree, null, 0]];
  while (todo.length) {
    const [node, parent, depth] = todo.pop();
    node.id = nodes.length; node.p = parent; node.d = depth; node.c = node.c || [];
    nodes.push(node);
    if (node.a !== undefined) anchors.set(node.a, node);
    for (let i = node.c.length - 1; i >= 0; i--) todo.push([node.c[i], node, depth + 1]);
  }
  const root = data.tree;
  let focus = root;
  let pattern = null;
  let selected = null;
  document.getElementById("metric").textContent = "metric: " + data.metric;

  function fmt(v) {
    if (Math.abs(v) >= 1e6 || (v !== 0 && Math.abs(v) < 1e-3)) return v.toExponential(3);
    return Number.isInteger(v) ? String(v) : v.toFixed(3);
  }
  function share(n) { return root.v > 0 ? (100 * n.v / root.v).toFixed(2) + "%" : "-"; }
  function hue(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return h;
  }
  function color(n) {
    const h = hue(n.n);
    // Kernels warm, scopes cool, so GPU work stands out at a glance.
    return n.k ? "hsl(" + (10 + h % 40) + ",80%," + (58 + h % 12) + "%)"
               : "hsl(" + (200 + h % 40) + ",55%," + (72 + h % 10) + "%)";
  }
  function path(n) { const out = []; for (let a = n; a; a = a.p) out.unshift(a); return out; }

  function place(n, x, w) {
    const el = document.createElement("div");
    el.className = "f" + (n === focus ? " focus" : "") +
                   (pattern && pattern.test(n.n) ? " hl" : "") + (n === selected ? " sel" : "");
    el.style.left = x + "px"; el.style.width = w + "px"; el.style.top = (n.d * ROW) + "px";
    el.style.background = color(n);
    el.textContent = n.n;
    el.title = n.n + "\n" + data.metric + ": " + fmt(n.v) + " (" + share(n) + " of root)";
    el.dataset.id = n.id; el.dataset.name = n.n;
    chart.appendChild(el);
    return n.d;
  }
  function render() {
    chart.replaceChildren();
    const width = chart.clientWidth || 800;
    let deepest = 0;
    for (const a of path(focus)) deepest = Math.max(deepest, place(a, 0, width));
    // Lay out the focus's subtree over the full width; frames under a pixel are skipped.
    const stack = [[focus, 0, width]];
    while (stack.length) {
      const [n, x, w] = stack.pop();
      if (n !== focus) deepest = Math.max(deepest, place(n, x, w));
      let cx = x;
      for (const c of n.c) {
        const cw = n.v > 0 ? w * c.v / n.v : 0;
        if (cw >= 1) stack.push([c, cx, cw]);
        cx += cw;
      }
    }
    chart.style.height = ((deepest + 1) * ROW) + "px";
    chart.dataset.focus = focus.n;
    crumbs.replaceChildren();
    for (const a of path(focus)) {
      const s = document.createElement("span");
      s.textContent = a.n; s.onclick = () => zoom(a);
      if (crumbs.childNodes.length) crumbs.append(" › ");
      crumbs.append(s);
    }
    detail.textContent = focus.n + " — " + data.metric + " " + fmt(focus.v) + " (" + share(focus) + ")";
  }
  function zoom(n) {
    focus = n; render();
    // PC sampling: a kernel's annotated source lines (proton-viewer --source), when it has any.
    document.getElementById("source").textContent = (data.sources && data.sources[n.n]) || "";
  }

  chart.addEventListener("click", (e) => {
    const el = e.target.closest(".f");
    if (el) zoom(nodes[Number(el.dataset.id)]);
  });
  chart.addEventListener("mouseover", (e) => {
    const el = e.target.closest(".f");
    if (el) { const n = nodes[Number(el.dataset.id)];
              detail.textContent = n.n + " — " + data.metric + " " + fmt(n.v) + " (" + share(n) + ")"; }
  });
  // The analyzer's findings (proton-viewer --advise): clicking one zooms to its frame.
  const list = document.getElementById("findings");
  function ns(v) {
    return v >= 1e6 ? (v / 1e6).toFixed(2) + " ms" : v >= 1e3 ? (v / 1e3).toFixed(1) + " us"
                                                               : v.toFixed(0) + " ns";
  }
  (data.findings || []).forEach((f, i) => {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = "#finding=" + i; a.className = "finding"; a.dataset.at = f.at;
    a.textContent = "[" + f.severity + "] " + f.rule + "  " +
                    (f.frame.length ? f.frame.join(" > ") : "(root)");
    a.onclick = (e) => { e.preventDefault(); selected = anchors.get(f.at) || null;
                         if (selected) zoom(selected); };
    const tip = document.createElement("div");
    tip.textContent = f.suggestion + (f.saving_ns !== null ? " (at stake: ~" + ns(f.saving_ns) + ")" : "");
    li.append(a, tip);
    list.append(li);
  });
  if (!list.childNodes.length) list.textContent = "No findings for this profile.";
  document.getElementById("reset").onclick = () => zoom(root);
  document.getElementById("search").oninput = (e) => {
    try { pattern = e.target.value ? new RegExp(e.target.value) : null; } catch (err) { pattern = null; }
    render();
  };
  window.addEventListener("resize", render);
  render();
  // "#click=<frame name>" clicks that frame once loaded: lets a headless browser exercise the
  // same click handler a user does.
  const m = /^#click=(.*)$/.exec(location.hash);
  if (m) {
    const name = decodeURIComponent(m[1]);
    const el = Array.from(chart.querySelectorAll(".f")).find((d) => d.dataset.name === name);
    if (el) el.dispatchEvent(new MouseEvent("click", { bubbles: true }));
  }
  // "#finding=<i>" clicks the i-th finding once loaded, likewise.
  const fm = /^#finding=(\d+)$/.exec(location.hash);
  if (fm && list.children[Number(fm[1])]) list.children[Number(fm[1])].querySelector("a").click();
})();
</script>
</body></html>
)HTML";

}  // namespace

std::string html_page(std::string_view title_html, std::string_view data_json) {
  std::string page;
  page.reserve(kHead.size() + kStyle.size() + kScript.size() + title_html.size() +
               data_json.size());
  page.append(kHead).append(title_html).append(kStyle).append(data_json).append(kScript);
  return page;
}

}  // namespace proton::viewer
