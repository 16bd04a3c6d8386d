// Run results page: charts from /runs/<id>/results.json and series.json.
document.querySelectorAll("#charts").forEach((section) => window.BenchCharts.wire(section));
