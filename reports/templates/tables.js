/* Sortable tables: a click on a header of a table.sortable (or Enter or Space on it) sorts
   the body's rows by that column, ascending first, then descending. Headers marked
   data-type="number" compare the cells' data-sort values as numbers; others compare text
   (numbers inside it in order: job-9 before job-10). Empty cells stay last either way; the
   footer (totals) does not move. */
(function () {
  "use strict";
  function value(cell, numeric) {
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
    if (raw === "") { return null; }
    return numeric ? parseFloat(raw) : raw;
  }
  function sortBy(table, th, col) {
    var numeric = th.getAttribute("data-type") === "number";
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (row, i) { return {row: row, key: value(row.cells[col], numeric), i: i}; });
    keyed.sort(function (a, b) {
      if (a.key === null || b.key === null) {
        return a.key === b.key ? a.i - b.i : (a.key === null ? 1 : -1);
      }
      var c = numeric ? a.key - b.key : a.key.localeCompare(b.key, undefined, {numeric: true});
      return (ascending ? c : -c) || a.i - b.i;
    });
    keyed.forEach(function (k) { body.appendChild(k.row); });
    Array.prototype.forEach.call(th.parentNode.cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.tabIndex = 0;
      th.title = "Sort by this column";
      th.addEventListener("click", function () { sortBy(table, th, col); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, th, col); }
      });
    });
  });
})();
