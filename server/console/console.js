// The Dormant console: reads and drives the server's JSON API with the token kept in this tab's
// session storage. Every value is put in the page with textContent or as an attribute set by the
// DOM, never parsed as markup.
(function () {
  "use strict";  // here, not above: flame_view.js comes first in the page's one script
  const pageNonce = document.currentScript.nonce;
  const tokenKey = "dormant.token";
  const views = ["hosts", "workloads", "commands", "profiles", "flamegraph"];
  const refreshEveryMs = 3000;
  const byId = (id) => document.getElementById(id);

  let knownHosts = [];
  let refreshTimer = null;
  let flamegraphUrl = null;
  let shownSvg = null;  // as the server sent it, to show again in another time zone

  // ---- DOM ------------------------------------------------------------------------------------

  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function button(text, onClick) {
    const node = element("button", text);
    node.type = "button";
    node.addEventListener("click", onClick);
    return node;
  }

  function row(cells) {
    const tr = document.createElement("tr");
    for (const cell of cells) {
      tr.appendChild(cell instanceof Node ? wrapCell(cell) : element("td", cell));
    }
    return tr;
  }

  function wrapCell(node) {
    if (node.tagName === "TD") return node;
    const td = document.createElement("td");
    td.appendChild(node);
    return td;
  }

  // `data`: what the rows show, with `more` that they show besides; when neither has changed,
  // the rows stay as they are.
  function fillTable(table, data, makeRow, emptyText, more) {
    const shown = JSON.stringify([data, more]);
    if (table.dataset.shown === shown) return;
    table.dataset.shown = shown;
    const rows = data.map(makeRow);
    const body = table.tBodies[0];
    body.replaceChildren(...rows);
    if (rows.length === 0) {
      const empty = row([emptyText]);
      empty.className = "empty";
      empty.cells[0].colSpan = table.tHead.rows[0].cells.length;
      body.appendChild(empty);
    }
  }

  // ---- Times: one zone for every time shown or typed (UTC unless the user chose otherwise) ------

  const timeZoneKey = "dormant.timeZone";
  const inUtc = () => (localStorage.getItem(timeZoneKey) || "UTC") === "UTC";
  const pad = (number, width = 2) => String(number).padStart(width, "0");

  // "2026-12-07 07:45:12 UTC", or the same in the browser's zone with its offset.
  function formatTime(iso) {
    if (!iso) return "";
    const date = new Date(iso);
    if (Number.isNaN(date.getTime())) return String(iso);
    if (inUtc()) return date.toISOString().slice(0, 19).replace("T", " ") + " UTC";
    const offset = -date.getTimezoneOffset();
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + " " +
        pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds()) +
        " UTC" + (offset < 0 ? "-" : "+") + pad(Math.floor(Math.abs(offset) / 60)) + ":" +
        pad(Math.abs(offset) % 60);
  }

  // The server writes instants in UTC ("2026-12-07T07:45:12.5Z"), in its messages and drawings:
  // `text` with each of them in the chosen zone.
  function zonedTimes(text) {
    return text.replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, formatTime);
  }

  // A time field's value for `date`, "2026-12-07 07:45:00", and back, in the chosen zone.
  function inputValue(date) {
    const shifted = inUtc() ? date : new Date(date.getTime() - date.getTimezoneOffset() * 60000);
    return shifted.toISOString().slice(0, 19).replace("T", " ");
  }

  // null for an empty field; a field that holds no time is refused, never taken as empty.
  function dateOfInput(value, label = "a time field") {
    if (!value.trim()) return null;
    const parts = /^\s*(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d(?::\d\d)?)\s*$/.exec(value);
    const date = parts ? new Date(parts[1] + "T" + parts[2] + (inUtc() ? "Z" : "")) : null;
    if (!date || Number.isNaN(date.getTime())) {
      throw new Error(label + ": '" + value + "' is no time: write it YYYY-MM-DD HH:MM:SS (" +
          (inUtc() ? "UTC" : "this browser's zone") + ")");
    }
    return date;
  }

  function showNotice(message) {
    byId("notice").textContent = message || "";
    byId("notice").hidden = !message;
  }

  // ---- The API --------------------------------------------------------------------------------

  class Refused extends Error {}

  // A parameter whose value is a list repeats, once for each of its values.
  function query(parameters) {
    // Not URLSearchParams: it writes a space as "+", which the server reads as a "+".
    const pairs = Object.entries(parameters)
        .flatMap(([key, value]) => (Array.isArray(value) ? value : [value]).map((each) =>
          [key, each]))
        .filter(([, value]) => value !== "" && value != null);
    if (pairs.length === 0) return "";
    const encoded = pairs.map(([key, value]) =>
        encodeURIComponent(key) + "=" + encodeURIComponent(value));
    return "?" + encoded.join("&");
  }

  async function api(path, options = {}) {
    const headers = new Headers(options.headers || {});
    headers.set("Authorization", "Bearer " + sessionStorage.getItem(tokenKey));
    const response = await fetch(path, {
      ...options, headers, cache: "no-store", credentials: "omit", redirect: "error",
    });
    if (response.status === 401) {
      logOut("The server refused the token: log in again.");
      throw new Refused("401");
    }
    if (!response.ok) {
      let message = response.status + " " + response.statusText;
      try {
        message = refusalText(await response.json(), message);
      } catch (error) {
        // not JSON: the status says it
      }
      throw new Error(message);
    }
    return response;
  }

  // A refusal's message, and each problem its detail lists ({loc, msg, type}, as 422 answers
  // do) that the message does not already say.
  function refusalText(answer, fallback) {
    if (!answer || typeof answer !== "object") return fallback;
    const lines = [answer.message || fallback];
    for (const problem of Array.isArray(answer.detail) ? answer.detail : []) {
      if (!problem || lines[0].includes(problem.msg)) continue;
      const where = (problem.loc || []).filter((part) => part !== "body").join(".");
      lines.push((where ? where + ": " : "") + problem.msg);
    }
    return lines.join("\n");
  }

  async function apiJson(path, options) {
    return (await api(path, options)).json();
  }

  // Runs `work`, showing its failure (other than a refused token, which logs out) in `where`.
  async function reporting(where, work) {
    try {
      await work();
    } catch (error) {
      if (error instanceof Refused) return;
      const message = zonedTimes(error.message);
      if (where === byId("notice")) {
        showNotice(message);
      } else {
        where.textContent = message;
      }
    }
  }

  // ---- Hosts and the profiling form -----------------------------------------------------------

  function mebibytes(kilobytes) {
    return (kilobytes / 1024).toFixed(1) + " MiB";
  }

  // The agent's health in a few words: its memory, and only what is wrong besides.
  function healthSummary(health) {
    const parts = [];
    const now = health.now || {};
    const memory = now.uss_kb || now.rss_kb;
    if (memory) parts.push(mebibytes(memory) + (now.uss_kb ? " private" : " resident"));
    const profilers = health.profilers && typeof health.profilers === "object" ?
      Object.entries(health.profilers) : [];
    for (const [name, profiler] of profilers) {
      if (profiler && profiler.available === false) parts.push(name + " unavailable");
    }
    for (const name of ["heartbeat", "completions", "uploads"]) {
      if (health[name] && health[name].consecutive_failures > 0) parts.push(name + " failing");
    }
    if (health.spool && health.spool.profiles > 0) {
      parts.push(plural(health.spool.profiles, "profile") + " waiting to upload");
    }
    if (health.last_teardown_audit && health.last_teardown_audit.clean === false) {
      parts.push("the last teardown left resources");
    }
    const errors = health.state_dir || {};
    if (errors.journal_error || errors.spool_error) parts.push("state directory failing");
    return parts.length > 1 || !memory ? parts.join(" · ") || "ok" : parts[0] + " · ok";
  }

  function showHealth(host) {
    byId("health-title").textContent = "Agent health of " + host.hostname + " (" +
        host.service_name + ")";
    byId("health-detail").textContent = zonedTimes(JSON.stringify(host.agent_health, null, 2));
    byId("health-dialog").showModal();
  }

  function healthCell(host) {
    const td = document.createElement("td");
    if (!host.agent_health) {
      td.textContent = "not reported";
      return td;
    }
    td.append(element("span", healthSummary(host.agent_health), "health-summary"), " ",
        button("Details", () => showHealth(host)));
    return td;
  }

  // What the host's profiling is doing, from its agent's last heartbeat: apart from the
  // Studio status of the command that started it.
  // An agent not heard from for this long is silent: what it last said of its session is old.
  const silentAfterMs = 120000;
  const isSilent = (host) => !host.last_heartbeat_at ||
      Date.now() - Date.parse(host.last_heartbeat_at) > silentAfterMs;

  function hostSession(host) {
    const health = host.agent_health;
    if (host.status === "offline" || isSilent(host)) return "unknown: the agent is silent";
    const command = host.current_command;
    if (command && command.status === "failed") {
      return "failed" + (command.error_message ? ": " + command.error_message : "");
    }
    if (!health) return "unknown: no health reported";
    const state = String(health.state || "unknown");
    const sessions = Array.isArray(health.running_commands) ? health.running_commands.length : 0;
    if (state === "running") return sessions > 1 ? "running (" + sessions + " sessions)" : "running";
    if (state === "stopping") return "stopping: the profilers are torn down";
    if (state === "idle") return command && command.command_type === "stop" ? "stopped" : "idle";
    return state;
  }

  // A start command's session: begun or not, running, ended or failed.
  function commandSession(command, hostsByKey) {
    if (command.command_type !== "start") return "";
    if (command.status === "failed") return "failed";
    if (command.status === "pending" || command.status === "sent") return "not begun";
    const host = hostsByKey.get(command.hostname + "\n" + command.service_name);
    if (!host || host.status === "offline" || isSilent(host) || !host.agent_health) {
      return "unknown: the agent is silent";
    }
    const health = host.agent_health;
    const running = (health.state === "running" || health.state === "stopping") &&
        ((health.running_commands || []).includes(command.command_id) || command.current);
    if (running) return health.state === "stopping" ? "stopping" : "running";
    return command.replaced_by ? "ended (replaced)" : "ended";
  }

  function describeCommand(command) {
    if (!command) return "";
    return command.command_type + " " + command.status;
  }

  function chooseForProfiling(host) {
    byId("profiling-service").value = host.service_name;
    updateHostChoices();
    byId("profiling-host").value = host.hostname;
  }

  function renderHosts(hosts) {
    knownHosts = hosts;
    fillTable(byId("hosts"), hosts, (host) => {
      const session = hostSession(host);
      const tr = row([button("Select", () => chooseForProfiling(host)), host.hostname,
        host.service_name, host.status, formatTime(host.last_heartbeat_at),
        host.agent_version || "", session, describeCommand(host.current_command),
        healthCell(host)]);
      tr.cells[3].className = "state-" + host.status;
      tr.cells[6].className = "session-" + session.split(/[: ]/)[0];
      tr.dataset.hostname = host.hostname;
      return tr;
    }, "No agent has sent a heartbeat yet.");
    const services = [...new Set(hosts.map((host) => host.service_name))].sort();
    byId("known-services").replaceChildren(...services.map((service) => {
      const option = document.createElement("option");
      option.value = service;
      return option;
    }));
    updateHostChoices();
  }

  function updateHostChoices() {
    const select = byId("profiling-host");
    const service = byId("profiling-service").value.trim();
    const chosen = select.value;
    const hostnames = knownHosts.filter((host) => !service || host.service_name === service)
        .map((host) => host.hostname);
    // Rebuilt only when the hosts change: a rebuild closes the list under the pointer.
    const choices = JSON.stringify(hostnames);
    if (select.dataset.choices === choices) return;
    select.dataset.choices = choices;
    const every = element("option", "every host of the service");
    every.value = "";
    select.replaceChildren(every, ...hostnames.map((hostname) => {
      const option = element("option", hostname);
      option.value = hostname;
      return option;
    }));
    if (hostnames.includes(chosen)) select.value = chosen;
  }

  async function refreshHosts() {
    // The first 1,000 hosts the server lists: a page, as every list of the API is.
    renderHosts((await apiJson("/api/hosts?limit=1000")).hosts);
  }

  async function requestProfiling(event) {
    event.preventDefault();
    const result = byId("profiling-result");
    const type = event.submitter && event.submitter.value === "stop" ? "stop" : "start";
    const service = byId("profiling-service").value.trim();
    const chosen = byId("profiling-host").value;
    const hostnames = chosen ? [chosen] : knownHosts
        .filter((host) => host.service_name === service).map((host) => host.hostname);
    if (hostnames.length === 0) {
      result.textContent = "No host of service " + service + " has sent a heartbeat.";
      return;
    }
    const body = {
      service_name: service,
      request_type: type,
      target_hosts: Object.fromEntries(hostnames.map((hostname) => [hostname, null])),
    };
    if (type === "start") {
      body.duration = Number(byId("profiling-duration").value);
      body.frequency = Number(byId("profiling-frequency").value);
      body.profiling_mode = byId("profiling-mode").value;
      body.continuous = byId("profiling-continuous").checked;
    } else {
      body.stop_level = "host";
    }
    await reporting(result, async () => {
      const answer = await postProfileRequest(body);
      result.textContent = (type === "start" ? "Start" : "Stop") + " requested for " +
          hostnames.join(", ") + ": " + zonedTimes(answer.message || "") + " (request " +
          (answer.request_id || "none") + ")";
      await refreshHosts();
    });
  }

  // ---- Workloads: rows of a scope, start or stop by selection, subscriptions -------------------

  const scopes = ["service", "namespace", "host", "pod", "container", "process"];
  const counted = (label, key) => ({ label, key, number: true });
  const named = (label, key) => ({ label, key });
  const column = {
    service: named("Service", "serviceName"),
    namespace: named("Namespace", "namespace"),
    hostname: named("Host", "hostname"),
    address: named("Address", "ipAddress"),
    pod: named("Pod", "podName"),
    workload: named("Workload", "workloadName"),
    container: named("Container", "containerName"),
    process: named("Process", "processName"),
    pid: counted("Pid", "pid"),
    hosts: counted("Hosts", "hostCount"),
    pods: counted("Pods", "podCount"),
    containers: counted("Containers", "containerCount"),
    processes: counted("Processes", "processCount"),
  };
  const stateColumns = [named("Status", "profilingStatus"), named("Command", "commandType"),
    { label: "Last heartbeat", key: "heartbeatTimestamp", time: true }];
  const workloadColumns = {
    service: [column.service, column.hosts, column.pods, column.containers, column.processes],
    namespace: [column.service, column.namespace, column.hosts, column.pods, column.containers,
      column.processes],
    host: [column.service, column.hostname, column.address, column.pods, column.containers,
      column.processes],
    pod: [column.service, column.namespace, column.pod, column.workload, column.hosts,
      column.containers, column.processes],
    container: [column.service, column.hostname, column.namespace, column.pod, column.container,
      column.workload, column.processes],
    process: [column.service, column.hostname, column.namespace, column.pod, column.container,
      column.process, column.pid],
  };
  // The row members that select it, by the names Studio's target_entities take.
  const selectorKeys = {
    service: ["serviceName"],
    namespace: ["namespace"],
    host: ["hostname"],
    pod: ["podName", "namespace"],
    container: ["containerName", "podName", "namespace", "hostname"],
    process: ["pid", "hostname"],
  };

  const workloads = {
    scope: "service",
    page: 0,
    filters: {},
    shown: [],
    selected: new Map(),  // row id -> row, kept across pages
    review: null,         // the requests the dry run checked, until confirmed or cancelled
  };

  function workloadPageSize() {
    return Number(byId("workload-page-size").value);
  }

  function workloadQuery() {
    return query({
      scope: workloads.scope, page: workloads.page, page_size: workloadPageSize(),
      ...workloads.filters,
    });
  }

  function readFilters() {
    const filters = {};
    for (const [name, value] of new FormData(byId("workload-filters"))) {
      const alternatives = String(value).split(",").map((each) => each.trim())
          .filter((each) => each);
      if (alternatives.length > 0) filters[name] = alternatives;
    }
    return filters;
  }

  function workloadTabs() {
    return byId("workload-tabs").querySelectorAll("button[data-scope]");
  }

  function markChosenTab() {
    for (const tab of workloadTabs()) {
      tab.setAttribute("aria-selected", String(tab.dataset.scope === workloads.scope));
    }
  }

  function renderTabCounts(tabCounts) {
    for (const tab of workloadTabs()) {
      tab.querySelector(".count").textContent = "(" + (tabCounts[tab.dataset.scope] ?? 0) + ")";
    }
  }

  function renderWorkloadHead() {
    const table = byId("workloads");
    const all = element("input");
    all.type = "checkbox";
    all.id = "select-all-workloads";
    all.setAttribute("aria-label", "Select every row of the page");
    all.addEventListener("change", () => selectShownRows(all.checked));
    const columns = [...workloadColumns[workloads.scope], ...stateColumns];
    const heads = [all, ...columns.map((each) => each.label)];
    table.tHead.rows[0].replaceChildren(...heads.map((head) => {
      const th = document.createElement("th");
      th.append(head);
      return th;
    }));
    delete table.dataset.shown;
  }

  function workloadCell(data, shown) {
    const value = data[shown.key];
    const text = value === null || value === undefined ? "" :
        shown.time ? formatTime(value) : value;
    return element("td", text, shown.number ? "number" : "");
  }

  function workloadRow(data) {
    const box = element("input");
    box.type = "checkbox";
    box.checked = workloads.selected.has(data.id);
    box.setAttribute("aria-label", "Select " + data.id);
    box.addEventListener("change", () => select(data, box.checked));
    const columns = [...workloadColumns[workloads.scope], ...stateColumns];
    const tr = row([box, ...columns.map((each) => workloadCell(data, each))]);
    tr.dataset.id = data.id;
    tr.cells[columns.length - 2].className = "profiling-" + data.profilingStatus;
    return tr;
  }

  function renderWorkloadRows(rows) {
    workloads.shown = rows;
    fillTable(byId("workloads"), rows, workloadRow, "Nothing here matches.");
    showSelection();
  }

  function renderPaging(total) {
    const size = workloadPageSize();
    const first = workloads.page * size;
    byId("workload-rows").textContent = total === 0 ? "No rows" : "Rows " +
        Math.min(first + 1, total) + " to " + Math.min(first + size, total) + " of " + total;
    byId("workloads-previous").disabled = workloads.page === 0;
    byId("workloads-next").disabled = first + size >= total;
    // Rows went away under a later page: the next refresh shows the last one.
    workloads.page = Math.min(workloads.page, Math.max(0, Math.ceil(total / size) - 1));
  }

  function select(data, chosen) {
    if (chosen) {
      workloads.selected.set(data.id, data);
    } else {
      workloads.selected.delete(data.id);
    }
    showSelection();
  }

  function selectShownRows(chosen) {
    for (const data of workloads.shown) select(data, chosen);
    for (const box of byId("workloads").tBodies[0].querySelectorAll("input[type=checkbox]")) {
      box.checked = chosen;
    }
  }

  function showSelection() {
    const count = workloads.selected.size;
    byId("workload-selection").textContent = count === 0 ? "" : "(" + count + " selected)";
    byId("select-all-workloads").checked = workloads.shown.length > 0 &&
        workloads.shown.every((data) => workloads.selected.has(data.id));
  }

  function clearSelection() {
    workloads.selected.clear();
    delete byId("workloads").dataset.shown;  // the next refresh redraws the checkboxes
    selectShownRows(false);
  }

  // A new question for the table: its first page, nothing selected, nothing under review.
  function askAgain() {
    workloads.page = 0;
    clearSelection();
    hideReview();
    scheduleRefresh();
  }

  function chooseScope(scope) {
    if (!scopes.includes(scope) || scope === workloads.scope) return;
    workloads.scope = scope;
    workloads.shown = [];
    markChosenTab();
    renderWorkloadHead();
    byId("workloads").tBodies[0].replaceChildren();
    askAgain();
  }

  function turnPage(step) {
    workloads.page = Math.max(0, workloads.page + step);
    scheduleRefresh();
  }

  // ---- Subscriptions

  function describeSelectors(entities) {
    if (!entities || entities.length === 0) return "the whole service";
    return entities.map((entity) => Object.entries(entity)
        .map(([key, value]) => key + "=" + value).join(", ")).join("; ");
  }

  function describeState(subscription) {
    if (subscription.active) return "active";
    let text = "ended " + formatTime(subscription.ended_at);
    if (subscription.ended_by) text += " by request " + subscription.ended_by;
    return text;
  }

  function coversCell(covers) {
    const td = document.createElement("td");
    if (!covers) return td;
    const details = document.createElement("details");
    details.appendChild(element("summary", plural(covers.host_count, "host") + ", " +
        plural(covers.pid_count, "process", "processes")));
    const list = document.createElement("ul");
    for (const [host, pids] of Object.entries(covers.hosts || {})) {
      list.appendChild(element("li", host + ": " + (pids ? "pids " + pids.join(", ") :
          "the whole host")));
    }
    details.appendChild(list);
    td.appendChild(details);
    return td;
  }

  function plural(count, one, many) {
    return count + " " + (count === 1 ? one : many || one + "s");
  }

  function renderSubscriptions(subscriptions) {
    fillTable(byId("subscriptions"), subscriptions, (subscription) => {
      const tr = row([formatTime(subscription.created_at), subscription.service_name,
        subscription.target_scope, describeSelectors(subscription.target_entities),
        describeState(subscription), coversCell(subscription.covers),
        (subscription.opted_out_hosts || []).join(", "), subscription.request_id]);
      tr.cells[4].className = subscription.active ? "state-active" : "";
      tr.dataset.subscriptionId = subscription.subscription_id;
      return tr;
    }, "No subscriptions: a continuous start of selected rows makes one.");
  }

  async function refreshWorkloads() {
    const asked = workloadQuery();
    const [status, subscriptions] = await Promise.all([
      apiJson("/api/metrics/profiling/workload_status" + asked),
      apiJson("/api/subscriptions?limit=200"),
    ]);
    if (asked !== workloadQuery()) return;  // the scope, page or filters changed meanwhile
    renderTabCounts(status.tabCounts);
    renderWorkloadRows(status.rows);
    renderPaging(status.totalCount);
    renderSubscriptions(subscriptions.subscriptions);
  }

  // ---- Start or stop by selection, after a dry run

  function selectorOf(scope, data) {
    const present = selectorKeys[scope]
        .filter((key) => data[key] !== null && data[key] !== undefined && data[key] !== "");
    return Object.fromEntries(present.map((key) => [key, data[key]]));
  }

  function profilingSettings(type) {
    if (type === "stop") return {};
    return {
      duration: Number(byId("workload-duration").value),
      frequency: Number(byId("workload-frequency").value),
      profiling_mode: byId("workload-mode").value,
      continuous: byId("workload-continuous").checked,
    };
  }

  // One request for each service of the selected rows: a request names one service.
  function selectionRequests(type, scope, rows) {
    const byService = new Map();
    for (const data of rows) {
      if (!byService.has(data.serviceName)) byService.set(data.serviceName, []);
      byService.get(data.serviceName).push(selectorOf(scope, data));
    }
    return Array.from(byService, ([serviceName, selectors]) => ({
      service_name: serviceName,
      request_type: type,
      target_scope: scope,
      target_entities: selectors,
      ...profilingSettings(type),
    }));
  }

  function describeRequest(body, count) {
    let text = (body.request_type === "start" ? "Start" : "Stop") + " profiling of " +
        plural(count, body.target_scope, body.target_scope === "process" ? "processes" : undefined);
    if (body.request_type === "start") {
      text += " (" + body.profiling_mode + ", " + body.frequency + " Hz, " + body.duration +
          " s, " + (body.continuous ? "continuous" : "once") + ")";
    }
    return text + ":";
  }

  // What the dry run says each host would get.
  function describePlan(plan) {
    return (plan || []).map((host) => host.hostname + " " + host.action +
        (host.pids ? " (pids " + host.pids.join(", ") + ")" : host.action === "unchanged" ?
          "" : " (the whole host)"));
  }

  // The dry run's message, each host's plan, and whatever else its answer lists.
  function describeDryRun(body, answer) {
    const others = Object.entries(answer).filter(([key, value]) =>
      key !== "message" && key !== "success" && key !== "plan" && value !== null &&
        !(Array.isArray(value) && value.length === 0));
    return zonedTimes([body.service_name + ": " + (answer.message || "no message")]
        .concat(describePlan(answer.plan))
        .concat(others.map(([key, value]) => key + ": " + JSON.stringify(value))).join("; "));
  }

  async function postProfileRequest(body) {
    return apiJson("/api/metrics/profile_request", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
  }

  function hideReview() {
    workloads.review = null;
    byId("workload-review").hidden = true;
  }

  function showReview(bodies, answers, count) {
    workloads.review = bodies;
    byId("workload-review-what").textContent = describeRequest(bodies[0], count);
    byId("workload-review-targets").replaceChildren(...bodies.flatMap((body) =>
      body.target_entities.map((selector) =>
        element("li", body.service_name + ": " + describeSelectors([selector])))));
    byId("workload-review-answers").replaceChildren(...bodies.map((body, index) =>
      element("li", describeDryRun(body, answers[index]))));
    byId("workload-review").hidden = false;
    byId("workload-confirm").focus();
  }

  async function reviewSelection(event) {
    event.preventDefault();
    const result = byId("workload-result");
    const type = event.submitter && event.submitter.value === "stop" ? "stop" : "start";
    const rows = Array.from(workloads.selected.values());
    hideReview();
    if (rows.length === 0) {
      result.textContent = "Select rows of the table first.";
      return;
    }
    const bodies = selectionRequests(type, workloads.scope, rows);
    result.textContent = "Asking the server for a dry run...";
    await reporting(result, async () => {
      const answers = [];
      for (const body of bodies) answers.push(await postProfileRequest({ ...body, dry_run: true }));
      result.textContent = "";
      showReview(bodies, answers, rows.length);
    });
  }

  async function confirmReview() {
    const bodies = workloads.review;
    if (!bodies) return;
    hideReview();
    const result = byId("workload-result");
    const lines = [];
    for (const body of bodies) {
      try {
        const answer = await postProfileRequest(body);
        lines.push(body.service_name + ": " + answer.message + " (request " +
            (answer.request_id || "none") + ")");
      } catch (error) {
        if (error instanceof Refused) return;
        lines.push(body.service_name + ": refused: " + error.message);
      }
    }
    result.textContent = lines.join("\n");
    clearSelection();
    scheduleRefresh();
  }

  function cancelReview() {
    hideReview();
    byId("workload-result").textContent = "Cancelled: nothing was sent.";
  }

  // ---- Commands -------------------------------------------------------------------------------

  async function showCommand(commandId) {
    await reporting(byId("notice"), async () => {
      const command = await apiJson("/api/commands/" + encodeURIComponent(commandId));
      byId("command-title").textContent = "Command " + commandId;
      byId("command-detail").textContent = JSON.stringify(command, null, 2);
      byId("command-title").hidden = false;
      byId("command-detail").hidden = false;
    });
  }

  async function refreshCommands() {
    const [listed, hosts] = await Promise.all([apiJson("/api/commands?limit=200"),
      apiJson("/api/hosts?limit=1000")]);
    const commands = listed.commands;
    const hostsByKey = new Map(hosts.hosts.map((host) =>
      [host.hostname + "\n" + host.service_name, host]));
    const sessions = commands.map((command) => commandSession(command, hostsByKey));
    fillTable(byId("commands"), commands, (command, index) => {
      const status = command.current ? command.status + " (current)" :
          command.replaced_by ? command.status + ", replaced" : command.status;
      const tr = row([formatTime(command.created_at), command.hostname, command.service_name,
        command.command_type, status, sessions[index], formatTime(command.sent_at),
        formatTime(command.completed_at), command.execution_time ?? "",
        command.error_message || "",
        button(command.command_id, () => showCommand(command.command_id))]);
      tr.cells[4].className = "status-" + command.status;
      tr.cells[5].className = "session-" + sessions[index].split(" ")[0];
      return tr;
    }, "No commands yet.", sessions);
  }

  // ---- Profiles -------------------------------------------------------------------------------

  function kilobytes(bytes) {
    return (bytes / 1024).toFixed(1) + " KiB";
  }

  // The profile as collapsed text or as pprof (for go tool pprof).
  async function download(gpid, format, extension) {
    await reporting(byId("notice"), async () => {
      const blob = await (await api("/api/profiles/" + gpid + "/" + format)).blob();
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = "profile_" + gpid + extension;
      link.click();
      setTimeout(() => URL.revokeObjectURL(link.href), 60000);
    });
  }

  async function openProfileFlamegraph(profile) {
    navigate("flamegraph");
    await showFlamegraph("/api/profiles/" + profile.gpid + "/flamegraph",
        "Profile " + profile.gpid + " of " + profile.service_name + " on " + profile.hostname);
  }

  function openMerged(profile) {
    byId("flamegraph-service").value = profile.service_name;
    byId("flamegraph-host").value = "";
    navigate("flamegraph");
  }

  function seconds(ns) {
    return ns === undefined ? "" : (ns / 1e9).toFixed(3);
  }

  function busyShare(device) {
    if (device.busy_ns === undefined || !device.wall_ns) return "";
    return (100 * device.busy_ns / device.wall_ns).toFixed(1) + "%";
  }

  async function showGpus(profile) {
    await reporting(byId("notice"), async () => {
      const devices = (await apiJson("/api/profiles/" + profile.gpid + "/gpus")).devices;
      const where = "profile " + profile.gpid + " of " + profile.service_name + " on " +
          profile.hostname;
      byId("gpus-title").textContent = devices.length === 0
        ? "No GPU work in " + where : "GPUs of " + where;
      fillTable(byId("gpu-devices"), devices, (device) => {
        const caption = "GPU " + device.device + " of " + where;
        const numbers = [seconds(device.kernel_ns), seconds(device.copy_ns),
          seconds(device.busy_ns), seconds(device.idle_ns), busyShare(device), device.samples]
            .map((text) => element("td", text, "number"));
        return row(["GPU " + device.device, ...numbers, button("Flamegraph", async () => {
          navigate("flamegraph");
          await showFlamegraph("/api/profiles/" + profile.gpid + "/flamegraph?gpu=" +
              device.device, caption);
        })]);
      }, "This profile has no GPU work.");
      byId("gpus").hidden = false;
    });
  }

  // "1,234 (5,678 idle)"; empty for a profile stored before the server counted them.
  function sampleCounts({ samples, idle_samples: idle }) {
    if (samples == null) return "";
    const counted = (number) => number.toLocaleString("en-US");
    return counted(samples) + (idle ? " (" + counted(idle) + " idle)" : "");
  }

  async function refreshProfiles() {
    const profiles = (await apiJson("/api/profiles?limit=100")).profiles;
    fillTable(byId("profiles"), profiles, (profile) => {
      const actions = document.createElement("td");
      actions.append(button("Flamegraph", () => openProfileFlamegraph(profile)), " ",
          button("GPUs", () => showGpus(profile)), " ",
          button("Merge the service", () => openMerged(profile)), " ",
          button("Collapsed", () => download(profile.gpid, "collapsed", ".col")), " ",
          button("pprof", () => download(profile.gpid, "pprof", ".pb.gz")));
      const tr = row([profile.gpid, profile.service_name, profile.hostname,
        formatTime(profile.start_time), formatTime(profile.end_time), sampleCounts(profile),
        profile.cpu_seconds == null ? "" : profile.cpu_seconds.toFixed(2) + " s",
        kilobytes(profile.raw_size), actions]);
      tr.dataset.gpid = profile.gpid;
      return tr;
    }, "No profiles yet.");
  }

  // ---- Flamegraphs ----------------------------------------------------------------------------

  // The SVG keeps its own script (zoom, search) and style. Shown from a blob: URL it runs under
  // this page's Content-Security-Policy, so both take this page's nonce. The server escapes every
  // quote in the SVG's text, so ' nonce="' is only ever its own attribute.
  //
  // The drawing fits the frame's width: its root's width becomes 100% (its viewBox keeps the
  // proportions) and the frame takes the height that width gives it.
  function showSvg(svg) {
    shownSvg = svg;
    const frame = byId("flamegraph");
    frame.hidden = false;
    let markup = svg.replace(/ nonce="[^"]*"/g, ' nonce="' + pageNonce + '"')
        .replace(/(<text id="(?:title|subtitle)"[^>]*>)([^<]*)/g,
            (whole, start, text) => start + zonedTimes(text));
    const size = /<svg [^>]*?width="(\d+)" height="(\d+)"/.exec(markup);
    if (size) {
      const [whole, width, height] = size;
      markup = markup.replace(whole, whole.replace(/width="\d+" height="\d+"/, 'width="100%"'));
      const shown = frame.clientWidth || Number(width);
      frame.height = String(Math.ceil(Number(height) * shown / Number(width)) + 4);
    }
    if (flamegraphUrl) URL.revokeObjectURL(flamegraphUrl);
    flamegraphUrl = URL.createObjectURL(new Blob([markup], { type: "image/svg+xml" }));
    frame.src = flamegraphUrl;
  }

  // Hides the merged profile's views, or the server's drawing, for the other to show.
  function showDrawing(drawn) {
    byId("flamegraph").hidden = !drawn;
    byId("svg-hint").hidden = !drawn;
    byId("profile-tabs").hidden = drawn;
    for (const area of ["flame-area", "top-area", "sandwich-area"]) {
      byId(area).hidden = drawn || area !== mergedView.tab + "-area" &&
          !(area === "flame-area" && mergedView.tab === "icicle");
    }
  }

  // A profile's, a GPU's or a diff's flamegraph, as the server draws it.
  async function showFlamegraph(path, caption) {
    const where = byId("flamegraph-caption");
    where.textContent = "Loading " + caption + "...";
    await reporting(where, async () => {
      let response;
      try {
        response = await api(path);
      } catch (error) {
        byId("flamegraph").hidden = true;  // not the last graph under this one's error
        throw error;
      }
      const merged = response.headers.get("X-Dormant-Profiles");
      showSvg(await response.text());
      showDrawing(true);
      if (merged !== null) caption += " (" + merged + (merged === "1" ? " profile)" : " profiles)");
      where.textContent = caption;
    });
  }

  // The merged profile in the page: flame, icicle, top functions, sandwich.
  const mergedView = {
    root: null,       // as parsed, every process
    shown: null,      // with the process and runtime filters applied
    runtimes: new Map(),  // each process's runtime
    tab: "flame",
    graph: null,
    sort: { key: "self", descending: true },
    sandwiched: null,  // the function of the sandwich view
  };

  function rangeOf(sinceId, untilId) {
    const name = (id) => byId(id).closest("fieldset").querySelector("legend").textContent + ", " +
        byId(id).closest("label").firstChild.textContent.trim();
    const since = dateOfInput(byId(sinceId).value, name(sinceId));
    const until = dateOfInput(byId(untilId).value, name(untilId));
    return { since: since ? since.toISOString() : "", until: until ? until.toISOString() : "" };
  }

  // The labels the server narrows a merge by: each field, its parameter and its Studio tag.
  const labelFields = [["flamegraph-host", "hostname", "HostName"],
    ["flamegraph-container", "container", "ContainerName"], ["flamegraph-pod", "pod", "PodName"],
    ["flamegraph-namespace", "namespace", "Namespace"]];

  function mergeParameters() {
    const { since, until } = rangeOf("flamegraph-since", "flamegraph-until");
    const parameters = { service: byId("flamegraph-service").value.trim() };
    for (const [id, name] of labelFields) parameters[name] = byId(id).value.trim();
    return { ...parameters, since, until };
  }

  // A select's options: "every …" (value "") then `names`, keeping the choice where it still is.
  function fillChoices(select, every, names) {
    const chosen = select.value;
    const first = element("option", every);
    first.value = "";
    select.replaceChildren(first, ...names.map((name) => {
      const option = element("option", name);
      option.value = name;
      return option;
    }));
    select.value = names.includes(chosen) ? chosen : "";
  }

  function fillProcessChoices(root) {
    fillChoices(byId("flamegraph-process"), "every process", FlameView.processNames(root));
    mergedView.runtimes = FlameView.processRuntimes(root);
    fillChoices(byId("flamegraph-runtime"), "every runtime",
        [...new Set(mergedView.runtimes.values())].sort());
  }

  // The process and runtime filters, which the page applies to the merged profile it has.
  function applyProcessFilter() {
    if (!mergedView.root) return;
    const process = byId("flamegraph-process").value;
    const runtime = byId("flamegraph-runtime").value;
    mergedView.shown = process || runtime ?
      FlameView.filterRoot(mergedView.root, (name) => (!process || name === process) &&
          (!runtime || mergedView.runtimes.get(name) === runtime)) : mergedView.root;
    mergedView.sandwiched = null;
    renderProfileTab();
  }

  function hideMerged() {
    mergedView.root = mergedView.shown = null;
    fillChoices(byId("flamegraph-process"), "every process", []);
    fillChoices(byId("flamegraph-runtime"), "every runtime", []);
    for (const area of ["flame-area", "top-area", "sandwich-area", "profile-tabs", "flamegraph"]) {
      byId(area).hidden = true;
    }
  }

  async function showMerged() {
    const where = byId("flamegraph-caption");
    const service = byId("flamegraph-service").value.trim();
    const caption = "Merged flamegraph of " + service;
    where.textContent = "Loading " + caption + "...";
    await reporting(where, async () => {
      let text;
      let profiles;
      try {
        const parameters = { ...mergeParameters(), format: "collapsed" };
        if (byId("flamegraph-idle").checked) parameters.idle = "1";
        const response = await api("/api/flamegraph" + query(parameters));
        profiles = response.headers.get("X-Dormant-Profiles");
        text = await response.text();
      } catch (error) {
        hideMerged();
        throw error;
      }
      mergedView.root = FlameView.parse(text);
      fillProcessChoices(mergedView.root);
      applyProcessFilter();
      where.textContent = caption + (profiles === null ? "" : " (" + profiles +
          (profiles === "1" ? " profile, " : " profiles, ") +
          mergedView.root.total + " samples)");
    });
    await drawTimeline();
  }

  function markChosenProfileTab() {
    for (const tab of byId("profile-tabs").querySelectorAll("button[data-tab]")) {
      tab.setAttribute("aria-selected", String(tab.dataset.tab === mergedView.tab));
    }
  }

  function renderProfileTab() {
    markChosenProfileTab();
    showDrawing(false);
    if (!mergedView.shown) return;
    if (mergedView.tab === "flame" || mergedView.tab === "icicle") {
      byId("flame-area").replaceChildren();
      mergedView.graph = new FlameView.FlameGraph(byId("flame-area"), {
        inverted: mergedView.tab === "icicle",
      });
      mergedView.graph.render(mergedView.shown);
      // A flame's root and widest frames are at its bottom: it opens there.
      const area = byId("flame-area");
      area.scrollTop = mergedView.tab === "flame" ? area.scrollHeight : 0;
      searchFrames();
    } else if (mergedView.tab === "top") {
      renderTopFunctions();
    } else {
      renderSandwich();
    }
  }

  function searchFrames() {
    const text = byId("frame-search").value;
    if (!mergedView.graph || mergedView.tab === "top" || mergedView.tab === "sandwich") return;
    const share = mergedView.graph.search(text);
    byId("search-matched").textContent = text ? "Matched: " + share.toFixed(2) + "%" : "";
  }

  function percent(part, whole) {
    return whole ? (100 * part / whole).toFixed(2) + "%" : "";
  }

  function renderTopFunctions() {
    if (!mergedView.shown) return;
    const total = mergedView.shown.total;
    const matches = FlameView.matcherFor(byId("frame-search").value);
    const { key, descending } = mergedView.sort;
    const rows = FlameView.topFunctions(mergedView.shown)
        .filter((each) => !matches || matches(each.name))
        .sort((a, b) => {
          const order = key === "name" ? a.name.localeCompare(b.name) : a[key] - b[key];
          return descending ? -order : order;
        })
        .slice(0, 500);
    const body = byId("top-functions").tBodies[0];
    body.replaceChildren(...rows.map((each) => {
      const numbers = [each.self + " (" + percent(each.self, total) + ")",
        each.total + " (" + percent(each.total, total) + ")"].map((text) =>
        element("td", text, "number"));
      return row([each.name, ...numbers, button("Sandwich", () => {
        mergedView.sandwiched = each.name;
        chooseProfileTab("sandwich");
      })]);
    }));
    delete byId("top-functions").dataset.shown;
  }

  function renderSandwich() {
    const name = mergedView.sandwiched;
    byId("sandwich-title").textContent = name ? name :
      "Choose a function in Top functions (its Sandwich button) first.";
    for (const id of ["sandwich-callers", "sandwich-callees"]) byId(id).replaceChildren();
    if (!name) return;
    const { callers, callees } = FlameView.sandwich(mergedView.shown, name);
    new FlameView.FlameGraph(byId("sandwich-callers"), { inverted: false }).render(callers);
    new FlameView.FlameGraph(byId("sandwich-callees"), { inverted: true }).render(callees);
  }

  function chooseProfileTab(tab) {
    mergedView.tab = tab;
    renderProfileTab();
  }

  function sortTopFunctions(key) {
    if (!mergedView.shown) return;
    mergedView.sort = { key, descending: mergedView.sort.key === key ? !mergedView.sort.descending : true };
    renderTopFunctions();
  }

  // ---- Samples over time: the range and the baseline brushed on it ---------------------------

  // The graph's window: the range as a preset or Show set it; brushing chooses within it.
  const timeline = { start: 0, end: 0, slot: 60000, points: [], window: null };

  function studioFilter() {
    const rules = [];
    for (const [id, , tag] of labelFields) {
      const value = byId(id).value.trim();
      if (value) rules.push({ [tag]: { $eq: value } });
    }
    return rules.length ? JSON.stringify({ id: "", filter: { $and: rules } }) : "";
  }

  // The range of the fields (a day back from its end when From is empty, as the server reads it).
  function fieldSpan() {
    const range = rangeOf("flamegraph-since", "flamegraph-until");
    const now = Date.now();
    const end = range.until ? Date.parse(range.until) : now;
    const start = range.since ? Date.parse(range.since) : end - 24 * 3600000;
    return end > start ? { start, end } : { start: now - 3600000, end: now };
  }

  function timelineSpan() {
    if (!timeline.window) timeline.window = fieldSpan();
    return timeline.window;
  }

  async function drawTimeline() {
    const service = byId("flamegraph-service").value.trim();
    if (!service) return;
    try {
      const { start, end } = timelineSpan();
      timeline.start = start;
      timeline.end = end;
      // The finest slot the server offers that draws at most 300 bars.
      const minute = 60000;
      const slots = [[minute, "1 minute"], [5 * minute, "5 minute"], [15 * minute, "15 minute"],
        [60 * minute, "1 hour"], [360 * minute, "6 hour"]];
      const [slot, interval] = slots.find(([width]) => (end - start) / width <= 300) ||
          slots[slots.length - 1];
      timeline.slot = slot;
      const parameters = { serviceName: service, startTime: new Date(start).toISOString(),
        endTime: new Date(end).toISOString(), filter: studioFilter(),
        requested_interval: interval };
      const response = await api("/api/metrics/samples" + query(parameters));
      timeline.points = response.status === 204 ? [] : await response.json();
    } catch (error) {
      if (error instanceof Refused) return;
      timeline.points = [];
    }
    renderTimeline();
    await fillLabelChoices(service, timeline.start, timeline.end);
  }

  // Each label field's choices: the values with samples in the graph's range, most first (a
  // help: an answer that fails leaves the field's list empty).
  async function fillLabelChoices(serviceName, start, end) {
    const range = { serviceName, startTime: new Date(start).toISOString(),
      endTime: new Date(end).toISOString() };
    await Promise.all(labelFields.map(async ([, , tag]) => {
      let values = [];
      try {
        const response = await api("/api/v1/filters/tags/" + tag + query(range));
        if (response.status !== 204) values = await response.json();
      } catch (error) {
        values = [];
      }
      byId("label-" + tag).replaceChildren(...values.map(({ name }) => {
        const option = element("option", "");
        option.value = name;
        return option;
      }));
    }));
  }

  const svgNs = "http://www.w3.org/2000/svg";
  function svgElement(tag, attributes) {
    const node = document.createElementNS(svgNs, tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    return node;
  }

  function renderTimeline() {
    const area = byId("timeline");
    const width = area.clientWidth || 1200;
    const height = 90;
    const svg = svgElement("svg", { width: "100%", height, role: "img",
      "aria-label": "Samples over time" });
    const span = timeline.end - timeline.start;
    const xOf = (time) => (time - timeline.start) / span * width;
    const most = Math.max(1, ...timeline.points.map((point) => point.samples));
    const slot = timeline.slot;
    for (const [sinceId, untilId, name] of [["baseline-since", "baseline-until", "baseline"],
      ["flamegraph-since", "flamegraph-until", "range"]]) {
      let chosen;
      try {
        chosen = rangeOf(sinceId, untilId);
      } catch (error) {
        continue;  // the form's Show says what is wrong with it
      }
      if (!chosen.since) continue;
      const from = Math.max(0, xOf(Date.parse(chosen.since)));
      const to = Math.min(width, xOf(chosen.until ? Date.parse(chosen.until) : Date.now()));
      if (to <= from) continue;  // outside the graph
      svg.appendChild(svgElement("rect", { class: "chosen-" + name, x: from, y: 0,
        width: Math.max(1, to - from), height: height - 14 }));
    }
    for (const point of timeline.points) {
      const time = Date.parse(point.time);
      const barHeight = (height - 16) * point.samples / most;
      const bar = svgElement("rect", { class: "samples", x: xOf(time), y: height - 14 - barHeight,
        width: Math.max(1, xOf(time + slot) - xOf(time) - 1), height: barHeight });
      const title = svgElement("title", {});
      title.textContent = formatTime(point.time) + ": " + point.samples + " samples";
      bar.appendChild(title);
      svg.appendChild(bar);
    }
    for (const [x, anchor, time] of [[2, "start", timeline.start],
      [width - 2, "end", timeline.end]]) {
      const label = svgElement("text", { x, y: height - 2, "text-anchor": anchor });
      label.textContent = formatTime(new Date(time).toISOString());
      svg.appendChild(label);
    }
    if (timeline.points.length === 0) {
      const empty = svgElement("text", { x: width / 2, y: height / 2, "text-anchor": "middle" });
      empty.textContent = "No samples in this range";
      svg.appendChild(empty);
    }
    svg.addEventListener("pointerdown", startBrush);
    area.replaceChildren(svg);
  }

  function timeAt(event) {
    const box = byId("timeline").getBoundingClientRect();
    const share = Math.min(1, Math.max(0, (event.clientX - box.left) / box.width));
    return timeline.start + share * (timeline.end - timeline.start);
  }

  function startBrush(event) {
    event.preventDefault();
    const svg = event.currentTarget;
    svg.setPointerCapture(event.pointerId);
    const baseline = event.shiftKey;
    const from = timeAt(event);
    const mark = svgElement("rect", { class: baseline ? "brush-baseline" : "brush", x: 0, y: 0,
      width: 0, height: 76 });
    svg.appendChild(mark);
    const box = svg.getBoundingClientRect();
    const move = (moved) => {
      const to = timeAt(moved);
      const span = timeline.end - timeline.start;
      mark.setAttribute("x", (Math.min(from, to) - timeline.start) / span * box.width);
      mark.setAttribute("width", Math.abs(to - from) / span * box.width);
    };
    const end = async (ended) => {
      svg.removeEventListener("pointermove", move);
      svg.removeEventListener("pointerup", end);
      const to = timeAt(ended);
      // Whole minutes: profiles are kept by the minute, and a diff's two sides must not share one.
      const minute = 60000;
      const since = Math.floor(Math.min(from, to) / minute) * minute;
      const until = Math.ceil(Math.max(from, to) / minute) * minute;
      if (until - since < minute) return renderTimeline();
      const prefix = baseline ? "baseline" : "flamegraph";
      byId(prefix + "-since").value = inputValue(new Date(since));
      byId(prefix + "-until").value = inputValue(new Date(until));
      if (baseline) {
        renderTimeline();
      } else {
        await showMerged();
      }
    };
    svg.addEventListener("pointermove", move);
    svg.addEventListener("pointerup", end);
  }

  async function choosePreset(minutes) {
    const now = Date.now();
    byId("flamegraph-since").value = inputValue(new Date(now - minutes * 60000));
    byId("flamegraph-until").value = "";
    timeline.window = null;
    if (byId("flamegraph-service").value.trim()) await showMerged();
  }

  async function requestFlamegraph(event) {
    event.preventDefault();
    const diff = event.submitter && event.submitter.value === "diff";
    if (!diff) {
      timeline.window = null;  // a typed range: the graph follows it
      return showMerged();
    }
    const service = byId("flamegraph-service").value.trim();
    let parameters;
    try {
      const baseline = rangeOf("baseline-since", "baseline-until");
      parameters = { ...mergeParameters(), baseline_since: baseline.since,
        baseline_until: baseline.until };
    } catch (error) {
      hideMerged();
      byId("flamegraph-caption").textContent = error.message;
      return;
    }
    hideMerged();
    await showFlamegraph("/api/flamegraph/diff" + query(parameters),
        "Differential flamegraph of " + service);
    await drawTimeline();
  }

  function setDefaultRanges() {
    const hour = 3600 * 1000;
    const now = Date.now();
    byId("flamegraph-since").value = inputValue(new Date(now - hour));
    byId("baseline-since").value = inputValue(new Date(now - 25 * hour));
    byId("baseline-until").value = inputValue(new Date(now - 24 * hour));
  }

  // The fields keep the moments they name when the zone changes; every time shown is redrawn.
  function chooseTimeZone(zone) {
    const fields = ["flamegraph-since", "flamegraph-until", "baseline-since", "baseline-until"];
    const moments = fields.map((id) => {
      try {
        return dateOfInput(byId(id).value);
      } catch (error) {
        return undefined;  // left as typed
      }
    });
    localStorage.setItem(timeZoneKey, zone);
    fields.forEach((id, index) => {
      if (moments[index] !== undefined) {
        byId(id).value = moments[index] ? inputValue(moments[index]) : "";
      }
    });
    for (const table of document.querySelectorAll("table")) delete table.dataset.shown;
    if (timeline.end) renderTimeline();
    if (shownSvg && !byId("flamegraph").hidden) showSvg(shownSvg);
    scheduleRefresh();
  }

  // ---- Views, refresh, log in -----------------------------------------------------------------

  const refreshers = {
    hosts: refreshHosts, workloads: refreshWorkloads, commands: refreshCommands,
    profiles: refreshProfiles,
  };

  function currentView() {
    const match = /^\/ui\/([^/]+)$/.exec(location.pathname);
    return match && views.includes(match[1]) ? match[1] : "hosts";
  }

  function scheduleRefresh() {
    clearTimeout(refreshTimer);
    const refresh = refreshers[currentView()];
    if (!refresh || !sessionStorage.getItem(tokenKey)) return;
    reporting(byId("notice"), async () => {
      await refresh();
      showNotice("");
    }).finally(() => {
      if (sessionStorage.getItem(tokenKey) && refreshers[currentView()] === refresh) {
        refreshTimer = setTimeout(scheduleRefresh, refreshEveryMs);
      }
    });
  }

  function showView() {
    const view = currentView();
    for (const name of views) byId(name + "-view").hidden = name !== view;
    for (const link of byId("nav").querySelectorAll("a")) {
      if (link.dataset.view === view) {
        link.setAttribute("aria-current", "page");
      } else {
        link.removeAttribute("aria-current");
      }
    }
    scheduleRefresh();
  }

  function navigate(view) {
    if (currentView() !== view || location.pathname !== "/ui/" + view) {
      history.pushState(null, "", "/ui/" + view);
    }
    showView();
  }

  function enter() {
    byId("login-view").hidden = true;
    byId("nav").hidden = false;
    byId("logout").hidden = false;
    showView();
  }

  function logOut(message) {
    sessionStorage.removeItem(tokenKey);
    clearTimeout(refreshTimer);
    for (const name of views) byId(name + "-view").hidden = true;
    byId("nav").hidden = true;
    byId("logout").hidden = true;
    byId("login-view").hidden = false;
    showNotice(message);
    byId("token").focus();
  }

  byId("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = byId("token").value.trim();
    byId("token").value = "";
    if (!token) return;
    sessionStorage.setItem(tokenKey, token);
    showNotice("");
    enter();
  });
  byId("logout").addEventListener("click", () => logOut(""));
  byId("nav").addEventListener("click", (event) => {
    const link = event.target.closest("a[data-view]");
    if (!link) return;
    event.preventDefault();
    navigate(link.dataset.view);
  });
  window.addEventListener("popstate", showView);
  byId("profiling-form").addEventListener("submit", requestProfiling);
  byId("profiling-service").addEventListener("input", updateHostChoices);
  byId("flamegraph-form").addEventListener("submit", requestFlamegraph);
  byId("range-presets").addEventListener("click", (event) => {
    const preset = event.target.closest("button[data-minutes]");
    if (preset) choosePreset(Number(preset.dataset.minutes));
  });
  byId("flamegraph-process").addEventListener("change", applyProcessFilter);
  byId("flamegraph-runtime").addEventListener("change", applyProcessFilter);
  byId("profile-tabs").addEventListener("click", (event) => {
    const tab = event.target.closest("button[data-tab]");
    if (tab) chooseProfileTab(tab.dataset.tab);
  });
  byId("frame-search").addEventListener("input", () => {
    if (mergedView.tab === "top") renderTopFunctions(); else searchFrames();
  });
  byId("unzoom").addEventListener("click", () => {
    if (mergedView.graph) mergedView.graph.reset();
    searchFrames();
  });
  byId("top-functions").tHead.addEventListener("click", (event) => {
    const sort = event.target.closest("button[data-sort]");
    if (sort) sortTopFunctions(sort.dataset.sort);
  });
  byId("time-zone").value = inUtc() ? "UTC" : "local";
  byId("time-zone").addEventListener("change", () => chooseTimeZone(byId("time-zone").value));
  byId("workload-tabs").addEventListener("click", (event) => {
    const tab = event.target.closest("button[data-scope]");
    if (tab) chooseScope(tab.dataset.scope);
  });
  byId("workload-filters").addEventListener("submit", (event) => {
    event.preventDefault();
    workloads.filters = readFilters();
    askAgain();
  });
  byId("clear-filters").addEventListener("click", () => {
    byId("workload-filters").reset();
    workloads.filters = {};
    askAgain();
  });
  byId("workloads-previous").addEventListener("click", () => turnPage(-1));
  byId("workloads-next").addEventListener("click", () => turnPage(1));
  byId("workload-page-size").addEventListener("change", () => {
    workloads.page = 0;
    scheduleRefresh();
  });
  byId("workload-profiling-form").addEventListener("submit", reviewSelection);
  byId("workload-confirm").addEventListener("click", confirmReview);
  byId("workload-cancel").addEventListener("click", cancelReview);

  setDefaultRanges();
  markChosenTab();
  renderWorkloadHead();
  if (sessionStorage.getItem(tokenKey)) {
    enter();
  } else {
    logOut("");
  }
})();
