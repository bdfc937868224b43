"use strict";
// The Dormant console: reads and drives the server's JSON API with the token kept in this tab's
// session storage. Every value is put in the page with textContent or as an attribute set by the
// DOM, never parsed as markup.
(function () {
  const pageNonce = document.currentScript.nonce;
  const tokenKey = "dormant.token";
  const views = ["hosts", "commands", "profiles", "flamegraph"];
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

  // `data`: what the rows show; when it has not changed, the rows stay as they are.
  function fillTable(table, data, makeRow, emptyText) {
    const shown = JSON.stringify(data);
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

  function query(parameters) {
    // Not URLSearchParams: it writes a space as "+", which the server reads as a "+".
    const pairs = Object.entries(parameters).filter(([, value]) => value !== "" && value != null);
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
        const answer = await response.json();
        if (answer && answer.message) message = answer.message;
      } catch (error) {
        // not JSON: the status says it
      }
      throw new Error(message);
    }
    return response;
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

  function healthCell(health) {
    const td = document.createElement("td");
    if (!health) {
      td.textContent = "not reported";
      return td;
    }
    const problems = ["heartbeat", "completions", "uploads"]
        .filter((name) => health[name] && health[name].consecutive_failures > 0)
        .map((name) => name + " failing");
    const details = document.createElement("details");
    const summary = element("summary", [health.state || "?"].concat(problems).join(", "));
    summary.className = "health-" + String(health.state || "unknown");
    details.append(summary, element("pre", JSON.stringify(health, null, 2)));
    td.appendChild(details);
    return td;
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
    // A refresh keeps open the health details someone opened.
    const opened = new Set(Array.from(byId("hosts").querySelectorAll("details[open]"),
        (details) => details.closest("tr").dataset.hostname));
    fillTable(byId("hosts"), hosts, (host) => {
      const tr = row([host.hostname, host.service_name, host.status,
        localTime(host.last_heartbeat_at), host.agent_version || "",
        describeCommand(host.current_command), healthCell(host.agent_health),
        button("Select", () => chooseForProfiling(host))]);
      tr.cells[2].className = "state-" + host.status;
      tr.dataset.hostname = host.hostname;
      const details = tr.querySelector("details");
      if (details && opened.has(host.hostname)) details.open = true;
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
    const commands = (await apiJson("/api/commands?limit=200")).commands;
    fillTable(byId("commands"), commands, (command) => {
      const status = command.current ? command.status + " (current)" :
          command.replaced_by ? command.status + ", replaced" : command.status;
      const tr = row([localTime(command.created_at), command.hostname, command.service_name,
        command.command_type, status, localTime(command.sent_at),
        localTime(command.completed_at), command.execution_time ?? "",
        command.error_message || "",
        button(command.command_id, () => showCommand(command.command_id))]);
      tr.cells[4].className = "status-" + command.status;
      return tr;
    }, "No commands yet.");
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

  async function refreshProfiles() {
    const profiles = (await apiJson("/api/profiles?limit=100")).profiles;
    fillTable(byId("profiles"), profiles, (profile) => {
      const actions = document.createElement("td");
      actions.append(button("Flamegraph", () => openProfileFlamegraph(profile)), " ",
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
      const response = await api(path);
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

  const refreshers = { hosts: refreshHosts, commands: refreshCommands, profiles: refreshProfiles };

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

  setDefaultRanges();
  if (sessionStorage.getItem(tokenKey)) {
    enter();
  } else {
    logOut("");
  }
})();
