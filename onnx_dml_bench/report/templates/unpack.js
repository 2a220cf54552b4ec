/* Puts the page's packed markup back in place: each script element of type text/x-packed-html holds a
   block of the page as gzip+base64 (report/packed.py), expanded offline with DecompressionStream. The
   markup is the page's own, escaped when the page was written. window.onnxDmlUnpacked: a promise
   kept when every block is in place (the report's script waits for it before it wires the tables).
   Then each script element of type text/x-packed-js (the page's own script, stored so) runs, in order.
   window.onnxDmlInflate(element): a promise of the text of an element's gzip+base64 (the case data). */
window.onnxDmlUnpacked = (function () {
  "use strict";
  var nodes = Array.prototype.slice.call(document.querySelectorAll('script[type="text/x-packed-html"]'));
  function inflate(node) {
    return text(node).then(function (html) {
      var range = document.createRange();
      range.selectNode(node);
      node.parentNode.replaceChild(range.createContextualFragment(html), node);
    }, function (e) {
      var p = document.createElement("p");
      p.className = "bad";
      p.textContent = "A part of this page could not be decoded: " + e;
      node.parentNode.replaceChild(p, node);
    });
  }
  function text(node) {
    var bin = atob(node.textContent.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
  }
  window.onnxDmlInflate = text;
  var scripts = Array.prototype.slice.call(document.querySelectorAll('script[type="text/x-packed-js"]'));
  var code = scripts.map(text);
  var placed = Promise.all(nodes.map(inflate)).then(function () {
    var id = location.hash ? decodeURIComponent(location.hash.slice(1)) : "";
    var target = id && document.getElementById(id);
    if (target && nodes.length) target.scrollIntoView();
    document.documentElement.setAttribute("data-unpacked", String(nodes.length));
  });
  // the page's own packed scripts, in their order, once the markup is in place
  scripts.reduce(function (done, node, k) {
    return done.then(function () { return code[k]; }).then(function (js) {
      var s = document.createElement("script");
      s.textContent = js;
      node.parentNode.replaceChild(s, node);
    });
  }, placed).catch(function (e) {
    var p = document.createElement("p");
    p.className = "bad";
    p.textContent = "The script of this page could not be decoded: " + e;
    document.body.appendChild(p);
  });
  return placed;
})();
