"use strict";
// The Dormant console: reads and drives the server's JSON API with the token kept in this tab's
// session storage. Every value is put in the page with textContent or as an attribute set by the
// DOM, never parsed as markup.
(function () {
  const pageNonce = document.currentScript.nonce;
  const tokenKey = "dormant.token";
  const views = ["hosts", "workloads", "commands", "profiles", "flamegraph"];
  const refreshEveryMs = 3000;
  const byId = (id) => document.getElementById(id);

  let knownHosts = [];
  let refreshTimer = null;
  let flamegraphUrl = null;

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

  function localTime(iso) {
    return iso ? new Date(iso).toLocaleString() : "";
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
      if (where === byId("notice")) {
        showNotice(error.message);
      } else {
        where.textContent = error.message;
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
    byId("health-detail").textContent = JSON.stringify(host.agent_health, null, 2);
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
  function hostSession(host) {
    const health = host.agent_health;
    if (host.status === "offline") return "unknown: the agent is silent";
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
    const health = host && host.status !== "offline" ? host.agent_health : null;
    const running = health && (health.state === "running" || health.state === "stopping") &&
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
        host.service_name, host.status, localTime(host.last_heartbeat_at),
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
      const answer = await apiJson("/api/metrics/profile_request", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      result.textContent = (type === "start" ? "Start" : "Stop") + " requested for " +
          hostnames.join(", ") + ": " + (answer.message || "") + " (request " +
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
        shown.time ? localTime(value) : value;
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
    let text = "ended " + localTime(subscription.ended_at);
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
      const tr = row([localTime(subscription.created_at), subscription.service_name,
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
    return [body.service_name + ": " + (answer.message || "no message")]
        .concat(describePlan(answer.plan))
        .concat(others.map(([key, value]) => key + ": " + JSON.stringify(value))).join("; ");
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
      const tr = row([localTime(command.created_at), command.hostname, command.service_name,
        command.command_type, status, sessions[index], localTime(command.sent_at),
        localTime(command.completed_at), command.execution_time ?? "",
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

  async function downloadCollapsed(gpid) {
    await reporting(byId("notice"), async () => {
      const blob = await (await api("/api/profiles/" + gpid + "/collapsed")).blob();
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = "profile_" + gpid + ".col";
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

  async function refreshProfiles() {
    const profiles = (await apiJson("/api/profiles?limit=100")).profiles;
    fillTable(byId("profiles"), profiles, (profile) => {
      const actions = document.createElement("td");
      actions.append(button("Flamegraph", () => openProfileFlamegraph(profile)), " ",
          button("GPUs", () => showGpus(profile)), " ",
          button("Merge the service", () => openMerged(profile)), " ",
          button("Download", () => downloadCollapsed(profile.gpid)));
      const tr = row([profile.gpid, profile.service_name, profile.hostname,
        localTime(profile.start_time), localTime(profile.end_time),
        kilobytes(profile.raw_size), actions]);
      tr.dataset.gpid = profile.gpid;
      return tr;
    }, "No profiles yet.");
  }

  // ---- Flamegraphs ----------------------------------------------------------------------------

  // The SVG keeps its own script (zoom, search) and style. Shown from a blob: URL it runs under
  // this page's Content-Security-Policy, so both take this page's nonce. The server escapes every
  // quote in the SVG's text, so ' nonce="' is only ever its own attribute.
  function showSvg(svg) {
    const markup = svg.replace(/ nonce="[^"]*"/g, ' nonce="' + pageNonce + '"');
    if (flamegraphUrl) URL.revokeObjectURL(flamegraphUrl);
    flamegraphUrl = URL.createObjectURL(new Blob([markup], { type: "image/svg+xml" }));
    byId("flamegraph").src = flamegraphUrl;
    byId("flamegraph").hidden = false;
  }

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
      if (merged !== null) caption += " (" + merged + (merged === "1" ? " profile)" : " profiles)");
      where.textContent = caption;
    });
  }

  function isoOf(inputId) {
    const value = byId(inputId).value;
    return value ? new Date(value).toISOString() : "";
  }

  async function requestFlamegraph(event) {
    event.preventDefault();
    const diff = event.submitter && event.submitter.value === "diff";
    const service = byId("flamegraph-service").value.trim();
    const parameters = {
      service,
      hostname: byId("flamegraph-host").value.trim(),
      container: byId("flamegraph-container").value.trim(),
      since: isoOf("flamegraph-since"),
      until: isoOf("flamegraph-until"),
    };
    if (diff) {
      parameters.baseline_since = isoOf("baseline-since");
      parameters.baseline_until = isoOf("baseline-until");
      await showFlamegraph("/api/flamegraph/diff" + query(parameters),
          "Differential flamegraph of " + service);
    } else {
      if (byId("flamegraph-idle").checked) parameters.idle = "1";
      await showFlamegraph("/api/flamegraph" + query(parameters),
          "Merged flamegraph of " + service);
    }
  }

  // A datetime-local value: local time, to the second.
  function localInputValue(date) {
    const shifted = new Date(date.getTime() - date.getTimezoneOffset() * 60000);
    return shifted.toISOString().slice(0, 19);
  }

  function setDefaultRanges() {
    const hour = 3600 * 1000;
    const now = Date.now();
    byId("flamegraph-since").value = localInputValue(new Date(now - hour));
    byId("baseline-since").value = localInputValue(new Date(now - 25 * hour));
    byId("baseline-until").value = localInputValue(new Date(now - 24 * hour));
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
