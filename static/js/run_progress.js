// Run page: poll progress.json every 1.5 s while the run is active and update
// the run bar, each cell's status/phase/bar/time/error and the live output.
// When the run ends the page reloads once, to show the final results table.
(function () {
  const box = document.getElementById("run-progress");
  if (!box || box.dataset.active !== "1") return;
  const url = box.dataset.url;
  const $ = (id) => document.getElementById(id);

  function setStatus(element, status) {
    element.className = element.className.replace(/status-\S+/, `status-${status}`);
    element.textContent = status.replaceAll("_", " ");
  }

  // Bars take their status's colour: failed red, cancelled grey, not all blue.
  function setBar(bar, status, percent) {
    bar.className = bar.className.replace(/bar-\S+/, `bar-${status}`);
    bar.value = percent;
  }

  function updateCell(cell) {
    const row = document.querySelector(`tr[data-cell="${cell.id}"]`);
    if (!row) return;
    const part = (role) => row.querySelector(`[data-role="${role}"]`);
    setStatus(part("status"), cell.status);
    part("phase").textContent = cell.status === "running" ? cell.phase : "";
    setBar(part("bar"), cell.status, cell.percent);
    part("time").textContent = cell.elapsed_s === null ? "" : `${cell.elapsed_s} / ~${cell.expected_s} s`;
    part("error").textContent = cell.error || "";
    part("cancel").hidden = !["queued", "running"].includes(cell.status);
    if (cell.repeats) {
      const repeat = part("repeat");
      repeat.title = cell.repeats;
      repeat.textContent = `${cell.repeat} `;
      const summary = document.createElement("small");
      summary.className = "muted repeat-stop";
      summary.textContent = cell.repeats;
      repeat.appendChild(summary);
    }
  }

  // Adaptive repeats: a combination that stopped early drops its queued repeats.
  function dropGone(cells) {
    const ids = new Set(cells.map((cell) => String(cell.id)));
    document.querySelectorAll("tr[data-cell]").forEach((row) => {
      if (!ids.has(row.dataset.cell)) row.remove();
    });
  }

  function updateTails(tails) {
    const holder = $("tails");
    holder.innerHTML = "";
    Object.values(tails).forEach((tail) => {
      const pre = document.createElement("pre");
      pre.className = "tail";
      pre.textContent = tail;
      holder.appendChild(pre);
      pre.scrollTop = pre.scrollHeight;
    });
    $("live-output").hidden = Object.keys(tails).length === 0;
  }

  function updateWaits(waits) {
    const list = $("run-waits");
    list.replaceChildren(
      ...waits.map((why) => {
        const item = document.createElement("li");
        item.textContent = why;
        return item;
      }),
    );
    list.hidden = waits.length === 0;
  }

  function update(data) {
    setStatus($("run-status"), data.status);
    setBar($("run-bar"), data.status, data.percent);
    $("run-percent").textContent = `${data.percent} %`;
    let counts = `${data.done} of ${data.total} cells done`;
    if (data.failed) counts += `, ${data.failed} failed`;
    if (data.running) counts += ` · ${data.running} running${data.phase ? ` (${data.phase})` : ""}`;
    $("run-counts").textContent = counts;
    $("run-eta").textContent = data.eta_s === null ? "" : `about ${Math.round(data.eta_s)} s left`;
    updateWaits(data.waits || []);
    data.cells.forEach(updateCell);
    dropGone(data.cells);
    updateTails(data.tails);
  }

  let doneCells = null;
  async function poll() {
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (response.ok) {
        const data = await response.json();
        update(data);
        if (!data.active) {
          window.location.reload();
          return;
        }
        // A cell just finished: its figures belong in the results table.
        if (doneCells !== null && data.done !== doneCells && $("results-empty")) {
          window.location.reload();
          return;
        }
        doneCells = data.done;
      }
    } catch (error) {
      // Network hiccup: keep polling.
    }
    setTimeout(poll, 1500);
  }
  setTimeout(poll, 1000);
})();
