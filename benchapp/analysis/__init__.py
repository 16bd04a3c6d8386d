"""Reading results: pivots, charts, deltas, costs, timelines, exports."""
