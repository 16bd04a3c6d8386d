// Comparison and share pages: charts from the comparison's (or the share
// link's) JSON endpoints, and the "only differences" switch of the diff table.
document.querySelectorAll("#charts").forEach((section) => window.BenchCharts.wire(section));

document.querySelectorAll(".diff").forEach((card) => {
  const only = card.querySelector(".diff-only");
  const apply = () => card.classList.toggle("diff-only-on", only.checked);
  only.addEventListener("change", apply);
  apply();
});
