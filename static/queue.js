/* The queue's keys (issue 37, point 6): j/k move between rows, a approves the row, r opens
   its rejection (a reason is required, so it is never a one-key decision), x ticks it,
   Enter opens it. A file, not an inline script: the CSP allows scripts from 'self' only.
   While a row is ticked the 30-second refresh waits, so a selection is never swapped away. */
(function () {
  "use strict";
  var current = null; // the memory id of the row the keys act on

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("#queue tbody tr[data-memory]"));
  }

  function select(row) {
    rows().forEach(function (r) { r.classList.remove("current"); r.removeAttribute("aria-current"); });
    if (!row) { current = null; return; }
    row.classList.add("current");
    row.setAttribute("aria-current", "true");
    current = row.getAttribute("data-memory");
    var link = row.querySelector("a.strong");
    if (link) { link.focus(); }
  }

  function currentRow() {
    return rows().filter(function (r) { return r.getAttribute("data-memory") === current; })[0] || null;
  }

  function move(step) {
    var all = rows();
    if (!all.length) { return; }
    var at = all.indexOf(currentRow());
    var next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(Math.max(at + step, 0), all.length - 1);
    select(all[next]);
  }

  function approve(row) {
    var form = document.getElementById("bulk");
    if (!form || !row) { return; }
    var only = document.createElement("input");
    only.type = "hidden";
    only.name = "only";
    only.value = row.getAttribute("data-memory");
    form.appendChild(only);
    form.submit();
  }

  function typing(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) { return; }
    var row = currentRow();
    switch (event.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      // The server leaves a row whose preview failed out unless its "approve despite" is ticked.
      case "a": if (!row) { return; } approve(row); break;
      case "r": if (!row) { return; } window.location.assign(row.getAttribute("data-href") + "#reject"); break;
      case "x":
        if (!row) { return; }
        var box = row.querySelector("input[type=checkbox]");
        box.checked = !box.checked;
        break;
      case "Enter":
        if (!row || event.target.tagName === "A") { return; }
        window.location.assign(row.getAttribute("data-href"));
        break;
      default: return;
    }
    event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    var row = event.target.closest && event.target.closest("#queue tbody tr[data-memory]");
    if (row) { current = row.getAttribute("data-memory"); rows().forEach(function (r) { r.classList.toggle("current", r === row); }); }
  });

  document.body.addEventListener("htmx:beforeRequest", function (event) {
    var ticked = document.querySelector("#queue input[name=memory]:checked, #queue input[name=despite]:checked");
    if (event.detail.elt.id === "queue" && ticked) { event.preventDefault(); }
  });

  document.body.addEventListener("htmx:afterSwap", function () {
    var row = currentRow();
    if (row) { row.classList.add("current"); row.setAttribute("aria-current", "true"); }
  });
})();
