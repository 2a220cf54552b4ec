/* onnx-dml-bench report: case list, filters, sorting, paging and case details, rendered from the
   JSON in #report-data. Every text from the data goes through textContent, never parsed as HTML. */
(function () {
  "use strict";
  // the case data is embedded gzip+base64 (DecompressionStream, offline) or as plain JSON
  var node = document.getElementById("report-data");
  if (node.getAttribute("data-encoding") !== "gzip+base64") { start(JSON.parse(node.textContent)); return; }
  var bin = atob(node.textContent.trim()), bytes = new Uint8Array(bin.length);
  for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  if (window.performance && performance.mark) performance.mark("report-data-base64");
  new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text()
    .then(function (text) {
      if (window.performance && performance.mark) performance.mark("report-data-inflated");
      var data = JSON.parse(text);
      if (window.performance && performance.mark) performance.mark("report-data-parsed");
      start(data);
    })
    .catch(function (e) {
      var p = document.createElement("p"); p.className = "bad";
      p.textContent = "The case data of this page could not be decoded: " + e;
      document.getElementById("cases").appendChild(p);
      throw e;
    });
})();

function start(DATA) {
  "use strict";
  var T = DATA.tables, COL = {}, SCOL = {};
  DATA.columns.forEach(function (c, i) { COL[c] = i; });
  DATA.stat_columns.forEach(function (c, i) { SCOL[c] = i; });
  var CASES = DATA.cases;
  var VERDICT_ORDER = {};
  T.verdict.forEach(function (v, i) { VERDICT_ORDER[v] = i; });
  var MULTI_EP = T.ep.filter(function (e) { return e !== ""; }).length > 1;

  // ------------------------------------------------------------------ DOM helpers (text only)
  function el(tag, props) {
    var e = document.createElement(tag);
    if (props) {
      for (var k in props) {
        if (!Object.prototype.hasOwnProperty.call(props, k)) continue;
        var v = props[k];
        if (k === "text") e.textContent = v;
        else if (k === "cls") e.className = v;
        else if (k === "style") e.setAttribute("style", v);
        else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(parent, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(parent, c); }); return; }
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
  function badge(v) { return el("span", {cls: "badge", style: "background:" + (DATA.colours[v] || "#57606a"), text: v}); }
  function fmt(x) {
    if (x === null || x === undefined || x === "") return "";
    return String(x);   // numbers in full (shortest round-trip form): ULP-sized differences stay visible
  }

  // ------------------------------------------------------------------ case accessors
  function g(row, name) {
    var v = row[COL[name]];
    if (name === "reason") return T.reason[v];
    if (name === "detail" && typeof v === "string") { v = row[COL.detail] = JSON.parse(v); }   // parsed when first opened
    return v;
  }
  function op(row) { return T.op[g(row, "op")]; }
  function dtype(row) { return T.dtype[g(row, "dtype")]; }
  function ep(row) { return T.ep[g(row, "ep")]; }
  function verdict(row) { return T.verdict[g(row, "verdict")]; }
  function attribution(row) { return T.attribution[g(row, "attribution")]; }
  function family(row) { return T.family[g(row, "family")]; }
  function mism(row) {
    var m = 0, t = 0, any = false;
    g(row, "stats").forEach(function (s) { if (typeof s[SCOL.mismatches] === "number") { m += s[SCOL.mismatches]; t += s[SCOL.total] || 0; any = true; } });
    return any ? [m, t] : null;
  }
  function maxUlp(row) {
    var best = null;
    g(row, "stats").forEach(function (s) { var u = s[SCOL.max_ulp]; if (typeof u === "number" && (best === null || u > best)) best = u; });
    return best;
  }
  function descriptor(row) {
    var fields = (DATA.ops[op(row)] || {fields: []}).fields, vals = g(row, "descriptor"), d = {};
    fields.forEach(function (f, i) { if (i < vals.length && vals[i] !== undefined) d[f] = vals[i]; });
    return d;
  }

  // ------------------------------------------------------------------ filters
  var F = {text: "", verdict: "", op: "", dtype: "", ep: "", attribution: "", label: "", family: "", opset: "", id: ""};
  var sortKey = "default", sortDir = 1, page = 0, pageSize = 100, openIds = {};
  var filtered = [];

  function distinct(fn) {
    var s = {};
    CASES.forEach(function (r) { var v = fn(r); (Array.isArray(v) ? v : [v]).forEach(function (x) { if (x !== "" && x !== null && x !== undefined) s[x] = (s[x] || 0) + 1; }); });
    return s;
  }
  function fillSelect(id, counts, order, extra) {
    var s = document.getElementById(id);
    s.appendChild(el("option", {value: "", text: "all"}));
    (extra || []).forEach(function (o) { s.appendChild(el("option", {value: o[0], text: o[1]})); });
    var keys = Object.keys(counts);
    keys.sort(order || function (a, b) { return a < b ? -1 : a > b ? 1 : 0; });
    keys.forEach(function (k) { s.appendChild(el("option", {value: k, text: k + " (" + counts[k] + ")"})); });
    s.addEventListener("change", function () { F[id.slice(2)] = s.value; F.id = ""; page = 0; apply(); });
  }
  function numOrder(a, b) { return (+a) - (+b); }

  function matches(r) {
    if (F.id && r[0] !== F.id) return false;
    var v = verdict(r);
    if (F.verdict) {
      if (F.verdict === "!PASS") { if (v === "PASS") return false; }
      else if (v !== F.verdict) return false;
    }
    if (F.op && op(r) !== F.op) return false;
    if (F.dtype && dtype(r) !== F.dtype) return false;
    if (F.ep && ep(r) !== F.ep) return false;
    if (F.attribution && attribution(r) !== F.attribution) return false;
    if (F.family && family(r) !== F.family) return false;
    if (F.opset && String(g(r, "opset")) !== F.opset) return false;
    if (F.label && g(r, "labels").indexOf(F.label) < 0) return false;
    if (F.text) {
      var hay = (r[0] + "\n" + g(r, "reason") + "\n" + T.node[g(r, "node")] + "\n" + g(r, "labels").join(" ") + "\n" + op(r) + " " + dtype(r) +
                 "\n" + (T.source ? T.source[g(r, "source")] || "" : "")).toLowerCase();
      var words = F.text.toLowerCase().split(/\s+/);
      for (var i = 0; i < words.length; i++) if (words[i] && hay.indexOf(words[i]) < 0) return false;
    }
    return true;
  }

  var COLUMNS = [
    // widths live in report.css (.c-KEY): columns fit the table's box at 1000 px and wider
    {key: "verdict", label: "verdict", get: function (r) { return VERDICT_ORDER[verdict(r)]; }},
    {key: "id", label: "case and reason", get: function (r) { return r[0]; }},
    {key: "op", label: "operator", get: op},
    {key: "dtype", label: "data type", get: dtype},
    {key: "ep", label: "EP", get: ep, multi: true},
    {key: "opset", label: "opset", get: function (r) { return g(r, "opset"); }},
    {key: "family", label: "inputs", get: family},
    {key: "attribution", label: "attribution", get: attribution},
    {key: "labels", label: "labels", get: function (r) { return g(r, "labels").join(","); }},
    {key: "mism", label: "mismatches", get: function (r) { var m = mism(r); return m ? m[0] : -1; }},
    {key: "ulp", label: "max ULP", get: function (r) { var u = maxUlp(r); return u === null ? -1 : u; }}
  ].filter(function (c) { return !c.multi || MULTI_EP; });

  function sortRows(rows) {
    if (sortKey === "default") {
      // failures first, then by operator, data type, id
      return rows.sort(function (a, b) {
        var pa = verdict(a) === "PASS" ? 1 : 0, pb = verdict(b) === "PASS" ? 1 : 0;
        if (pa !== pb) return pa - pb;
        var va = VERDICT_ORDER[verdict(a)], vb = VERDICT_ORDER[verdict(b)];
        if (va !== vb) return va - vb;
        return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
      });
    }
    var col = COLUMNS.filter(function (c) { return c.key === sortKey; })[0];
    return rows.sort(function (a, b) {
      var x = col.get(a), y = col.get(b);
      if (x === y) return a[0] < b[0] ? -1 : 1;
      return (x < y ? -1 : 1) * sortDir;
    });
  }

  function apply() {
    filtered = sortRows(CASES.filter(matches));
    var pages = Math.max(1, Math.ceil(filtered.length / pageSize));
    if (page >= pages) page = pages - 1;
    renderRows();
    renderPagers(pages);
  }

  // ------------------------------------------------------------------ table
  function renderHead() {
    var tr = document.getElementById("case-head");
    COLUMNS.forEach(function (c) {
      var th = el("th", {text: c.label, "data-key": c.key, title: "sort by " + c.label, cls: "c-" + c.key});
      th.addEventListener("click", function () {
        if (sortKey === c.key) sortDir = -sortDir; else { sortKey = c.key; sortDir = 1; }
        Array.prototype.forEach.call(tr.children, function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
        th.classList.add(sortDir > 0 ? "sorted-asc" : "sorted-desc");
        page = 0; apply();
      });
      tr.appendChild(th);
    });
  }

  function renderRows() {
    var body = document.getElementById("case-body");
    body.textContent = "";
    var start = page * pageSize, rows = filtered.slice(start, start + pageSize);
    rows.forEach(function (r) {
      var tr = el("tr", {cls: "row", "data-case": r[0], "data-verdict": verdict(r)});
      COLUMNS.forEach(function (c) {
        var td;
        if (c.key === "verdict") td = el("td", null, badge(verdict(r)));
        else if (c.key === "id") td = el("td", {cls: "id"}, el("div", {cls: "case-id", text: r[0]}),
          g(r, "reason") ? el("div", {cls: "reason-line", text: g(r, "reason"), title: g(r, "reason")}) : "");
        else if (c.key === "attribution") td = el("td", null, attribution(r) ? el("span", {cls: "attr", text: attribution(r)}) : "");
        else if (c.key === "labels") td = el("td", null, g(r, "labels").map(function (l) { return el("span", {cls: "label", text: l}); }));
        else if (c.key === "mism") { var m = mism(r); td = m ? el("td", {cls: "num"}, m[0] + "/", el("wbr"), String(m[1])) : el("td", {cls: "num"}); }
        else if (c.key === "ulp") { var u = maxUlp(r); td = el("td", {cls: "num", text: u === null ? "" : String(u)}); }
        else if (c.key === "ep") td = el("td", {text: ep(r).replace(/ExecutionProvider$/, ""), title: ep(r)});
        else if (c.key === "op") td = el("td", null, op(r).split("_").map(function (part, i) { return i ? ["_", el("wbr"), part] : part; }));
        else td = el("td", {text: fmt(c.get(r))});
        td.classList.add("c-" + c.key);
        tr.appendChild(td);
      });
      tr.addEventListener("click", function () { toggle(r, tr); });
      body.appendChild(tr);
      if (openIds[key(r)]) toggle(r, tr, true);
    });
    if (!rows.length) body.appendChild(el("tr", null, el("td", {colspan: COLUMNS.length, cls: "muted", text: "No case matches the filters."})));
  }
  function key(r) { return r[0] + "\u0000" + ep(r); }

  function renderPagers(pages) {
    ["pager-top", "pager-bottom"].forEach(function (id) {
      var p = document.getElementById(id);
      p.textContent = "";
      var from = filtered.length ? page * pageSize + 1 : 0, to = Math.min(filtered.length, (page + 1) * pageSize);
      var info = el("span", {cls: "count", "data-shown": String(filtered.length),
        text: "Showing " + from + "\u2013" + to + " of " + filtered.length + " case" + (filtered.length === 1 ? "" : "s") +
              (filtered.length !== CASES.length ? " (filtered from " + CASES.length + ")" : "")});
      var prev = el("button", {type: "button", text: "\u2190 previous"}); prev.disabled = page === 0;
      var next = el("button", {type: "button", text: "next \u2192"}); next.disabled = page >= pages - 1;
      prev.addEventListener("click", function () { page--; apply(); });
      next.addEventListener("click", function () { page++; apply(); });
      var size = el("select", {title: "cases per page"});
      [50, 100, 250, 1000].forEach(function (n) { var o = el("option", {value: String(n), text: n + " per page"}); if (n === pageSize) o.selected = true; size.appendChild(o); });
      size.addEventListener("change", function () { pageSize = +size.value; page = 0; apply(); });
      add(p, [prev, el("span", {text: "page " + (page + 1) + " of " + pages}), next, size, info]);
    });
  }

  // ------------------------------------------------------------------ details
  function toggle(r, tr, force) {
    var next = tr.nextSibling;
    if (next && next.classList && next.classList.contains("detail")) {
      if (force) return;
      next.parentNode.removeChild(next);
      tr.classList.remove("open");
      delete openIds[key(r)];
      return;
    }
    openIds[key(r)] = true;
    tr.classList.add("open");
    var td = el("td", {colspan: COLUMNS.length});
    td.appendChild(detail(r));
    tr.parentNode.insertBefore(el("tr", {cls: "detail", "data-case": r[0]}, td), tr.nextSibling);
  }

  // the DirectML struct: [member, C type, value text] rows laid out by the operator (report/data.py)
  function structText(r) {
    var info = DATA.ops[op(r)] || {dml: op(r)}, d = descriptor(r), lines = [], w = 0;
    var rows = (g(r, "struct") || []).map(function (i) { return T.struct[i]; });
    rows.forEach(function (p) { w = Math.max(w, p[0].length); });
    if (d.FeatureLevel !== undefined) lines.push("// DML_FEATURE_LEVEL_" + String(d.FeatureLevel).replace(".", "_") + " (descriptor validated at this level)");
    lines.push("struct " + info.dml + " {");
    rows.forEach(function (p) { lines.push("    " + p[0] + new Array(w - p[0].length + 2).join(" ") + "= " + p[2] + ";"); });
    lines.push("};");
    return lines.join("\n");
  }

  function caseDict(r) {
    var det = g(r, "detail");
    if (det && det.case) return det.case;
    var d = {id: r[0], op: op(r), opset: g(r, "opset"), descriptor: descriptor(r)};
    var onnx = g(r, "onnx");
    if (onnx && Object.keys(onnx).length) d.onnx = onnx;
    d.inputs = {family: family(r), seed: g(r, "seed")};
    return d;
  }

  function reproScript(r) {
    var env = DATA.envs[g(r, "env")] || {};
    var data = {case: caseDict(r), case_id: r[0], verdict: verdict(r), attribution: attribution(r) || null,
                ep: ep(r) || env.ep || "CPUExecutionProvider", ep_key: env.ep_key || null,
                ep_options: env.ep_options || {}, optimization: env.optimization || "disabled"};
    return DATA.repro.template.split(DATA.repro.placeholder).join(JSON.stringify(data, null, 1));
  }

  function kvTable(rows) {
    return el("table", {cls: "kv"}, rows.filter(function (x) { return x[1] !== "" && x[1] !== null && x[1] !== undefined; }).map(function (x) {
      return el("tr", null, el("th", {text: x[0]}), el("td", null, x[1]));
    }));
  }

  function statsTable(stats) {
    var head = ["output", "kind", "match", "mismatches", "max abs", "max ULP", "tolerance ULP", "smallest passing ULP"];
    return el("table", {cls: "small stats"},
      el("tr", null, head.map(function (h, i) { return el("th", {cls: i < 2 ? "l" : "", text: h}); })),
      stats.map(function (s) {
        return el("tr", null,
          el("td", {cls: "l", text: s[SCOL.output]}), el("td", {cls: "l", text: fmt(s[SCOL.kind])}),
          el("td", {text: s[SCOL.match] ? "yes" : "no"}),
          el("td", {text: fmt(s[SCOL.mismatches]) + " / " + fmt(s[SCOL.total])}),
          el("td", {text: fmt(s[SCOL.max_abs])}), el("td", {text: fmt(s[SCOL.max_ulp])}),
          el("td", {text: fmt(s[SCOL.tolerance_ulp])}), el("td", {text: fmt(s[SCOL.min_passing_ulp])}));
      }));
  }

  function heatmap(name, grid) {
    var max = 0, rows = grid.length, cols = rows ? grid[0].length : 0;
    grid.forEach(function (row) { row.forEach(function (n) { if (n > max) max = n; }); });
    var px = Math.max(6, Math.min(22, Math.floor(420 / Math.max(cols, 1))));
    var box = el("div", {cls: "heatmap", style: "grid-template-columns: repeat(" + cols + ", " + px + "px); grid-auto-rows: " + px + "px", "data-output": name});
    grid.forEach(function (row, y) {
      row.forEach(function (n, x) {
        var a = max ? n / max : 0;
        box.appendChild(el("div", {title: "row " + y + ", column " + x + ": " + n + " mismatch" + (n === 1 ? "" : "es"),
          style: n ? "background: rgba(207, 34, 46, " + (0.15 + 0.85 * a).toFixed(3) + ")" : ""}));
      });
    });
    return el("div", {cls: "heatmap-wrap"}, el("div", {cls: "muted", text: name + ": " + rows + " rows \u00d7 " + cols + " columns, up to " + max + " per cell"}), box);
  }

  function detail(r) {
    var det = g(r, "detail") || {}, v = verdict(r), a = attribution(r), env = DATA.envs[g(r, "env")] || {};
    var box = el("div", {cls: "detail"});
    var head = el("div", null, badge(v), " ", a ? el("span", {cls: "attr", text: a, title: DATA.attribution_text[a] || ""}) : "",
      " ", el("code", {text: r[0]}), " ",
      el("a", {href: "#case=" + encodeURIComponent(r[0]), text: "link"}));
    box.appendChild(head);
    box.appendChild(el("p", {cls: "muted", text: DATA.verdict_text[v] || ""}));
    if (a) box.appendChild(el("p", {cls: "muted", text: a + ": " + (DATA.attribution_text[a] || "")}));
    if (g(r, "reason")) box.appendChild(el("div", {cls: "reason-full", text: g(r, "reason")}));
    if (det.fw) box.appendChild(el("p", {cls: "fourway", text: det.fw}));   // four-way attribution
    if (det.rerun) box.appendChild(el("p", {cls: "rerun", text: "run again: " + det.rerun}));   // its batch lost its worker
    if (det.triage) box.appendChild(el("p", {cls: "triage"}, "triage: ",   // shrunk case and bug-report bundle (outdir.triage_links)
      det.triage.shrunk ? el("a", {href: det.triage.shrunk, text: "shrunk case"}) : "no shrunk case", " \u00b7 ",
      det.triage.bundle ? el("a", {href: det.triage.bundle, text: "bundle"}) : el("code", {text: det.triage.cmd || ""})));

    var left = el("div", null, el("h4", {text: "DirectML descriptor"}), el("pre", {cls: "struct", text: structText(r)}));
    var pl = g(r, "placement"), plRows = [], plNodes = pl ? T.nodes[pl[2]] : 0;
    if (pl) {
      plRows.push(["proof", T.proof[pl[1]]]);
      plRows.push(["CPU fallback", pl[0] ? "disabled" : "allowed (CPU EP under test)"]);
      if (plNodes) plRows.push(["nodes", Object.keys(plNodes).map(function (k) { return k + " \u2192 " + plNodes[k]; }).join(", ")]);
    }
    var onnx = g(r, "onnx");
    var right = el("div", null,
      el("h4", {text: "ONNX"}), el("pre", {cls: "onnx-node", text: T.node[g(r, "node")] || "(no graph was built)"}),
      kvTable([["operator", op(r)], ["data type", dtype(r)], ["opset", fmt(g(r, "opset"))],
               ["ONNX-side options", onnx && Object.keys(onnx).length ? JSON.stringify(onnx) : ""],
               ["input family", family(r)], ["seed", fmt(g(r, "seed"))], ["EP", ep(r)], ["environment", env.title || ""],
               ["open points", (det.op || []).join(", ")],
               ["source", T.source ? T.source[g(r, "source")] || "" : ""]]),
      pl ? el("h4", {text: "Placement"}) : "", pl ? kvTable(plRows) : "");
    box.appendChild(el("div", {cls: "detail-grid"}, left, right));

    var stats = g(r, "stats");
    if (stats.length) {
      box.appendChild(el("h4", {text: "Statistics (EP under test vs reference)"}));
      box.appendChild(statsTable(stats));
    }
    if (det.cpu) {
      box.appendChild(el("h4", {text: "CPU EP side (" + (det.cpu.build || "") + ")"}));
      box.appendChild(kvTable([["verdict", det.cpu.verdict || "\u2014"], ["reason", det.cpu.reason || ""],
        ["labels", (det.cpu.labels || []).join(", ")]]));
      if (det.cpu.stats && det.cpu.stats.length) box.appendChild(statsTable(det.cpu.stats));
    }
    var outs = det.o || {}, firsts = el("div", {cls: "firsts"});
    box.appendChild(firsts);
    Object.keys(outs).forEach(function (name) {
      var o = outs[name];
      if (o.note) box.appendChild(el("p", {text: name + ": " + o.note}));
      if (o.first && o.first.length) {
        var hasCpu = o.first.some(function (f) { return "cpu" in f; });
        firsts.appendChild(el("div", null, el("h4", {text: "First mismatches of " + name + (o.labels && o.labels.length ? " [" + o.labels.join(", ") + "]" : "")}),
          el("table", {cls: "small first", "data-output": name},
          el("tr", null, el("th", {cls: "l", text: "index"}), el("th", {text: "EP"}), hasCpu ? el("th", {text: "CPU EP"}) : "", el("th", {text: "reference"})),
          o.first.map(function (f) {
            return el("tr", null, el("td", {cls: "l mono", text: "[" + (f.index || []).join(", ") + "]"}),
              el("td", {text: fmt(f.got)}), hasCpu ? el("td", {text: fmt(f.cpu)}) : "", el("td", {text: fmt(f.ref)}));
          }))));
      }
    });
    var maps = Object.keys(outs).filter(function (n) { return outs[n].heatmap && outs[n].heatmap.length; });
    if (maps.length) {
      box.appendChild(el("h4", {text: "Where the mismatches are: counts over the last two axes (rows: axis -2, columns: axis -1), summed over the other axes; large outputs in blocks"}));
      box.appendChild(el("div", null, maps.map(function (n) { return heatmap(n, outs[n].heatmap); })));
    }
    if (v === "PASS") box.appendChild(el("p", {cls: "muted", text: "No mismatch to show. Timings and the CPU side of passing cases are kept in results.jsonl only."}));
    if (det.tm) box.appendChild(el("p", {cls: "muted", text: "timings: " + Object.keys(det.tm).map(function (k) { return k + " " + det.tm[k]; }).join(", ")}));

    box.appendChild(el("h4", {text: "Repro script (Python)"}));
    var script = reproScript(r);
    var pre = el("pre", {cls: "repro", text: script});
    var copy = el("button", {type: "button", text: "copy"});
    copy.addEventListener("click", function (ev) {
      ev.stopPropagation();
      var done = function () { copy.textContent = "copied"; setTimeout(function () { copy.textContent = "copy"; }, 1500); };
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(script).then(done, function () { selectPre(pre); });
      else selectPre(pre);
    });
    var dl = el("a", {href: URL.createObjectURL(new Blob([script], {type: "text/x-python"})), download: "repro_" + r[0].replace(/[^A-Za-z0-9_.-]/g, "_") + ".py", text: "download"});
    box.appendChild(el("div", {cls: "repro-bar"}, copy, dl, el("span", {cls: "muted", text: "rebuilds the model and inputs with onnx_dml_bench, runs ONNX Runtime and prints the first differences"})));
    box.appendChild(pre);
    box.addEventListener("click", function (ev) { ev.stopPropagation(); });
    return box;
  }
  function selectPre(pre) {
    var range = document.createRange(); range.selectNodeContents(pre);
    var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
  }

  // ------------------------------------------------------------------ wiring
  function setFilters(f) {
    ["verdict", "op", "dtype", "ep", "attribution", "label", "family", "opset"].forEach(function (k) {
      F[k] = f[k] || "";
      var s = document.getElementById("f-" + k);
      if (s) {
        if (F[k] && !Array.prototype.some.call(s.options, function (o) { return o.value === F[k]; })) s.appendChild(el("option", {value: F[k], text: F[k]}));
        s.value = F[k];
      }
    });
    F.text = f.text || ""; document.getElementById("f-text").value = F.text;
    F.id = f.id || "";
    page = 0; apply();
  }

  function openCase(id) {
    setFilters({id: id, text: id});
    var body = document.getElementById("case-body");
    Array.prototype.forEach.call(body.querySelectorAll("tr.row"), function (tr) {
      if (tr.getAttribute("data-case") === id && !(tr.nextSibling && tr.nextSibling.classList && tr.nextSibling.classList.contains("detail"))) tr.click();
    });
    document.getElementById("cases").scrollIntoView();
  }

  function init() {
    fillSelect("f-verdict", distinct(verdict), function (a, b) { return VERDICT_ORDER[a] - VERDICT_ORDER[b]; }, [["!PASS", "not PASS"]]);
    fillSelect("f-op", distinct(op));
    fillSelect("f-dtype", distinct(dtype));
    fillSelect("f-ep", distinct(ep));
    if (!MULTI_EP) document.getElementById("f-ep-wrap").style.display = "none";
    fillSelect("f-attribution", distinct(attribution));
    fillSelect("f-label", distinct(function (r) { return g(r, "labels"); }));
    fillSelect("f-family", distinct(family));
    fillSelect("f-opset", distinct(function (r) { return g(r, "opset"); }), numOrder);
    var t = document.getElementById("f-text"), timer = null;
    t.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(function () { F.text = t.value.trim(); F.id = ""; page = 0; apply(); }, 150); });
    document.getElementById("f-reset").addEventListener("click", function () { setFilters({}); });
    renderHead();
    Array.prototype.forEach.call(document.querySelectorAll("#matrix td[data-op]"), function (td) {
      td.addEventListener("click", function () {
        setFilters({op: td.getAttribute("data-op"), dtype: td.getAttribute("data-dtype"),
                    ep: MULTI_EP ? td.getAttribute("data-ep") : "", verdict: td.getAttribute("data-verdict") || ""});
        document.getElementById("cases").scrollIntoView();
      });
    });
    Array.prototype.forEach.call(document.querySelectorAll("[data-filter-verdict]"), function (a) {
      a.addEventListener("click", function () { setFilters({verdict: a.getAttribute("data-filter-verdict")}); });
    });
    var fromHash = /^#case=(.+)$/.exec(location.hash);
    if (fromHash) openCase(decodeURIComponent(fromHash[1]));
    else apply();
    window.addEventListener("hashchange", function () {
      var m = /^#case=(.+)$/.exec(location.hash);
      if (m) openCase(decodeURIComponent(m[1]));
    });
    window.onnxDmlReport.readyMs = performance.now();
    document.body.setAttribute("data-ready", "1");
  }

  // a small API for scripted checks of the page
  window.onnxDmlReport = {
    data: DATA, setFilters: setFilters, openCase: openCase, shown: function () { return filtered.length; },
    reproScript: function (id) { var r = CASES.filter(function (c) { return c[0] === id; })[0]; return r ? reproScript(r) : null; },
    structText: function (id) { var r = CASES.filter(function (c) { return c[0] === id; })[0]; return r ? structText(r) : null; }
  };
  init();
}
