// Home page: poll each running run's progress.json every 2 s and update its
// status and bar; when one ends, reload once so it moves to "Recent runs".
(function () {
  const rows = document.querySelectorAll("tr[data-live-run]");
  if (!rows.length) return;

  async function poll(row) {
    try {
      const response = await fetch(row.dataset.liveRun, { credentials: "same-origin" });
      if (response.ok) {
        const data = await response.json();
        const status = row.querySelector("[data-role=status]");
        status.className = status.className.replace(/status-\S+/, `status-${data.status}`);
        status.textContent = data.status.replaceAll("_", " ");
        const bar = row.querySelector("[data-role=bar]");
        bar.className = bar.className.replace(/bar-\S+/, `bar-${data.status}`);
        bar.value = data.percent;
        row.querySelector("[data-role=counts]").textContent = `${data.done}/${data.total}`;
        if (!data.active) {
          window.location.reload();
          return;
        }
      }
    } catch (error) {
      // Network hiccup: keep polling.
    }
    setTimeout(() => poll(row), 2000);
  }
  rows.forEach((row) => setTimeout(() => poll(row), 1000));
})();
