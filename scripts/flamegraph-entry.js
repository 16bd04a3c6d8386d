// The flame graph bundle (scripts/vendor.sh): d3-flame-graph with the d3
// modules it needs, as one global for static/js/flamegraph.js.
import flamegraph, { colorMapper } from "d3-flame-graph";
import { select } from "d3-selection";

window.benchFlame = {
  flamegraph: flamegraph,
  select: select,
  differentialColorMapper: colorMapper.differentialColorMapper,
};
