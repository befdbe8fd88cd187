// perfcmp HTML report: click a column header of a table.sortable to sort its rows.
// Numeric columns sort on the cell's data-v (the number shown, unrounded), first click largest
// first; empty cells stay last either way; ties keep the document order (data-i).
(function () {
  "use strict";
  function value(cell, numeric) {
    if (!numeric) return cell.textContent.trim().toLowerCase();
    var v = cell.getAttribute("data-v");
    return v === null || v === "" ? null : parseFloat(v);
  }
  function sort(table, th, col) {
    var numeric = th.getAttribute("data-type") === "num";
    var current = th.getAttribute("aria-sort");
    var ascending = current ? current === "descending" : !numeric;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a.cells[col], numeric), y = value(b.cells[col], numeric), c = 0;
      if (x === null || y === null) {
        c = x === y ? 0 : (x === null ? 1 : -1);
      } else {
        c = x < y ? -1 : (x > y ? 1 : 0);
        if (!ascending) c = -c;
      }
      return c || (parseInt(a.getAttribute("data-i"), 10) - parseInt(b.getAttribute("data-i"), 10));
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(th.parentNode.cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      var button = th.querySelector("button");
      if (button) button.addEventListener("click", function () { sort(table, th, col); });
    });
  });
})();
