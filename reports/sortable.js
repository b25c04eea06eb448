// Sortable tables for the GRUE Bench leaderboard: click a column header to sort the rows by that
// column, click again to reverse. A cell sorts by its data-sort attribute: numbers numerically,
// other text alphabetically; an empty value (missing) stays last in both directions.
"use strict";
(function () {
  function sortValue(row, index) {
    const cell = row.cells[index];
    if (!cell) {
      return null;
    }
    const raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
    if (raw === "") {
      return null;
    }
    const number = Number(raw);
    return Number.isFinite(number) ? number : raw.toLowerCase();
  }

  function compare(a, b) {
    if (typeof a === "number" && typeof b === "number") {
      return a - b;
    }
    return String(a).localeCompare(String(b));
  }

  function sortTable(table, index, header) {
    const ascending = header.getAttribute("aria-sort") !== "ascending";
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    rows.sort(function (first, second) {
      const a = sortValue(first, index);
      const b = sortValue(second, index);
      if (a === null || b === null) {
        return (a === null) - (b === null);
      }
      return ascending ? compare(a, b) : compare(b, a);
    });
    for (const th of table.tHead.rows[0].cells) {
      th.setAttribute("aria-sort", "none");
    }
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    for (const row of rows) {
      body.appendChild(row);
    }
  }

  function init() {
    for (const table of document.querySelectorAll("table.sortable")) {
      if (!table.tHead || table.tBodies.length === 0) {
        continue;
      }
      Array.from(table.tHead.rows[0].cells).forEach(function (header, index) {
        const button = header.querySelector("button");
        if (button) {
          button.addEventListener("click", function () {
            sortTable(table, index, header);
          });
        }
      });
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
