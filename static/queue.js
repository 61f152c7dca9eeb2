/* The queue's keys (issue 37, point 6): j/k move between rows, a approves the row, r opens
   its rejection (a reason is required, so it is never a one-key decision), x ticks it,
   Enter opens it, d shows its details. A file, not an inline script: the CSP allows scripts
   from 'self' only. While a row is ticked the 30-second refresh waits, so a selection is
   never swapped away, and the bar above the rows says so (issue 43, point 8). The refresh
   swaps the rows only: the filter and the bulk comment sit outside them; what the rows
   themselves hold (open details, ticks, the focused control) is put back after a swap. */
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

  function ticked() {
    return document.querySelector("#queue input[name=memory]:checked, #queue input[name=despite]:checked");
  }

  // Say whether the rows are updating; the text changes (and is announced) only on a change.
  function showRefresh() {
    var note = document.getElementById("queue-refresh");
    if (!note) { return; }
    var text = note.getAttribute(ticked() ? "data-paused" : "data-running");
    if (note.textContent !== text) { note.textContent = text; }
  }

  function toggleDetails(row) {
    var more = row && row.querySelector("details.row-more");
    if (more) { more.open = !more.open; }
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
        showRefresh();
        break;
      case "d": if (!row) { return; } toggleDetails(row); break;
      case "Enter":
        // A link or a details toggle does its own thing on Enter.
        if (!row || event.target.tagName === "A" || event.target.tagName === "SUMMARY") { return; }
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

  document.addEventListener("change", function (event) {
    if (event.target.closest && event.target.closest("#queue")) { showRefresh(); }
  });

  // What a swap would lose: open details (of rows and of the open questions) and ticked
  // boxes, by id. Focus htmx puts back itself: every control in a row has a stable id.
  var kept = null;
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.elt.id !== "queue") { return; }
    kept = {
      open: Array.prototype.map.call(document.querySelectorAll("#queue details[open], #queue-held details[open]"), function (d) { return d.id; }),
      ticked: Array.prototype.map.call(document.querySelectorAll("#queue input[type=checkbox]:checked"), function (b) { return b.id; })
    };
  });

  document.body.addEventListener("htmx:afterSettle", function (event) {
    if (kept && event.detail.elt.id === "queue") {
      kept.open.forEach(function (id) { var d = id && document.getElementById(id); if (d) { d.open = true; } });
      kept.ticked.forEach(function (id) { var b = id && document.getElementById(id); if (b) { b.checked = true; } });
      kept = null;
    }
    var row = currentRow();
    if (row) { row.classList.add("current"); row.setAttribute("aria-current", "true"); }
    showRefresh();
  });
})();
