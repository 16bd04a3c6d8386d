// Plan builder: show the chosen tool's parameters, add/remove axis and
// override rows, switch Form/YAML tabs, and keep a live preview (cell count,
// first cells, estimate, inline errors) from POST plans/preview.json.
(function () {
  const form = document.getElementById("plan-form");
  if (!form) return;
  const previewUrl = form.dataset.previewUrl;
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const $ = (id) => document.getElementById(id);

  function showTool() {
    const tool = form.elements.tool.value;
    form.querySelectorAll(".tool-params").forEach((set) => {
      set.hidden = set.dataset.tool !== tool;
    });
  }

  function nextIndex(prefix) {
    let max = -1;
    form.querySelectorAll(`[name^="${prefix}-"]`).forEach((input) => {
      const match = input.name.match(/^\w+-(\d+)-/);
      if (match) max = Math.max(max, Number(match[1]));
    });
    return max + 1;
  }

  function addRow(prefix) {
    const html = $(`${prefix}-row-template`).innerHTML.replaceAll("__i__", nextIndex(prefix));
    const holder = document.createElement("div");
    holder.innerHTML = html.trim();
    const row = holder.firstElementChild;
    $(`${prefix}-rows`).appendChild(row);
    row.querySelector("input").focus();
  }

  function formatSeconds(s) {
    if (s < 90) return `${s} s`;
    if (s < 5400) return `${Math.round(s / 60)} min`;
    return `${(s / 3600).toFixed(1)} h`;
  }

  function clearErrors() {
    form.querySelectorAll(".field").forEach((field) => {
      field.classList.remove("has-error");
      const list = field.querySelector(".errorlist");
      if (list) list.innerHTML = "";
    });
    $("preview-errors").hidden = true;
    $("preview-errors").textContent = "";
  }

  function showErrors(errors) {
    const general = [];
    Object.entries(errors).forEach(([name, messages]) => {
      const field = form.querySelector(`.field[data-field="${name}"]`);
      if (!field || name === "__all__") {
        general.push(...messages);
        return;
      }
      field.classList.add("has-error");
      const folded = field.closest("details");
      if (folded) folded.open = true;
      const list = field.querySelector(".errorlist");
      messages.forEach((text) => {
        const item = document.createElement("li");
        item.textContent = text;
        list.appendChild(item);
      });
      const set = field.closest(".tool-params");
      if (set && set.hidden) general.push(`${name}: ${messages.join(" ")}`);
    });
    const box = $("preview-errors");
    box.textContent = general.length ? general.join(" ") : "Fix the fields marked in red.";
    box.hidden = false;
  }

  function showWarnings(warnings) {
    const box = $("preview-warnings");
    const list = box.querySelector("ul");
    list.innerHTML = "";
    (warnings || []).forEach((text) => {
      const item = document.createElement("li");
      item.textContent = text;
      list.appendChild(item);
    });
    box.hidden = list.children.length === 0;
  }

  function showPreview(data) {
    $("preview-count").textContent = data.count;
    showWarnings(data.warnings);
    const est = data.estimate;
    let text = `About ${formatSeconds(est.seconds)} of run time`;
    if (!est.known) text += " (no duration parameter: assuming ~10 s per cell)";
    if (est.cost !== null) text += `, about ${est.cost} USD for ${est.cost_hours} billed hour(s)`;
    if (est.client_hosts > 1) text += `, from up to ${est.client_hosts} client hosts at once`;
    $("preview-estimate").textContent = text + ".";
    const body = $("preview-cells").querySelector("tbody");
    body.innerHTML = "";
    data.cells.forEach((cell) => {
      const row = body.insertRow();
      [cell.index, cell.key, cell.target, cell.repeat].forEach((value) => {
        row.insertCell().textContent = value;
      });
    });
    $("preview-cells").hidden = data.cells.length === 0;
    const more = data.count - data.cells.length;
    $("preview-more").textContent = more > 0 ? `…and ${more} more.` : "";
    const yaml = document.querySelector("[data-pane=yaml] textarea");
    if (yaml) yaml.value = data.yaml;
  }

  let timer = null;
  let sequence = 0;
  async function refresh() {
    const mine = ++sequence;
    const response = await fetch(previewUrl, {
      method: "POST", body: new FormData(form), headers: { "X-CSRFToken": csrf },
      credentials: "same-origin",
    });
    if (!response.ok || mine !== sequence) return;
    const data = await response.json();
    if (!data.valid && !touched) {
      // A brand-new form is incomplete, not wrong: no red before the user
      // types. A submitted one keeps the fields the server marked.
      $("preview-count").textContent = "–";
      $("preview-cells").hidden = true;
      return;
    }
    clearErrors();
    if (data.valid) showPreview(data);
    else {
      $("preview-count").textContent = "–";
      $("preview-cells").hidden = true;
      $("preview-estimate").textContent = "";
      $("preview-more").textContent = "";
      showErrors(data.errors);
    }
  }
  // After a submit the server has marked the fields: they are the user's
  // errors, shown until the user changes something.
  let touched = false;
  function schedule() {
    touched = true;
    clearTimeout(timer);
    timer = setTimeout(refresh, 400);
  }

  form.addEventListener("input", schedule);
  form.addEventListener("change", (event) => {
    if (event.target.name === "tool") showTool();
    schedule();
  });
  form.addEventListener("click", (event) => {
    const add = event.target.closest("[data-add-row]");
    if (add) addRow(add.dataset.addRow);
    const remove = event.target.closest(".remove-row");
    if (remove) {
      remove.closest(".row-pair").remove();
      schedule();
    }
  });
  document.querySelectorAll(".tab[data-tab]").forEach((tab) => {
    tab.addEventListener("click", () => {
      document.querySelectorAll(".tab[data-tab]").forEach((t) => t.classList.toggle("active", t === tab));
      document.querySelectorAll("[data-pane]").forEach((pane) => {
        pane.hidden = pane.dataset.pane !== tab.dataset.tab;
      });
    });
  });
  showTool();
  refresh();
})();
