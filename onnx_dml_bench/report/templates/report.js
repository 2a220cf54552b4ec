/* onnx-dml-bench report: case list, filters, sorting, paging and case details, rendered from the
   JSON in #report-data. Every text from the data goes through textContent, never parsed as HTML. */
(function () {
  "use strict";
  // the case data is embedded gzip+base64 (inflated offline by unpack.js's onnxDmlInflate) or as
  // plain JSON; start() wires the tables once the page's packed markup is in place (onnxDmlUnpacked)
  var node = document.getElementById("report-data"), unpacked = window.onnxDmlUnpacked || Promise.resolve();
  if (node.getAttribute("data-encoding") !== "gzip+base64") {
    unpacked.then(function () { start(JSON.parse(node.textContent)); });
    return;
  }
  Promise.all([window.onnxDmlInflate(node), unpacked])
    .then(function (both) {
      if (window.performance && performance.mark) performance.mark("report-data-inflated");
      var data = JSON.parse(both[0]);
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

function rowsOf(columns) {
  var n = columns.length ? columns[0].length : 0, rows = new Array(n);
  for (var i = 0; i < n; i++) {
    var row = rows[i] = new Array(columns.length);
    for (var c = 0; c < columns.length; c++) row[c] = columns[c][i];
  }
  return rows;
}

function start(DATA) {
  "use strict";
  if (DATA.layout === "columns") DATA.cases = rowsOf(DATA.cases);   // stored by column (report/html.py packed_json)
  var T = DATA.tables, COL = {}, SCOL = {};
  DATA.columns.forEach(function (c, i) { COL[c] = i; });
  DATA.stat_columns.forEach(function (c, i) { SCOL[c] = i; });
  var CASES = DATA.cases;
  var VERDICT_ORDER = {};
  T.verdict.forEach(function (v, i) { VERDICT_ORDER[v] = i; });
  var MULTI_EP = T.ep.filter(function (e) { return e !== ""; }).length > 1;
  var LABELS = DATA.labels || {};
  var SVGNS = "http://www.w3.org/2000/svg";

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
  function svg(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs || {}) if (Object.prototype.hasOwnProperty.call(attrs, k)) {
      if (k === "text") e.textContent = attrs[k]; else e.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; i++) if (arguments[i]) e.appendChild(arguments[i]);
    return e;
  }
  function tip(node, text) { node.appendChild(svg("title", {text: text})); return node; }
  // text with a line-break opportunity after "_", ":" and "/": a narrow cell breaks it there, never inside a word
  function breakable(text, hyphens) {
    var out = [], parts = String(text).split(hyphens ? /([-_:\/])/ : /([_:\/])/);
    parts.forEach(function (p) { if (!p) return; out.push(p); if (p.length === 1 && "_:/-".indexOf(p) >= 0) out.push(el("wbr")); });
    return out;
  }
  function badge(v) { return el("span", {cls: "badge", style: "background:" + (DATA.colours[v] || "#57606a")}, breakable(v)); }
  function fmt(x) {
    if (x === null || x === undefined || x === "") return "";
    return String(x);   // numbers in full (shortest round-trip form): ULP-sized differences stay visible
  }
  // a multiple of the error bound as the reasons write it: 3 significant digits (682.79 -> 683x)
  function ratio(x) {
    if (typeof x !== "number") return fmt(x);
    if (!isFinite(x)) return String(x);
    return (Math.abs(x) >= 100 ? Math.round(x).toString() : String(+x.toPrecision(3))) + "x";
  }
  function labelText(l, opName) {
    var info = LABELS[l];
    if (!info) return "";
    var texts = info[1] || {};
    if (opName && texts[opName]) return texts[opName];
    var keys = Object.keys(texts);
    return keys.map(function (k) { return (k && keys.length > 1 ? k + ": " : "") + texts[k]; }).join("\n");
  }
  function labelChip(l, opName) {
    var info = LABELS[l], group = info ? info[0] : "other", text = labelText(l, opName);
    return el("span", {cls: "label g-" + group, title: text ? l + ": " + text : l, "data-label": l}, breakable(l));
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
  function parties(row) { return (g(row, "parties") || []).map(function (i) { return T.party[i]; }); }
  function fwClass(row) { return T.fw[g(row, "fw")] || ""; }
  function shortEp(e) { return String(e || "").replace(/ExecutionProvider$/, ""); }
  // a lane as the report names it everywhere ("DirectML (direct)", "DML EP", "CPU EP"), and its place in lists
  function laneName(e) { return (DATA.lanes && DATA.lanes[e] && DATA.lanes[e].title) || shortEp(e); }
  function laneOrder(e) { return DATA.lanes && DATA.lanes[e] ? DATA.lanes[e].order : 50; }
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
  function maxBound(row) {
    var best = null;
    g(row, "stats").forEach(function (s) {
      var b = s[SCOL.bound_ratio];
      if (s[SCOL.kind] === "bound" && typeof b === "number" && (best === null || b > best)) best = b;
    });
    return best;
  }
  function descriptor(row) {
    var fields = (DATA.ops[op(row)] || {fields: []}).fields, vals = g(row, "descriptor"), d = {};
    fields.forEach(function (f, i) { if (i < vals.length && vals[i] !== undefined) d[f] = vals[i]; });
    return d;
  }

  // ------------------------------------------------------------------ filters
  var F = {text: "", verdict: "", op: "", dtype: "", ep: "", attribution: "", label: "", family: "", opset: "",
           party: "", fw: "", id: "", chosen: null, chosenText: ""};
  var sortKey = "default", sortDir = 1, page = 0, pageSize = 100, openIds = {};
  var filtered = [];

  function distinct(fn) {
    var s = {};
    CASES.forEach(function (r) { var v = fn(r); (Array.isArray(v) ? v : [v]).forEach(function (x) { if (x !== "" && x !== null && x !== undefined) s[x] = (s[x] || 0) + 1; }); });
    return s;
  }
  function fillSelect(id, counts, order, extra, name) {
    var s = document.getElementById(id);
    s.appendChild(el("option", {value: "", text: "all"}));
    (extra || []).forEach(function (o) { s.appendChild(el("option", {value: o[0], text: o[1]})); });
    var keys = Object.keys(counts);
    keys.sort(order || function (a, b) { return a < b ? -1 : a > b ? 1 : 0; });
    keys.forEach(function (k) { s.appendChild(el("option", {value: k, text: (name ? name(k) : k) + " (" + counts[k] + ")"})); });
    s.addEventListener("change", function () { F[id.slice(2)] = s.value; F.id = ""; page = 0; apply(); });
  }
  function numOrder(a, b) { return (+a) - (+b); }

  function matches(r, i) {
    if (F.chosen && !F.chosen[i]) return false;
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
    if (F.party && parties(r).indexOf(F.party) < 0) return false;
    if (F.fw && fwClass(r) !== F.fw) return false;
    if (F.text) {
      var hay = (r[0] + "\n" + g(r, "reason") + "\n" + T.node[g(r, "node")] + "\n" + g(r, "labels").join(" ") + "\n" + op(r) + " " + dtype(r) +
                 "\n" + (T.source ? T.source[g(r, "source")] || "" : "")).toLowerCase();
      var words = F.text.toLowerCase().split(/\s+/);
      for (var k = 0; k < words.length; k++) if (words[k] && hay.indexOf(words[k]) < 0) return false;
    }
    return true;
  }

  var COLUMNS = [
    // widths live in report.css (.c-KEY): every column fits the table's box at 1000 px and wider
    {key: "verdict", label: "verdict", get: function (r) { return VERDICT_ORDER[verdict(r)]; }},
    {key: "id", label: "case", get: function (r) { return r[0]; }},
    {key: "op", label: "operator, data type", get: function (r) { return op(r) + " " + dtype(r); }},
    {key: "ep", label: "EP", get: ep, multi: true},
    {key: "opset", label: "opset, inputs", get: function (r) { return g(r, "opset"); }},
    {key: "labels", label: "labels", get: function (r) { return g(r, "labels").join(","); }},
    {key: "mism", label: "mismatches", get: function (r) { var m = mism(r); return m ? m[0] : -1; }},
    {key: "ulp", label: "max ULP / bound", get: function (r) { var u = maxUlp(r); return u === null ? -1 : u; }}
  ].filter(function (c) { return !c.multi || MULTI_EP; });

  function sortRows(rows) {
    if (sortKey === "default") {
      // failures first, then by operator, data type, id
      return rows.sort(function (a, b) {
        var pa = verdict(a) === "PASS" ? 1 : 0, pb = verdict(b) === "PASS" ? 1 : 0;
        if (pa !== pb) return pa - pb;
        var va = VERDICT_ORDER[verdict(a)], vb = VERDICT_ORDER[verdict(b)];
        if (va !== vb) return va - vb;
        if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
        return ep(a) < ep(b) ? -1 : ep(a) > ep(b) ? 1 : 0;
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
    var cols = document.getElementById("case-cols");
    COLUMNS.forEach(function (c) {
      cols.appendChild(el("col", {cls: "c-" + c.key}));
      var th = el("th", {"data-key": c.key, title: "sort by " + c.label, cls: "c-" + c.key}, c.label);
      th.addEventListener("click", function () {
        if (sortKey === c.key) sortDir = -sortDir; else { sortKey = c.key; sortDir = 1; }
        Array.prototype.forEach.call(tr.children, function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
        th.classList.add(sortDir > 0 ? "sorted-asc" : "sorted-desc");
        page = 0; apply();
      });
      tr.appendChild(th);
    });
  }

  function errText(r) {
    var b = maxBound(r), u = maxUlp(r);
    if (b !== null) return [ratio(b).replace(/x$/, "") + "\u00d7 bound", u === null ? null : u + " ULP"];
    return [u === null ? "" : String(u), null];
  }

  function renderRows() {
    var body = document.getElementById("case-body");
    body.textContent = "";
    var start = page * pageSize, rows = filtered.slice(start, start + pageSize);
    rows.forEach(function (r) {
      var tr = el("tr", {cls: "row", "data-case": r[0], "data-verdict": verdict(r), "data-ep": ep(r)});
      COLUMNS.forEach(function (c) {
        var td;
        if (c.key === "verdict") td = el("td", null, badge(verdict(r)),
          attribution(r) ? el("div", null, el("span", {cls: "attr", title: DATA.attribution_text[attribution(r)] || ""}, breakable(attribution(r)))) : "");
        else if (c.key === "id") td = el("td", {cls: "id"}, el("div", {cls: "case-id"}, breakable(r[0], true)));
        else if (c.key === "op") td = el("td", null, el("div", null, breakable(op(r))), el("div", {cls: "muted", text: dtype(r)}));
        else if (c.key === "ep") td = el("td", {title: ep(r)}, breakable(laneName(ep(r))));
        else if (c.key === "opset") td = el("td", null, el("div", {text: "opset " + g(r, "opset")}), el("div", {cls: "muted"}, breakable(family(r))));
        else if (c.key === "labels") td = el("td", null, g(r, "labels").map(function (l) { return labelChip(l, op(r)); }));
        else if (c.key === "mism") { var m = mism(r); td = m ? el("td", {cls: "num"}, m[0] + "/", el("wbr"), String(m[1])) : el("td", {cls: "num"}); }
        else if (c.key === "ulp") { var e = errText(r); td = el("td", {cls: "num", title: e[1] || ""}, e[0], e[1] ? el("div", {cls: "muted", text: e[1]}) : ""); }
        else td = el("td", {text: fmt(c.get(r))});
        td.classList.add("c-" + c.key);
        tr.appendChild(td);
      });
      tr.addEventListener("click", function () { toggle(r, tr); });
      body.appendChild(tr);
      var reason = g(r, "reason"), ps = parties(r).filter(function (p) { return p !== "not-run"; });
      if (reason || ps.length) {
        var rtr = el("tr", {cls: "reason-row", "data-case": r[0]}, el("td", {cls: "c-verdict"}),
          el("td", {colspan: COLUMNS.length - 1, cls: "reason-line"},
            ps.length ? el("span", {cls: "party-tags"}, ps.map(function (p) {
              var info = DATA.parties[p] || {title: p, text: ""};
              return el("span", {cls: "party-tag p-" + p.replace(/[^a-z-]/g, ""), title: info.text}, "at fault: " + info.title);
            })) : "",
            reason ? el("span", {cls: "reason-text", text: reason}) : ""));
        rtr.addEventListener("click", function () { toggle(r, tr); });
        body.appendChild(rtr);
      }
      if (openIds[key(r)]) toggle(r, tr, true);
    });
    if (!rows.length) body.appendChild(el("tr", null, el("td", {colspan: COLUMNS.length, cls: "muted", text: "No case matches the filters."})));
  }
  function key(r) { return r[0] + "\u0000" + ep(r) + "\u0000" + g(r, "env"); }

  function renderPagers(pages) {
    var ids = {};
    filtered.forEach(function (r) { ids[r[0]] = 1; });
    var nCases = Object.keys(ids).length;
    ["pager-top", "pager-bottom"].forEach(function (id) {
      var p = document.getElementById(id);
      p.textContent = "";
      var from = filtered.length ? page * pageSize + 1 : 0, to = Math.min(filtered.length, (page + 1) * pageSize);
      var info = el("span", {cls: "count", "data-shown": String(filtered.length), "data-cases": String(nCases),
        text: "Showing " + from + "\u2013" + to + " of " + filtered.length + " record" + (filtered.length === 1 ? "" : "s") +
              (nCases !== filtered.length ? " (" + nCases + " case" + (nCases === 1 ? "" : "s") + ")" : "") +
              (filtered.length !== CASES.length ? ", filtered from " + CASES.length : "") +
              (F.chosen ? "; chosen in a chart: " + F.chosenText : "")});
      var prev = el("button", {type: "button", text: "\u2190 previous"}); prev.disabled = page === 0;
      var next = el("button", {type: "button", text: "next \u2192"}); next.disabled = page >= pages - 1;
      prev.addEventListener("click", function () { page--; apply(); });
      next.addEventListener("click", function () { page++; apply(); });
      var size = el("select", {title: "records per page"});
      [50, 100, 250, 1000].forEach(function (n) { var o = el("option", {value: String(n), text: n + " per page"}); if (n === pageSize) o.selected = true; size.appendChild(o); });
      size.addEventListener("change", function () { pageSize = +size.value; page = 0; apply(); });
      add(p, [prev, el("span", {cls: "page", text: "page " + (page + 1) + " of " + pages}), next, size, info]);
    });
  }

  // ------------------------------------------------------------------ details
  function toggle(r, tr, force) {
    var next = tr.nextSibling;
    if (next && next.classList && next.classList.contains("reason-row")) next = next.nextSibling;
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
    var after = tr.nextSibling && tr.nextSibling.classList && tr.nextSibling.classList.contains("reason-row") ? tr.nextSibling : tr;
    tr.parentNode.insertBefore(el("tr", {cls: "detail", "data-case": r[0]}, td), after.nextSibling);
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
    var head = ["output", "kind", "match", "mismatches", "max abs", "max ULP", "x error bound", "tolerance ULP", "smallest passing ULP"];
    return el("table", {cls: "small stats"},
      el("tr", null, head.map(function (h, i) { return el("th", {cls: i < 2 ? "l" : "", text: h}); })),
      stats.map(function (s) {
        return el("tr", null,
          el("td", {cls: "l", text: s[SCOL.output]}), el("td", {cls: "l", text: fmt(s[SCOL.kind])}),
          el("td", {text: s[SCOL.match] ? "yes" : "no"}),
          el("td", {text: fmt(s[SCOL.mismatches]) + " / " + fmt(s[SCOL.total])}),
          el("td", {text: fmt(s[SCOL.max_abs])}), el("td", {text: fmt(s[SCOL.max_ulp])}),
          el("td", {text: s[SCOL.kind] === "bound" ? ratio(s[SCOL.bound_ratio]) : "", title: s[SCOL.kind] === "bound" ? fmt(s[SCOL.bound_ratio]) : ""}),
          el("td", {text: s[SCOL.kind] === "bound" ? "" : fmt(s[SCOL.tolerance_ulp])}), el("td", {text: fmt(s[SCOL.min_passing_ulp])}));
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

  // ------------------------------------------------------------------ value grids (report/grids.py)
  function num(v) {
    if (v === "nan") return NaN;
    if (v === "inf") return Infinity;
    if (v === "-inf") return -Infinity;
    if (v === "-0.0") return -0;
    return v;
  }
  function short(v) {
    var x = num(v);
    if (x !== x) return "NaN";
    if (x === Infinity) return "inf";
    if (x === -Infinity) return "-inf";
    if (x === 0) return 1 / x < 0 ? "-0" : "0";
    var a = Math.abs(x);
    if (Number.isInteger(x) && a < 1e4) return String(x);
    if (a >= 1e4 || a < 1e-3) return x.toExponential(1).replace("e+", "e");
    return String(+x.toPrecision(3));
  }
  function colour(x, lo, hi) {
    if (x !== x) return "#b8bcc2";
    if (x === Infinity) return "#67000d";
    if (x === -Infinity) return "#08306b";
    var t = hi > lo ? (x - lo) / (hi - lo) : 0.5;
    t = Math.max(0, Math.min(1, t));
    // a light-to-dark blue ramp: readable numbers on every shade
    var r = Math.round(247 - t * (247 - 33)), gg = Math.round(251 - t * (251 - 102)), b = Math.round(255 - t * (255 - 172));
    return "rgb(" + r + "," + gg + "," + b + ")";
  }
  function range(panels) {
    var lo = Infinity, hi = -Infinity;
    panels.forEach(function (p) { (p || []).forEach(function (row) { row.forEach(function (v) { var x = num(v); if (isFinite(x)) { lo = Math.min(lo, x); hi = Math.max(hi, x); } }); }); });
    return lo === Infinity ? [0, 1] : [lo, hi];
  }
  function gridPanel(title, values, r0, c0, lo, hi, bad, badCls) {
    var rows = values.length, cols = rows ? values[0].length : 0, chars = 1;
    values.forEach(function (row) { row.forEach(function (v) { chars = Math.max(chars, short(v).length); }); });
    // cells wide enough for their numbers (when they are shown at all), at most 44 px
    var cell = Math.max(14, Math.min(34, Math.floor(300 / Math.max(cols, rows, 1))));
    if (cell >= 26) cell = Math.min(44, Math.max(cell, chars * 6 + 6));
    var left = 26, top = 18, w = left + cols * cell + 2, h = top + rows * cell + 2;
    var s = svg("svg", {width: w, height: h, viewBox: "0 0 " + w + " " + h, "class": "grid-svg", role: "img", "aria-label": title});
    var isBad = {};
    (bad || []).forEach(function (b) { isBad[b[0] + "," + b[1]] = true; });
    var step = Math.max(1, Math.ceil(16 / cell));
    for (var c = 0; c < cols; c += step) s.appendChild(svg("text", {x: left + c * cell + cell / 2, y: 12, "class": "axis", "text-anchor": "middle", text: String(c0 + c)}));
    for (var rr = 0; rr < rows; rr += step) s.appendChild(svg("text", {x: left - 4, y: top + rr * cell + cell / 2 + 4, "class": "axis", "text-anchor": "end", text: String(r0 + rr)}));
    values.forEach(function (row, y) {
      row.forEach(function (v, x) {
        var val = num(v), k = y + "," + x;
        var rect = svg("rect", {x: left + x * cell, y: top + y * cell, width: cell - 1, height: cell - 1, fill: colour(val, lo, hi),
          "class": isBad[k] ? "cell " + badCls : "cell"});
        tip(rect, title + " [" + (r0 + y) + ", " + (c0 + x) + "] = " + (typeof v === "string" ? v : String(v)) + (isBad[k] ? " (differs from the reference)" : ""));
        s.appendChild(rect);
        if (cell >= 26) {
          var dark = isFinite(val) && hi > lo && (val - lo) / (hi - lo) > 0.55;
          s.appendChild(svg("text", {x: left + x * cell + cell / 2, y: top + y * cell + cell / 2 + 4, "text-anchor": "middle",
            "class": "val" + (dark || !isFinite(val) ? " on-dark" : ""), text: short(v)}));
        }
      });
    });
    return el("figure", {cls: "grid-panel"}, s, el("figcaption", {text: title}));
  }
  function legendBar(lo, hi, label) {
    var w = 220, s = svg("svg", {width: w + 150, height: 34, "class": "grid-legend", role: "img", "aria-label": "colour scale"});
    var defs = svg("defs"), grad = svg("linearGradient", {id: "ramp-" + (++legendBar.n), x1: 0, x2: 1, y1: 0, y2: 0});
    [0, 0.5, 1].forEach(function (t) { grad.appendChild(svg("stop", {offset: t, "stop-color": colour(lo + t * (hi - lo), lo, hi)})); });
    defs.appendChild(grad); s.appendChild(defs);
    s.appendChild(svg("rect", {x: 0, y: 4, width: w, height: 10, fill: "url(#ramp-" + legendBar.n + ")", stroke: "#d1d9e0"}));
    s.appendChild(svg("text", {x: 0, y: 28, "class": "axis", text: short(lo)}));
    s.appendChild(svg("text", {x: w, y: 28, "class": "axis", "text-anchor": "end", text: short(hi)}));
    s.appendChild(svg("text", {x: w / 2, y: 28, "class": "axis", "text-anchor": "middle", text: label}));
    [["#b8bcc2", "NaN"], ["#67000d", "+inf"], ["#08306b", "-inf"]].forEach(function (p, i) {
      s.appendChild(svg("rect", {x: w + 12 + i * 46, y: 4, width: 10, height: 10, fill: p[0]}));
      s.appendChild(svg("text", {x: w + 25 + i * 46, y: 13, "class": "axis", text: p[1]}));
    });
    return s;
  }
  legendBar.n = 0;
  function lead(idx) { return idx && idx.length ? "[" + idx.join(", ") + ", :, :]" : ""; }
  function grids(gd, r) {
    var box = el("div", {cls: "grids", "data-output": gd.output});
    var outs = [gd.ep, gd.cpu, gd.ref], rg = range(outs);
    var epName = shortEp(ep(r)) || "EP";
    var title = gd.output + lead(gd.lead) + " of an output of shape " + gd.shape.join("\u00d7") + (gd.semantics === "dml" ? " (DirectML semantics)" : "");
    box.appendChild(el("h4", {text: "Values: input, " + epName + ", CPU EP and reference side by side"}));
    box.appendChild(el("p", {cls: "muted", text: title + ". Rebuilt from the case's seeded inputs and the reference, with the recorded " +
      "mismatches put in (checked against them). Outlined cells differ from the reference (red: " + epName + ", orange: CPU EP)."}));
    var row = el("div", {cls: "grid-row"});
    if (gd.input) {
      var ir = range([gd.input.values]);
      row.appendChild(el("div", {cls: "grid-col"},
        gridPanel("input " + gd.input.name + lead(gd.input.lead) + " of " + gd.input.shape.join("\u00d7"), gd.input.values, gd.input.r0, gd.input.c0, ir[0], ir[1], [], ""),
        legendBar(ir[0], ir[1], "input"),
        gd.input.roi ? el("p", {cls: "muted", text: "ROI: " + JSON.stringify(gd.input.roi) + " (batch, x1, y1, x2, y2)"}) : ""));
    }
    var outCol = el("div", {cls: "grid-col"});
    var panels = el("div", {cls: "grid-row"});
    if (gd.ep) panels.appendChild(gridPanel(epName + " (EP under test)", gd.ep, gd.r0, gd.c0, rg[0], rg[1], gd.bad, "bad-ep"));
    if (gd.cpu) panels.appendChild(gridPanel("CPU EP", gd.cpu, gd.r0, gd.c0, rg[0], rg[1], gd.cpu_bad, "bad-cpu"));
    panels.appendChild(gridPanel("reference", gd.ref, gd.r0, gd.c0, rg[0], rg[1], [], ""));
    outCol.appendChild(panels);
    outCol.appendChild(legendBar(rg[0], rg[1], gd.output));
    if (!gd.cpu && r && det(r).cpu) outCol.appendChild(el("p", {cls: "muted", text: "The CPU EP's slice is not shown: its record does not list every mismatch of this slice."}));
    row.appendChild(outCol);
    box.appendChild(row);
    return box;
  }
  function det(r) { return g(r, "detail") || {}; }

  function detail(r) {
    var dt = det(r), v = verdict(r), a = attribution(r), env = DATA.envs[g(r, "env")] || {};
    var box = el("div", {cls: "detail"});
    var head = el("div", null, badge(v), " ", a ? el("span", {cls: "attr", text: a, title: DATA.attribution_text[a] || ""}) : "",
      " ", el("code", {text: r[0]}), " ",
      el("a", {href: "#case=" + encodeURIComponent(r[0]), text: "link"}));
    box.appendChild(head);
    box.appendChild(el("p", {cls: "muted", text: DATA.verdict_text[v] || ""}));
    if (a) box.appendChild(el("p", {cls: "muted", text: a + ": " + (DATA.attribution_text[a] || "")}));
    parties(r).forEach(function (p) {
      var info = DATA.parties[p];
      if (info && p !== "not-run") box.appendChild(el("p", {cls: "party-line", text: "At fault: " + info.title + " \u2014 " + info.text}));
    });
    // the reason once: while the case is open its reason row is hidden; here one part a line (what differs,
    // then the rule that decides, then the open points it also touches)
    if (g(r, "reason")) box.appendChild(el("div", {cls: "reason-full", text: g(r, "reason").split(" | ").join("\n")}));
    if (dt.fw) box.appendChild(el("p", {cls: "fourway", text: dt.fw}));   // four-way attribution
    if (dt.runs) box.appendChild(el("p", {cls: "runs", text: "runs: " + dt.runs}));   // repeats, the re-run alone
    if (dt.rerun) box.appendChild(el("p", {cls: "rerun", text: "run again: " + dt.rerun}));   // its batch lost its worker
    if (dt.triage) box.appendChild(el("p", {cls: "triage"}, "triage: ",   // shrunk case and bug-report bundle (outdir.triage_links)
      dt.triage.shrunk ? el("a", {href: dt.triage.shrunk, text: "shrunk case"}) : "no shrunk case", " \u00b7 ",
      dt.triage.bundle ? el("a", {href: dt.triage.bundle, text: "bundle"}) : el("code", {text: dt.triage.cmd || ""}),
      dt.triage.of ? el("span", {cls: "muted", text: " (of " + dt.triage.of + ": triage took that case of the same failure signature)"}) : "",
      !dt.triage.bundle && dt.triage.cmd ? el("span", {cls: "muted", text: " (in the results' folder)"}) : ""));
    var labs = g(r, "labels");
    if (labs.length) {
      box.appendChild(el("h4", {text: "Labels"}));
      box.appendChild(el("dl", {cls: "legend case-labels"}, labs.map(function (l) {
        return [el("dt", null, labelChip(l, op(r))), el("dd", {text: labelText(l, op(r)) || "\u2014"})];
      })));
    }

    if (dt.grid) box.appendChild(grids(dt.grid, r));

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
               ["open points", (dt.op || []).join(", ")],
               ["source", T.source ? T.source[g(r, "source")] || "" : ""]]),
      pl ? el("h4", {text: "Placement"}) : "", pl ? kvTable(plRows) : "");
    box.appendChild(el("div", {cls: "detail-grid"}, left, right));

    var stats = g(r, "stats");
    if (stats.length) {
      box.appendChild(el("h4", {text: "Statistics (EP under test vs reference)"}));
      box.appendChild(statsTable(stats));
    }
    if (dt.cpu) {
      box.appendChild(el("h4", {text: "CPU EP side (" + (dt.cpu.build || "") + ")"}));
      box.appendChild(kvTable([["verdict", dt.cpu.verdict || "\u2014"], ["reason", dt.cpu.reason || ""],
        ["labels", (dt.cpu.labels || []).join(", ")]]));
      if (dt.cpu.stats && dt.cpu.stats.length) box.appendChild(statsTable(dt.cpu.stats));
    }
    var outs = dt.o || {}, firsts = el("div", {cls: "firsts"});
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
    if (v === "PASS" && !dt.cpu) box.appendChild(el("p", {cls: "muted", text: "No mismatch to show. Timings and the CPU side of passing cases are kept in results.jsonl only."}));
    if (dt.tm) box.appendChild(el("p", {cls: "muted", text: "timings: " + Object.keys(dt.tm).map(function (k) { return k + " " + dt.tm[k]; }).join(", ")}));

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

  // ------------------------------------------------------------------ charts (inline SVG, drawn here)
  // the pass rate per operator and lane: each bar is one lane's cases of one operator, 100% wide, split by
  // verdict (a lane's few failures stay visible beside another lane's many cases); the rate is written
  function verdictChart() {
    var host = document.getElementById("chart-verdicts");
    if (!host) return;
    var counts = {}, opsSeen = {}, epsSeen = {}, vSeen = {};
    CASES.forEach(function (r) {
      var k = op(r) + "\u0000" + ep(r), v = verdict(r);
      counts[k] = counts[k] || {};
      counts[k][v] = (counts[k][v] || 0) + 1;
      opsSeen[op(r)] = 1; epsSeen[ep(r)] = 1; vSeen[v] = 1;
    });
    var ops = Object.keys(opsSeen).sort();
    var eps = Object.keys(epsSeen).sort(function (a, b) { return laneOrder(a) - laneOrder(b) || (a < b ? -1 : 1); });
    var verdicts = Object.keys(vSeen).sort(function (a, b) { return VERDICT_ORDER[a] - VERDICT_ORDER[b]; });
    var W = Math.max(600, Math.min(1100, host.clientWidth || 900)), labelW = 270, rateW = 190, barW = W - labelW - rateW, bh = 16, gap = 4;
    var rows = [];
    ops.forEach(function (o) { eps.forEach(function (e) { if (counts[o + "\u0000" + e]) rows.push([o, e]); }); });
    var legendRows = [], lx = labelW, line = [];
    verdicts.forEach(function (v) {    // the legend, wrapped to the chart's width
      var w = 14 + v.length * 7.2 + 10;
      if (lx + w > W && line.length) { legendRows.push(line); line = []; lx = labelW; }
      line.push([v, lx]); lx += w;
    });
    if (line.length) legendRows.push(line);
    var top = 8 + legendRows.length * 16;
    var H = top + rows.length * (bh + gap) + (ops.length - 1) * 8 + 6;
    var s = svg("svg", {width: W, height: H, viewBox: "0 0 " + W + " " + H, "class": "chart-svg", role: "img", "aria-label": "pass rate per operator and lane"});
    legendRows.forEach(function (ln, k) {
      ln.forEach(function (p) {
        s.appendChild(svg("rect", {x: p[1], y: 4 + k * 16, width: 10, height: 10, fill: DATA.colours[p[0]] || "#57606a"}));
        s.appendChild(svg("text", {x: p[1] + 14, y: 13 + k * 16, "class": "axis", text: p[0]}));
      });
    });
    var y = top, prevOp = null;
    rows.forEach(function (pair) {
      var o = pair[0], e = pair[1], c = counts[o + "\u0000" + e], x = labelW, total = 0;
      verdicts.forEach(function (v) { total += c[v] || 0; });
      if (prevOp !== null && o !== prevOp) y += 8;
      if (o !== prevOp) s.appendChild(svg("text", {x: 0, y: y + bh - 4, "class": "op-label", text: o}));
      s.appendChild(svg("text", {x: labelW - 6, y: y + bh - 4, "class": "axis", "text-anchor": "end", text: laneName(e)}));
      var shown = verdicts.filter(function (v) { return c[v]; }), slivers = 0;
      shown.forEach(function (v) { if (c[v] / total * barW < 3) slivers += 3 - c[v] / total * barW; });
      shown.forEach(function (v) {
        var n = c[v];
        // a share too thin to see gets 3 px, taken from the widest segment's room
        var w = Math.max(3, n / total * (barW - slivers));
        var rect = svg("rect", {x: x, y: y, width: w, height: bh, fill: DATA.colours[v] || "#57606a", "class": "seg",
          "data-op": o, "data-ep": e, "data-verdict": v, "data-n": n, "data-rate": n / total});
        tip(rect, o + " on " + laneName(e) + ": " + v + " " + n + " of " + total + " (" + pct(n, total) + ")");
        rect.addEventListener("click", function () {
          setFilters({op: o, ep: MULTI_EP ? e : "", verdict: v});
          document.getElementById("cases").scrollIntoView();
        });
        s.appendChild(rect);
        if (w > 40) s.appendChild(svg("text", {x: x + w / 2, y: y + bh - 4, "text-anchor": "middle", "class": "seg-n", text: pct(n, total)}));
        x += w;
      });
      var pass = c.PASS || 0, fail = (c.FAIL || 0) + (c.FLAKY || 0);
      s.appendChild(svg("text", {x: labelW + barW + 6, y: y + bh - 4, "class": "axis rate", "data-rate": pass / total,
        text: pct(pass, total) + " pass" + (fail ? ", " + pct(fail, total) + " fail" : "") + " of " + total}));
      prevOp = o; y += bh + gap;
    });
    host.textContent = "";
    host.appendChild(s);
  }
  // a share as a percentage that is never rounded to 0% or 100% when it is neither
  function pct(n, total) {
    if (n === total) return "100%";
    if (n === 0) return "0%";
    var p = 100 * n / total, d = p < 1 || p > 99 ? 2 : p < 10 || p > 90 ? 1 : 0, t = p.toFixed(d);
    if (+t >= 100) t = (100 - Math.pow(10, -d)).toFixed(d);
    if (+t <= 0) t = Math.pow(10, -d).toFixed(d);
    return t + "%";
  }

  // the worst output of a compared case: [kind of scale, bin index, passed]
  // an output of another shape (or type, or none) has no distance: a bin of its own, never "+-0"
  var ULP_BINS = ["0", "1", "2\u20133", "4\u201315", "16\u2013255", "256\u201365535", "\u2265 65536", "\u00b10", "NaN", "wrong shape"];
  var BOUND_BINS = ["0", "\u2264 1/64", "\u2264 1/16", "\u2264 1/4", "\u2264 1", "\u2264 4", "\u2264 16", "\u2264 256", "> 256", "NaN / inf", "wrong shape"];
  function ulpBin(s) {
    var u = s[SCOL.max_ulp];
    if (typeof u !== "number") u = s[SCOL.max_abs];   // integer outputs: the difference itself, in units
    if (s[SCOL.mismatches] === 0) return 0;
    if (s[SCOL.wrong_shape]) return ULP_BINS.length - 1;
    if (s[SCOL.nan_mismatches]) return 8;                   // a NaN against a number: no distance
    if (typeof u !== "number" || u === 0) return 7;         // another zero sign (or no float distance)
    if (u === 1) return 1;
    if (u <= 3) return 2;
    if (u <= 15) return 3;
    if (u <= 255) return 4;
    if (u <= 65535) return 5;
    return 6;
  }
  function boundBin(s) {
    var b = s[SCOL.bound_ratio];
    if (s[SCOL.mismatches] === 0 && (b === null || b === undefined || b === 0)) return 0;
    if (s[SCOL.wrong_shape]) return BOUND_BINS.length - 1;
    if (typeof b !== "number") return BOUND_BINS.length - 2;
    if (b === 0) return 0;
    var lim = [1 / 64, 1 / 16, 1 / 4, 1, 4, 16, 256];
    for (var i = 0; i < lim.length; i++) if (b <= lim[i]) return i + 1;
    return 8;
  }
  function errorOf(r) {
    var best = null;
    g(r, "stats").forEach(function (s) {
      if (s[SCOL.kind] === "indices") return;
      var e = s[SCOL.kind] === "bound" ? ["bound", boundBin(s)] : ["ulp", ulpBin(s)];
      if (best === null || e[1] > best[1]) best = e;
    });
    return best;
  }
  function errorCharts() {
    var host = document.getElementById("chart-errors"), sel = document.getElementById("errors-lane");
    if (!host) return;
    if (!sel.options.length) {
      // the lanes under test first (DirectML's); the CPU EP's known deviations are not mixed in by default
      var lanes = Object.keys(distinct(ep)).sort(function (a, b) { return laneOrder(a) - laneOrder(b) || (a < b ? -1 : 1); });
      lanes.forEach(function (e) { sel.appendChild(el("option", {value: e, text: laneName(e)})); });
      if (lanes.length > 1) sel.appendChild(el("option", {value: "", text: "all lanes"}));
      sel.value = lanes.length ? lanes[0] : "";
      sel.addEventListener("change", errorCharts);
    }
    var lane = sel.value, by = {};
    CASES.forEach(function (r, i) {
      var v = verdict(r);
      if ((v !== "PASS" && v !== "FAIL") || (lane && ep(r) !== lane)) return;
      var e = errorOf(r);
      if (!e) return;
      var k = op(r) + "\u0000" + e[0];
      var d = by[k] = by[k] || {op: op(r), kind: e[0], bins: {}};
      var cell = d.bins[e[1]] = d.bins[e[1]] || {PASS: [], FAIL: []};
      cell[v].push(i);
    });
    host.textContent = "";
    Object.keys(by).sort().forEach(function (k) { host.appendChild(histogram(by[k])); });
    if (!host.children.length) host.appendChild(el("p", {cls: "muted", text: "No compared case on this lane."}));
  }
  function histogram(d) {
    // the allowed limit lies after the bins "0" (exact: bit for bit) or "<= 1" (within the bound)
    var labels = d.kind === "bound" ? BOUND_BINS : ULP_BINS, limit = d.kind === "bound" ? 5 : 1;
    var W = 360, H = 248, left = 36, bottom = 64, top = 62, bw = (W - left - 8) / labels.length;
    var max = 1;
    labels.forEach(function (_, i) { var c = d.bins[i]; if (c) max = Math.max(max, c.PASS.length + c.FAIL.length); });
    var ly = function (n) { return n <= 0 ? 0 : Math.log10(n + 1) / Math.log10(max + 1) * (H - top - bottom); };
    var s = svg("svg", {width: W, height: H, viewBox: "0 0 " + W + " " + H, "class": "chart-svg hist", role: "img",
      "aria-label": d.op + " error distribution", "data-op": d.op, "data-kind": d.kind});
    s.appendChild(svg("text", {x: 0, y: 14, "class": "op-label", text: d.op}));
    // the caption on a line of its own: never over the operator's name
    s.appendChild(svg("text", {x: 0, y: 30, "class": "axis caption",
      text: d.kind === "bound" ? "error \u00f7 allowed bound" : "distance in ULP, or units for integers (0 allowed)"}));
    var base = H - bottom;
    s.appendChild(svg("line", {x1: left, x2: W - 4, y1: base, y2: base, "class": "axis-line"}));
    [1, 10, 100, 1000, 10000].forEach(function (t) {
      if (t > max) return;
      var yy = base - ly(t);
      s.appendChild(svg("line", {x1: left - 3, x2: W - 4, y1: yy, y2: yy, "class": "grid-line"}));
      s.appendChild(svg("text", {x: left - 5, y: yy + 3, "class": "axis", "text-anchor": "end", text: t >= 1000 ? (t / 1000) + "k" : String(t)}));
    });
    labels.forEach(function (lab, i) {
      var c = d.bins[i] || {PASS: [], FAIL: []}, x = left + i * bw + 2, y0 = base;
      ["PASS", "FAIL"].forEach(function (v) {
        var n = c[v].length;
        if (!n) return;
        var total = c.PASS.length + c.FAIL.length, hAll = ly(total), h = hAll * n / total;
        var rect = svg("rect", {x: x, y: y0 - h, width: bw - 4, height: Math.max(1, h), fill: DATA.colours[v], "class": "bar",
          "data-bin": lab, "data-verdict": v, "data-n": n});
        tip(rect, d.op + ", " + lab + (d.kind === "bound" ? " \u00d7 the bound" : " ULP") + ": " + v + " " + n);
        rect.addEventListener("click", function () { choose(c[v], d.op + " " + lab + (d.kind === "bound" ? "\u00d7 bound" : " ULP") + ", " + v); });
        s.appendChild(rect);
        y0 -= h;
      });
      if (c.PASS.length + c.FAIL.length) s.appendChild(svg("text", {x: x + (bw - 4) / 2, y: y0 - 3, "class": "axis", "text-anchor": "middle",
        text: String(c.PASS.length + c.FAIL.length)}));
      var tx = svg("text", {x: x + (bw - 4) / 2, y: base + 12, "class": "axis tick", "text-anchor": "end",
        transform: "rotate(-40 " + (x + (bw - 4) / 2) + " " + (base + 12) + ")", text: lab});
      s.appendChild(tx);
    });
    var lx = left + limit * bw;
    s.appendChild(svg("line", {x1: lx, x2: lx, y1: 36, y2: base, "class": "limit"}));
    s.appendChild(tip(svg("text", {x: lx - 3, y: 44, "class": "axis limit-text", "text-anchor": "end", text: "allowed \u2190"}),
      d.kind === "bound" ? "left of the line: within the error bound" : "left of the line: bit for bit"));
    return el("div", {cls: "hist-wrap"}, s);
  }
  function choose(indices, text) {
    var set = {};
    indices.forEach(function (i) { set[i] = true; });
    setFilters({});
    F.chosen = set; F.chosenText = text;
    page = 0; apply();
    document.getElementById("cases").scrollIntoView();
  }

  // ------------------------------------------------------------------ wiring
  function setFilters(f) {
    ["verdict", "op", "dtype", "ep", "attribution", "label", "family", "opset", "party", "fw"].forEach(function (k) {
      F[k] = f[k] || "";
      var s = document.getElementById("f-" + k);
      if (s) {
        if (F[k] && !Array.prototype.some.call(s.options, function (o) { return o.value === F[k]; })) s.appendChild(el("option", {value: F[k], text: F[k]}));
        s.value = F[k];
      }
    });
    F.text = f.text || ""; document.getElementById("f-text").value = F.text;
    F.id = f.id || "";
    F.chosen = null; F.chosenText = "";
    page = 0; apply();
  }

  function openCase(id) {
    setFilters({id: id, text: id});
    var body = document.getElementById("case-body");
    Array.prototype.forEach.call(body.querySelectorAll("tr.row"), function (tr) {
      if (tr.getAttribute("data-case") !== id) return;
      var n = tr.nextSibling;
      if (n && n.classList && n.classList.contains("reason-row")) n = n.nextSibling;
      if (!(n && n.classList && n.classList.contains("detail"))) tr.click();
    });
    document.getElementById("cases").scrollIntoView();
  }

  function wireClicks(selector, make) {
    Array.prototype.forEach.call(document.querySelectorAll(selector), function (node) {
      node.addEventListener("click", function (ev) {
        ev.preventDefault();
        setFilters(make(node));
        document.getElementById("cases").scrollIntoView();
      });
    });
  }

  function init() {
    fillSelect("f-verdict", distinct(verdict), function (a, b) { return VERDICT_ORDER[a] - VERDICT_ORDER[b]; }, [["!PASS", "not PASS"]]);
    fillSelect("f-op", distinct(op));
    fillSelect("f-dtype", distinct(dtype));
    fillSelect("f-ep", distinct(ep), function (a, b) { return laneOrder(a) - laneOrder(b) || (a < b ? -1 : 1); }, null, laneName);
    if (!MULTI_EP) document.getElementById("f-ep-wrap").style.display = "none";
    fillSelect("f-party", distinct(parties), null, null, function (p) { return (DATA.parties[p] || {title: p}).title; });
    var fws = distinct(fwClass);
    fillSelect("f-fw", fws, null, null, function (c) { return (DATA.fw_short || {})[c] || c; });
    if (!Object.keys(fws).length) document.getElementById("f-fw-wrap").style.display = "none";
    fillSelect("f-attribution", distinct(attribution));
    fillSelect("f-label", distinct(function (r) { return g(r, "labels"); }));
    fillSelect("f-family", distinct(family));
    fillSelect("f-opset", distinct(function (r) { return g(r, "opset"); }), numOrder);
    var t = document.getElementById("f-text"), timer = null;
    t.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(function () { F.text = t.value.trim(); F.id = ""; page = 0; apply(); }, 150); });
    document.getElementById("f-reset").addEventListener("click", function () { setFilters({}); });
    renderHead();
    wireClicks("#matrix td[data-op]", function (td) {
      return {op: td.getAttribute("data-op"), dtype: td.getAttribute("data-dtype"),
              ep: MULTI_EP ? td.getAttribute("data-ep") : "", verdict: td.getAttribute("data-verdict") || ""};
    });
    wireClicks("#fault-table td.hit", function (td) { return {party: td.getAttribute("data-party"), op: td.getAttribute("data-op") || ""}; });
    wireClicks("#fourway-matrix td.hit, .fw-chip", function (td) {
      return {fw: td.getAttribute("data-fw"), op: td.getAttribute("data-op") || "", dtype: td.getAttribute("data-dtype") || "",
              party: td.getAttribute("data-party") || ""};
    });
    wireClicks(".label-link", function (a) { return {label: a.getAttribute("data-label")}; });
    Array.prototype.forEach.call(document.querySelectorAll(".bug-cases"), function (a) {
      a.addEventListener("click", function (ev) {
        ev.preventDefault();
        var idx = (DATA.bug_rows || {})[a.getAttribute("data-bug")] || [];   // rows of its cases (html.bug_rows)
        choose(idx.slice(), a.getAttribute("data-text") || "a bug's cases");
      });
    });
    wireClicks("[data-filter-verdict]", function (a) { return {verdict: a.getAttribute("data-filter-verdict")}; });
    verdictChart();
    errorCharts();
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

  function rowOf(id) { return CASES.filter(function (c) { return c[0] === id; })[0]; }
  // a small API for scripted checks of the page
  window.onnxDmlReport = {
    data: DATA, setFilters: setFilters, openCase: openCase, shown: function () { return filtered.length; },
    shownIds: function () { return filtered.map(function (r) { return r[0] + "|" + ep(r); }); },
    reproScript: function (id) { var r = rowOf(id); return r ? reproScript(r) : null; },
    structText: function (id) { var r = rowOf(id); return r ? structText(r) : null; }
  };
  init();
}
