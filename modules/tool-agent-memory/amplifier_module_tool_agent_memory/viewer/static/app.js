// The viewer's page. Every value from the store is put on the page as text (textContent, SVG text
// nodes), never as HTML, so a memory holding markup shows the markup and runs nothing.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = String(text);
  return node;
}

async function api(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    for (const v of [].concat(value)) if (v !== "" && v !== null && v !== undefined) query.append(key, v);
  }
  const response = await fetch(path + (query.toString() ? "?" + query : ""), {
    headers: { "X-Agent-Memory-Token": TOKEN },
  });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
  return body;
}

async function post(path) {
  const response = await fetch(path, { method: "POST", headers: { "X-Agent-Memory-Token": TOKEN } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
  return body;
}

function confirmAction(text) {
  const modal = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  modal.hidden = false;
  return new Promise((resolve) => {
    const done = (answer) => {
      modal.hidden = true;
      yes.removeEventListener("click", onYes);
      no.removeEventListener("click", onNo);
      resolve(answer);
    };
    const yes = document.getElementById("confirm-yes");
    const no = document.getElementById("confirm-no");
    const onYes = () => done(true);
    const onNo = () => done(false);
    yes.addEventListener("click", onYes);
    no.addEventListener("click", onNo);
  });
}

function formParams(form) {
  const params = {};
  for (const field of form.elements) {
    if (!field.name) continue;
    if (field.type === "checkbox") params[field.name] = field.checked ? "true" : "false";
    else params[field.name] = field.value.trim();
  }
  return params;
}

// Memories

let memoryParams = {};
let nextBefore = null;

function memoryItem(memory) {
  const superseded = Boolean(memory.superseded_by);
  const tags = (memory.tags || []).map((t) => el("span", { class: "tag" }, t));
  const item = el(
    "li",
    { class: superseded ? "memory superseded" : "memory", "data-id": memory.id },
    el("div", { class: "content" }, memory.content),
    el(
      "div",
      { class: "meta" },
      `${memory.kind} · ${memory.created_at}`,
      memory.score !== undefined && memory.score !== null ? ` · score ${memory.score}` : "",
      superseded ? " · superseded" : "",
      " ",
      ...tags,
    ),
  );
  item.addEventListener("click", () => showMemory(memory.id));
  return item;
}

async function loadMemories(append) {
  const status = document.getElementById("memory-status");
  const list = document.getElementById("memory-list");
  const params = { ...memoryParams };
  if (append && nextBefore) params.before = nextBefore;
  status.textContent = "Loading…";
  try {
    const page = await api("/api/memories", params);
    if (!append) list.replaceChildren();
    for (const memory of page.memories) list.append(memoryItem(memory));
    nextBefore = page.next_before;
    document.getElementById("more").hidden = !nextBefore;
    const shown = list.children.length;
    status.textContent = page.mode === "search" ? `${shown} results` : `${shown} memories, newest first`;
  } catch (error) {
    status.textContent = error.message;
  }
}

async function showMemory(id) {
  const detail = document.getElementById("memory-detail");
  detail.hidden = false;
  detail.replaceChildren(el("p", {}, "Loading…"));
  try {
    const { memory, timeline } = await api("/api/memories/" + encodeURIComponent(id));
    const actions = el("p", {});
    const forget = el("button", { type: "button", class: "danger", id: "forget" }, "Forget");
    forget.addEventListener("click", () => act("forget", id, "Forget this memory for good?"));
    actions.append(forget);
    if (memory.supersedes) {
      const unlink = el("button", { type: "button", id: "unlink" }, "Unlink");
      unlink.addEventListener("click", () =>
        act("unlink", id, "Unlink: the memory this one replaced becomes current again?"),
      );
      actions.append(" ", unlink);
    }
    const parts = [
      el("h2", {}, "Memory"),
      el("div", { class: "content" }, memory.content),
      el("p", { class: "meta" }, `${memory.kind} · created ${memory.created_at} · id ${memory.id}`),
    ];
    if ((memory.restated || []).length) {
      parts.push(el("p", { class: "meta" }, "Other wordings merged into it:"));
      parts.push(el("ul", {}, ...memory.restated.map((text) => el("li", {}, text))));
    }
    if (timeline.length) {
      parts.push(el("h3", {}, "Update chain"));
      parts.push(
        el(
          "ol",
          { class: "timeline", id: "timeline" },
          ...timeline.map((step) =>
            el(
              "li",
              { class: step.current ? "current" : "" },
              el("div", { class: "content" }, step.content),
              el(
                "div",
                { class: "meta" },
                step.linked_at ? `replaced the one above on ${step.linked_at}` : `first stored ${step.created_at}`,
                step.declared ? " · declared by the agent" : "",
              ),
            ),
          ),
        ),
      );
    }
    parts.push(actions);
    detail.replaceChildren(...parts);
  } catch (error) {
    detail.replaceChildren(el("p", {}, error.message));
  }
}

async function act(action, id, question) {
  if (!(await confirmAction(question))) return;
  const detail = document.getElementById("memory-detail");
  try {
    await post(`/api/memories/${encodeURIComponent(id)}/${action}`);
    detail.replaceChildren(el("p", { id: "action-done" }, action === "forget" ? "Forgotten." : "Unlinked."));
    await loadMemories(false);
    await loadSummary();
  } catch (error) {
    detail.append(el("p", { class: "status" }, error.message));
  }
}

// Working memory

async function loadWorking(scope) {
  const status = document.getElementById("working-status");
  const view = document.getElementById("working-view");
  const form = document.getElementById("working-form");
  const params = formParams(form);
  if (scope !== undefined) params.scope = scope;
  status.textContent = "Loading…";
  try {
    const data = await api("/api/working", params);
    const select = document.getElementById("scope");
    select.replaceChildren(...data.scopes.map((s) => el("option", s === data.scope ? { selected: "" } : {}, s)));
    if (!data.scope) {
      status.textContent = "No working memory yet.";
      view.replaceChildren();
      return;
    }
    status.textContent = `scope ${data.scope} · version ${data.version}`;
    const blocks = data.blocks.map((block) =>
      el(
        "div",
        { class: "block" },
        el("strong", {}, `block ${block.seq} · ${block.status}`),
        el("div", { class: "meta" }, `${block.items.length} live items · created ${block.created_at}`),
        el("pre", {}, block.summary),
        el("ul", {}, ...block.items.map((item) => el("li", {}, `[${item.kind}] `, item.content))),
      ),
    );
    view.replaceChildren(
      el("h3", {}, `Pack for ${data.pack.token_count} tokens`),
      el("pre", { id: "pack" }, JSON.stringify(data.pack, null, 2)),
      el("h3", {}, "Blocks"),
      ...blocks,
    );
  } catch (error) {
    status.textContent = error.message;
  }
}

// Plans

async function loadPlans() {
  const body = document.querySelector("#plan-table tbody");
  try {
    const data = await api("/api/plans", formParams(document.getElementById("plan-filters")));
    body.replaceChildren(
      ...data.plans.map((plan) => {
        const last = plan.failures || plan.successes ? `${plan.successes} ok / ${plan.failures} failed` : "none yet";
        const row = el(
          "tr",
          { class: "plan" },
          el("td", {}, plan.prompt),
          el("td", {}, plan.steps),
          el("td", {}, plan.uses),
          el("td", {}, plan.score),
          el("td", {}, last),
          el("td", {}, plan.stale ? "stale" : ""),
        );
        row.addEventListener("click", () => showPlan(plan.plan_id));
        return row;
      }),
    );
  } catch (error) {
    body.replaceChildren(el("tr", {}, el("td", { colspan: "6" }, error.message)));
  }
}

async function showPlan(id) {
  const detail = document.getElementById("plan-detail");
  detail.hidden = false;
  try {
    const plan = await api("/api/plans/" + encodeURIComponent(id));
    detail.replaceChildren(
      el("h2", {}, "Plan"),
      el("div", { class: "content" }, plan.prompt),
      el("pre", {}, JSON.stringify(plan.actions, null, 2)),
      el("pre", { class: "meta" }, JSON.stringify({ ...plan, actions: undefined, prompt: undefined }, null, 2)),
    );
  } catch (error) {
    detail.replaceChildren(el("p", {}, error.message));
  }
}

// Activity

function barChart(title, days, series, lines) {
  const width = 560;
  const height = 180;
  const left = 40;
  const bottom = 30;
  const plotH = height - bottom - 10;
  const band = (width - left) / Math.max(days.length, 1);
  const totals = days.map((_, i) => series.reduce((sum, s) => sum + s.values[i], 0));
  const maxCount = Math.max(1, ...totals);
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title });
  chart.append(svg("line", { x1: left, y1: 10 + plotH, x2: width, y2: 10 + plotH, stroke: "#999" }));
  chart.append(svg("text", { x: 2, y: 14, "font-size": 10 }, maxCount));
  days.forEach((day, i) => {
    let top = 10 + plotH;
    for (const s of series) {
      const h = (s.values[i] / maxCount) * plotH;
      top -= h;
      const bar = svg("rect", { x: left + i * band + 2, y: top, width: Math.max(band - 4, 1), height: h, fill: s.color });
      bar.append(svg("title", {}, `${day} ${s.name}: ${s.values[i]}`));
      chart.append(bar);
    }
    if (days.length <= 14 || i % Math.ceil(days.length / 14) === 0) {
      chart.append(svg("text", { x: left + i * band + 2, y: height - 14, "font-size": 9 }, day.slice(5)));
    }
  });
  const maxLatency = Math.max(1, ...lines.flatMap((l) => l.values));
  for (const line of lines) {
    const points = line.values
      .map((v, i) => `${left + i * band + band / 2},${10 + plotH - (v / maxLatency) * plotH}`)
      .join(" ");
    chart.append(svg("polyline", { points, fill: "none", stroke: line.color, "stroke-width": 2 }));
  }
  const legend = el(
    "div",
    { class: "meta" },
    [...series, ...lines].map((s) => `${s.name}`).join(" · "),
    lines.length ? ` (latency lines scaled to ${maxLatency} ms)` : "",
  );
  return el("div", { class: "chart", "data-chart": title }, el("h3", {}, title), chart, legend);
}

async function loadActivity() {
  const charts = document.getElementById("charts");
  try {
    const data = await api("/api/activity");
    if (!data.days.length) {
      charts.replaceChildren(el("p", { class: "status" }, "No activity recorded yet."));
      return;
    }
    const out = [];
    for (const group of ["stores", "searches", "recalls"]) {
      const figures = data.groups[group];
      out.push(
        barChart(
          group,
          data.days,
          [{ name: "calls", color: "#6d8fb3", values: figures.map((f) => f.count) }],
          [
            { name: "p50 ms", color: "#2e7d32", values: figures.map((f) => f.p50_ms) },
            { name: "p95 ms", color: "#c62828", values: figures.map((f) => f.p95_ms) },
          ],
        ),
      );
    }
    const answers = data.plan_answers;
    const planLatency = data.groups["plan answers"];
    out.push(
      barChart(
        "plan answers",
        data.days,
        [
          { name: "hits", color: "#2e7d32", values: answers.map((a) => a.hit) },
          { name: "candidates", color: "#f9a825", values: answers.map((a) => a.candidate) },
          { name: "misses", color: "#9e9e9e", values: answers.map((a) => a.miss) },
        ],
        [
          { name: "p50 ms", color: "#1565c0", values: planLatency.map((f) => f.p50_ms) },
          { name: "p95 ms", color: "#c62828", values: planLatency.map((f) => f.p95_ms) },
        ],
      ),
    );
    charts.replaceChildren(...out);
  } catch (error) {
    charts.replaceChildren(el("p", { class: "status" }, error.message));
  }
}

// Page

async function loadSummary() {
  const summary = await api("/api/summary");
  document.getElementById("identity").textContent = summary.identity;
  const kinds = Object.entries(summary.by_kind)
    .map(([kind, n]) => `${n} ${kind}`)
    .join(", ");
  document.getElementById("totals").textContent =
    `${summary.memories} memories${kinds ? " (" + kinds + ")" : ""} · ${summary.plans} plans`;
}

const loaders = { memories: () => loadMemories(false), working: () => loadWorking(), plans: loadPlans, activity: loadActivity };

function showTab(name) {
  for (const button of document.querySelectorAll("nav button")) button.classList.toggle("active", button.dataset.tab === name);
  for (const section of document.querySelectorAll("main > section")) section.hidden = section.id !== name;
  loaders[name]();
}

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("nav button")) button.addEventListener("click", () => showTab(button.dataset.tab));
  document.getElementById("memory-filters").addEventListener("submit", (event) => {
    event.preventDefault();
    memoryParams = formParams(event.target);
    document.getElementById("memory-detail").hidden = true;
    loadMemories(false);
  });
  document.getElementById("more").addEventListener("click", () => loadMemories(true));
  document.getElementById("working-form").addEventListener("submit", (event) => {
    event.preventDefault();
    loadWorking();
  });
  document.getElementById("scope").addEventListener("change", (event) => loadWorking(event.target.value));
  document.getElementById("plan-filters").addEventListener("submit", (event) => {
    event.preventDefault();
    loadPlans();
  });
  memoryParams = formParams(document.getElementById("memory-filters"));
  loadSummary().catch((error) => {
    document.getElementById("totals").textContent = error.message;
  });
  loadMemories(false);
});
