#!/usr/bin/python3
"""The web console in headless Chromium against a real dormant-server and dormant-agent: log in,
see the agent, start a profile, see it arrive, open the merged flamegraph, search, zoom, stop;
values that hold markup show as text; documents are served under a strict Content-Security-Policy.
A screenshot of each step goes to --output. Without Chromium, its driver or root (the agent's
perf needs it), only the served headers are checked and it exits 77 (skipped), saying why."""

import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.parse
from datetime import datetime, timedelta, timezone
from pathlib import Path

from dormant_processes import AgentProcess, ServerProcess, wait_for

SKIPPED = 77
TOKEN = "console-test-token-0123456789"
SERVICE = "console-it"
FREQUENCY = 49  # the Start's, in Hz
BROWSER_ZONE, BROWSER_OFFSET = "Asia/Kolkata", "UTC+05:30"
# A node's pods: a Java one (our container name) and a Python one (dockershim's).
K8S_SERVICE = "console-k8s"
K8S_STACKS = ("0;shop/web-7d9f8b6c5-x2x9k/app;java;Main.run_[j];Work.step_[j] 40\n"
              "0;k8s_worker_batch-0_jobs_0f1e_3;python3;run (job.py:3)_[p] 30\n"
              "0;;sshd;main;poll_[k] 5\n")
HOST_MARKUP = "<script>alert(1)</script>"
SERVICE_MARKUP = "svc<script>alert(2)</script>"
FRAME_MARKUP = "<img src=x onerror=alert(3)>"
HEALTH_MARKUP = "<b onmouseover=alert(4)>idle</b>"


def arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--gen-certs", required=True)
    parser.add_argument("--output", required=True, help="folder for the screenshots")
    return parser.parse_args()


def browser_or_skip_reason():
    for program in ("chromium", "chromedriver"):
        if shutil.which(program) is None:
            return False, f"{program} is not installed (scripts/install-deps installs it)"
    if importlib.util.find_spec("selenium") is None:
        return False, "python3-selenium is not installed (scripts/install-deps installs it)"
    return True, None


def check_document_headers(reply, what):
    assert reply.status == 200, f"{what}: {reply.status} {reply.body[:300]!r}"
    policy = reply.headers.get("Content-Security-Policy", "")
    nonce = re.search(r"script-src 'nonce-([A-Za-z0-9+/=]+)'", policy)
    assert nonce, f"{what}: no nonce script-src in its policy: {policy!r}"
    assert "default-src 'none'" in policy, f"{what}: {policy!r}"
    assert f"style-src 'nonce-{nonce.group(1)}'" in policy, f"{what}: {policy!r}"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, f"{what}: {policy!r}"
    assert reply.headers.get("X-Content-Type-Options") == "nosniff", what
    return nonce.group(1)


def check_served_headers(server, gpid):
    for path in ("/", "/ui/profiles"):
        reply = server.request(path, bearer=False)
        nonce = check_document_headers(reply, path)
        page = reply.body.decode()
        assert reply.headers.get("Content-Type").startswith("text/html"), path
        assert page.count(f'nonce="{nonce}"') == 2, f"{path}: its script and style take the nonce"
        assert "{{" not in page, f"{path}: a placeholder was left in the page"
        assert not re.search(r"<[^>]+\son[a-z]+\s*=", page), f"{path}: an inline event handler"
        assert not re.search(r"<[^>]+\sstyle\s*=", page), f"{path}: a style attribute"
    a_nonce = check_document_headers(server.request("/", bearer=False), "/")
    assert a_nonce != nonce, "a new nonce for every response"
    service = "service=" + urllib.parse.quote(SERVICE_MARKUP, safe="")
    split = (datetime.now(timezone.utc).replace(second=0, microsecond=0) -
             timedelta(minutes=15)).strftime("%Y-%m-%dT%H:%M:%SZ")
    range_ = f"since={split}&until=2100-01-01T00:00:00Z"
    baseline = f"baseline_since=2020-01-01T00:00:00Z&baseline_until={split}"
    for path in (f"/api/profiles/{gpid}/flamegraph", f"/api/flamegraph?{service}&{range_}",
                 f"/api/flamegraph/diff?{service}&{range_}&{baseline}"):
        reply = server.request(path)
        nonce = check_document_headers(reply, path)
        assert reply.headers.get("Content-Type").startswith("image/svg+xml"), path
        svg = reply.body.decode()
        assert f'nonce="{nonce}"' in svg, f"{path}: its script takes the nonce"
        assert "<img" not in svg and "<script>alert" not in svg, f"{path}: markup not escaped"
    assert server.request(f"/api/flamegraph?{service}", bearer=False).status == 401


def plant_markup(server):
    """A host and a profile whose names hold markup, the way an agent would send them."""
    beat = {"hostname": HOST_MARKUP, "service_name": SERVICE_MARKUP, "ip_address": "10.0.0.7",
            "status": "active", "timestamp": "2026-01-01T10:00:00", "last_command_id": None,
            "received_command_ids": [], "executed_command_ids": [],
            "perf_supported_events": ["cpu-clock"], "agent_version": "test",
            "agent_health": {"state": HEALTH_MARKUP}}
    reply = server.request("/api/metrics/heartbeat", body=beat)
    assert reply.status == 200, reply.body
    # Twenty minutes ago too: a differential flamegraph's baseline.
    plant_profile(server, SERVICE_MARKUP, HOST_MARKUP, "0;;evil;other 3\n", minutes_ago=20)
    return plant_profile(server, SERVICE_MARKUP, HOST_MARKUP,
                         f"0;;evil;{FRAME_MARKUP};leaf 5\n0;;evil;other 3\n")


def plant_gpu_profile(server):
    """A profile of a program on two GPUs, as the agent's GPU profiler writes one."""
    devices = {"0": {"kernel_ns": 2_000_000_000, "copy_ns": 100_000_000,
                     "busy_ns": 2_050_000_000, "idle_ns": 57_950_000_000,
                     "wall_ns": 60_000_000_000},
               "1": {"kernel_ns": 500_000_000, "copy_ns": 0, "busy_ns": 500_000_000,
                     "idle_ns": 59_500_000_000, "wall_ns": 60_000_000_000}}
    return plant_profile(
        server, "gpu-console-it", "gpu-host",
        "0;;python;[GPU 0];main;cudaLaunchKernel;[stream 7];[GPU] gemm 22\n"
        "0;;python;[GPU 1];main;cudaLaunchKernel;[stream 9];[GPU] softmax 5\n",
        {"gpu": {"gpu_devices": devices}})


def plant_profile(server, service, hostname, stacks, more_header=None, minutes_ago=10):
    metadata = {
        "hostname": hostname, "current_time": "2026-01-01T10:00:00", "spawn_time": "2026-07-25T17:20:00",
        "spawn_uptime_ms": 1000, "private_ip": "10.0.0.7", "cloud_provider": "Unknown",
        "processors": 2, "memory_capacity_mb": 1024, "system_name": "Linux",
        "os_name": "Debian GNU/Linux", "os_release": "12", "kernel_release": "6.1.0",
        "kernel_version": "#1 SMP", "hardware_type": "x86_64", "pid": 42,
        "mac_address": "02:00:00:00:00:01", "agent_version": "test", "libc_type": "glibc",
        "libc_version": "2.36", "python_version": "", "run_mode": "standalone_executable",
        "deployment_type": "instances", "run_arguments": {"service_name": service},
        "profiling_mode": "cpu"}
    header = {"containers": [], "metadata": metadata, "metrics": {"cpu_avg": 1.0, "mem_avg": 1.0}}
    header.update(more_header or {})
    collapsed = f"# {json.dumps(header)}\n{stacks}"
    reply = server.upload_profile(service, hostname, collapsed, minutes_ago)
    assert reply.status == 200, reply.body
    return reply.json()["gpid"]


class Console:
    """The page in Chromium, a screenshot per step."""

    def __init__(self, server, output: Path):
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service

        options = Options()
        options.binary_location = shutil.which("chromium")
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1000",
                     f"--ignore-certificate-errors-spki-list={server.spki_sha256()}"):
            options.add_argument(flag)
        # A zone far from UTC, with a half-hour offset, for the "Times in" switch to show.
        service = Service(shutil.which("chromedriver"), env={**os.environ, "TZ": BROWSER_ZONE})
        self.driver = webdriver.Chrome(service=service, options=options)
        self.server = server
        self.output = output
        self.steps = 0

    def quit(self):
        self.driver.quit()

    def screenshot(self, name):
        self.steps += 1
        path = self.output / f"{self.steps:02d}-{name}.png"
        self.driver.save_screenshot(str(path))
        print(f"screenshot: {path}", flush=True)

    def find(self, css):
        from selenium.webdriver.common.by import By
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css):
        from selenium.webdriver.common.by import By
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def wait(self, what, check, timeout_s=60):
        """check() until true. The console redraws its tables as data comes: an element found
        just before a redraw is stale, and the check is tried again."""
        from selenium.common.exceptions import StaleElementReferenceException

        def fresh_check():
            try:
                return check()
            except StaleElementReferenceException:
                return None
        return wait_for(what, fresh_check, timeout_s)

    def click_in_row(self, table, text, label):
        """Clicks the button `label` in the row of `table` that has a cell `text`."""
        def click():
            row = self.row_with(table, text)
            buttons = [b for b in row.find_elements("css selector", "button") if b.text == label]
            if not buttons:
                return False
            buttons[0].click()
            return True
        self.wait(f"{label} in the row of {text} in {table}", click)

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def no_dialog_open(self):
        from selenium.common.exceptions import NoAlertPresentException
        try:
            text = self.driver.switch_to.alert.text
        except NoAlertPresentException:
            return
        raise AssertionError(f"a dialog opened: {text!r}")

    def row_with(self, table, text):
        for row in self.find_all(f"#{table} tbody tr"):
            if text in [cell.text for cell in row.find_elements("css selector", "td")]:
                return row
        return None

    def cell_texts(self, table):
        return self.js("return Array.from(document.querySelectorAll(arguments[0]),"
                       " (td) => td.textContent)", f"#{table} tbody td")

    def go(self, view):
        self.find(f'nav a[data-view="{view}"]').click()
        self.wait(f"the {view} view", lambda: self.find(f"#{view}-view").is_displayed())


def log_in(console):
    console.driver.get(console.server.url("/"))
    console.wait("the login form", lambda: console.find("#token").is_displayed())
    console.find("#token").send_keys(TOKEN)
    console.screenshot("login")
    console.find("#login-form button[type=submit]").click()
    console.wait("the hosts view", lambda: console.find("#hosts-view").is_displayed())
    assert console.js("return sessionStorage.getItem('dormant.token')") == TOKEN
    assert TOKEN not in console.driver.current_url


def agent_hostname(server):
    def find():
        hosts = server.request(f"/api/hosts?service={SERVICE}").json()["hosts"]
        return hosts[0]["hostname"] if hosts else None
    return wait_for("the agent's first heartbeat", find)


def start_profiling(console, hostname):
    console.wait("the agent in the hosts table", lambda: console.row_with("hosts", hostname))
    console.screenshot("hosts")
    # One time zone for every time: UTC unless chosen otherwise.
    def heartbeat_time():
        return console.row_with("hosts", hostname).find_elements("css selector", "td")[4].text
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", heartbeat_time()), heartbeat_time()
    console.find('#time-zone option[value="local"]').click()
    console.wait("times in the browser's zone", lambda: re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC[+-]\d\d:\d\d", heartbeat_time()))
    console.find('#time-zone option[value="UTC"]').click()
    console.wait("times in UTC again", lambda: heartbeat_time().endswith(" UTC"))
    console.click_in_row("hosts", hostname, "Select")
    assert console.find("#profiling-service").get_attribute("value") == SERVICE
    assert console.find("#profiling-host").get_attribute("value") == hostname
    for field, value in (("#profiling-duration", "8"), ("#profiling-frequency", str(FREQUENCY))):
        console.find(field).clear()
        console.find(field).send_keys(value)
    assert not console.find("#profiling-continuous").is_selected(), "Start is one-shot by default"
    console.find("#start-profiling").click()
    console.wait("the start to be accepted",
                 lambda: "Start requested" in console.find("#profiling-result").text)
    console.wait("the agent to run the start",
                 lambda: "start completed" in console.row_with("hosts", hostname).text, 90)
    console.screenshot("started")
    # The command is completed as soon as the session begins; the session column says that it
    # runs, and when the one-shot session itself has ended.
    def session():
        return console.row_with("hosts", hostname).find_elements("css selector", "td")[6].text
    console.wait("the session running", lambda: session() == "running", 30)
    console.wait("the one-shot session to end", lambda: "idle" in [
        cell.text for cell in console.row_with("hosts", hostname).find_elements(
            "css selector", "td")], 90)


def see_profile_arrive(console, hostname):
    console.go("profiles")

    def agent_profile():
        for row in console.find_all("#profiles tbody tr"):
            cells = [cell.text for cell in row.find_elements("css selector", "td")]
            if len(cells) > 2 and cells[1] == SERVICE and cells[2] == hostname:
                return row
        return None
    console.wait("a profile of the agent in the list", agent_profile)
    cells = [cell.text for cell in agent_profile().find_elements("css selector", "td")]
    samples = re.fullmatch(r"([\d,]+)(?: \(([\d,]+) idle\))?", cells[5])
    assert samples, cells
    busy = int(samples[1].replace(",", "")) - int((samples[2] or "0").replace(",", ""))
    cpu = re.fullmatch(r"(\d+\.\d\d) s", cells[6])
    assert cpu, cells
    # Each sample of a busy CPU is 1/FREQUENCY s of CPU time.
    assert abs(float(cpu[1]) * FREQUENCY - busy) <= 1, cells
    console.screenshot("profile-arrived")


def open_profile_flamegraph(console, hostname):
    """One profile of the agent, as the server draws it."""
    console.go("profiles")
    console.click_in_row("profiles", hostname, "Flamegraph")
    console.wait("the profile's flamegraph", lambda: "Profile " in console.find(
        "#flamegraph-caption").text)
    enter_flamegraph(console)
    console.driver.switch_to.default_content()
    console.screenshot("profile-flamegraph")


def flame_frames(console, area="#flame-area"):
    return console.js("""
        const svg = document.querySelector(arguments[0] + ' svg');
        if (!svg) return [];
        return Array.from(svg.querySelectorAll('g.frame'), (g) => {
          const rect = g.querySelector('rect');
          return {name: g.dataset.name, total: Number(g.dataset.total),
                  x: Number(rect.getAttribute('x')), y: Number(rect.getAttribute('y')),
                  width: Number(rect.getAttribute('width')),
                  shown: rect.getBoundingClientRect().width,
                  match: g.classList.contains('match')};
        });""", area)


def svg_box(console, area="#flame-area"):
    return console.js("""
        const svg = document.querySelector(arguments[0] + ' svg');
        const box = svg.getBoundingClientRect();
        return {width: box.width, height: box.height,
                area: document.querySelector(arguments[0]).clientWidth};""", area)


def open_merged_flamegraph(console):
    """The service's profiles merged in the page: it fits the width and opens on its frames."""
    console.go("profiles")
    console.click_in_row("profiles", SERVICE, "Merge the service")
    console.wait("the flamegraph view", lambda: console.find("#flamegraph-view").is_displayed())
    assert console.find("#flamegraph-service").get_attribute("value") == SERVICE
    console.find("#show-merged").click()
    caption = console.wait("the merged flamegraph", lambda: re.search(
        r"\((\d+) profiles?, (\d+) samples\)", console.find("#flamegraph-caption").text))
    assert int(caption.group(1)) >= 1 and int(caption.group(2)) > 0, caption.group(0)
    console.wait("the frames", lambda: len(flame_frames(console)) > 1)
    frames = flame_frames(console)
    box = svg_box(console)
    assert abs(box["width"] - box["area"]) <= 1, box
    root = max(frames, key=lambda f: f["total"])
    assert abs(root["shown"] - box["width"]) <= 1, (root, box)
    assert root["y"] == max(f["y"] for f in frames), "the flame's root is at the bottom"
    depth = len({f["y"] for f in frames})
    assert box["height"] <= (depth + 1) * 17 + 1, (box, depth)
    console.wait("the samples over time", lambda: console.find_all("#timeline rect.samples"))
    console.screenshot("merged-flamegraph")

    console.find('#profile-tabs button[data-tab="icicle"]').click()
    console.wait("the icicle", lambda: any(f["y"] == 0 and f["total"] == root["total"]
                                           for f in flame_frames(console)))
    console.screenshot("icicle")
    console.find('#profile-tabs button[data-tab="flame"]').click()
    return root


def clear_search(console):
    console.js("""const search = document.getElementById('frame-search');
                  search.value = '';
                  search.dispatchEvent(new Event('input'));""")


def search_and_zoom_merged(console):
    frames = flame_frames(console)
    root_total = max(f["total"] for f in frames)
    partial = [f for f in frames if f["total"] < root_total]
    target = max(partial, key=lambda f: f["total"])
    console.find("#frame-search").send_keys(target["name"])
    matched = console.wait("the search's match", lambda: re.search(
        r"Matched: ([\d.]+)%", console.find("#search-matched").text))
    assert float(matched.group(1)) > 0, matched.group(0)
    assert any(f["match"] and f["name"] == target["name"] for f in flame_frames(console))
    # The same frame whatever the case, as text and as a regular expression between slashes.
    for search in (target["name"].upper(), "/^" + re.escape(target["name"].upper()) + "$/"):
        clear_search(console)
        console.find("#frame-search").send_keys(search)
        console.wait("the match of " + search, lambda: any(
            f["match"] and f["name"] == target["name"] for f in flame_frames(console)))
    clear_search(console)
    assert console.find("#search-matched").text == ""
    index = [f["name"] for f in frames].index(target["name"])
    console.find_all("#flame-area svg g.frame")[index].find_element("css selector", "rect").click()
    console.wait("the zoom", lambda: any(
        f["name"] == target["name"] and abs(f["shown"] - svg_box(console)["width"]) <= 1
        for f in flame_frames(console)))
    console.screenshot("merged-zoom")
    console.find("#unzoom").click()
    return target


def top_functions_and_sandwich(console, target):
    console.find('#profile-tabs button[data-tab="top"]').click()
    console.wait("the top functions", lambda: len(console.find_all("#top-functions tbody tr")) > 1)

    def numbers(column):
        return [int(row.find_elements("css selector", "td")[column].text.split()[0])
                for row in console.find_all("#top-functions tbody tr")]
    selves = numbers(1)
    assert selves == sorted(selves, reverse=True), "by self time first"
    console.find('#top-functions button[data-sort="total"]').click()
    totals = numbers(2)
    assert totals == sorted(totals, reverse=True), totals
    console.find("#frame-search").send_keys(target["name"])
    console.wait("the search in the table", lambda: all(
        target["name"] in row.find_elements("css selector", "td")[0].text
        for row in console.find_all("#top-functions tbody tr")))
    console.screenshot("top-functions")
    console.click_in_row("top-functions", target["name"], "Sandwich")
    console.wait("the sandwich", lambda: console.find("#sandwich-title").text == target["name"])
    callers = flame_frames(console, "#sandwich-callers")
    callees = flame_frames(console, "#sandwich-callees")
    assert callers and callees, (callers, callees)
    # The function is the root of both: at the bottom of its callers, at the top of its callees.
    assert max(callers, key=lambda f: f["y"])["name"] == target["name"], callers
    assert min(callees, key=lambda f: f["y"])["name"] == target["name"], callees
    console.screenshot("sandwich")
    clear_search(console)
    console.find('#profile-tabs button[data-tab="flame"]').click()


def ranges_on_the_graph(console):
    """A preset, then ranges brushed on the samples over time: whole minutes, in UTC."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    def brush(start, end, shift=False):
        """Drags across the graph from `start` to `end`, shares of its width."""
        graph = console.find("#timeline svg")
        width = graph.size["width"]
        left = -width // 2  # offsets are from the element's centre
        chain = ActionChains(console.driver)
        if shift:
            chain.key_down(Keys.SHIFT)
        chain.move_to_element_with_offset(graph, left + int(width * start), 0).click_and_hold() \
            .move_by_offset(int(width * (end - start)), 0).release()
        if shift:
            chain.key_up(Keys.SHIFT)
        chain.perform()

    console.find('#range-presets button[data-minutes="15"]').click()
    since = datetime.strptime(console.find("#flamegraph-since").get_attribute("value"),
                              "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    assert abs((datetime.now(timezone.utc) - since).total_seconds() - 900) < 120, since
    console.wait("the frames of the last 15 minutes", lambda: len(flame_frames(console)) > 1)
    brush(0.1, 0.4)
    console.wait("the brushed range", lambda: console.find(
        "#flamegraph-until").get_attribute("value") != "")
    for field in ("#flamegraph-since", "#flamegraph-until"):
        assert console.find(field).get_attribute("value").endswith(":00"), "whole minutes"
    console.screenshot("brushed")

    # A diff chosen as two ranges of the hour's graph: the range, the last ten minutes (the
    # agent's profiles); with Shift held, the baseline, about twenty minutes ago (the planted one).
    console.find('#range-presets button[data-minutes="60"]').click()
    console.wait("the frames of the last hour", lambda: len(flame_frames(console)) > 1)
    range_before = console.find("#flamegraph-since").get_attribute("value")
    brush(0.84, 0.999)
    console.wait("the brushed range", lambda: console.find(
        "#flamegraph-since").get_attribute("value") != range_before)
    baseline_before = console.find("#baseline-since").get_attribute("value")
    brush(0.58, 0.72, shift=True)
    console.wait("the brushed baseline", lambda: console.find(
        "#baseline-since").get_attribute("value") != baseline_before)
    assert console.find_all("#timeline rect.chosen-baseline"), "the baseline is drawn"
    assert console.find_all("#timeline rect.chosen-range"), "beside the range"
    console.screenshot("brushed-baseline")

def enter_flamegraph(console):
    """Switches into the flamegraph's frame once its frames are drawn and its script has run."""
    console.wait("the flamegraph's frame", lambda: console.find("#flamegraph").is_displayed())
    console.driver.switch_to.frame(console.find("#flamegraph"))
    console.wait("the frames", lambda: len(console.find_all("#frames > g")) > 1)


def frame_facts(console):
    return console.js("""
        return Array.from(document.querySelectorAll('#frames > g'), (g) => ({
          name: g.querySelector('title').textContent.split('\\n')[0],
          count: Number(g.dataset.count), depth: Number(g.querySelector('rect').getAttribute('y')),
          fill: g.querySelector('rect').getAttribute('fill'),
          hidden: g.classList.contains('hidden')}));""")


def search_and_zoom(console):
    console.driver.switch_to.frame(console.find("#flamegraph"))
    total = int(console.find("#frames").get_attribute("data-total"))
    frames = frame_facts(console)
    # The widest frame that is not the root: a process, or what most samples ran in.
    partial = [f for f in frames if f["count"] < total]
    target = max(partial or frames[1:], key=lambda f: f["count"])

    console.find("#search").click()
    prompt = console.driver.switch_to.alert
    prompt.send_keys(re.escape(target["name"]))
    prompt.accept()
    matched = console.wait("the search's match", lambda: re.search(
        r"Matched: ([\d.]+)%", console.find("#matched").text))
    assert float(matched.group(1)) > 0, matched.group(0)
    highlighted = [f["name"] for f in frame_facts(console) if f["fill"] == "rgb(230,0,230)"]
    assert target["name"] in highlighted, highlighted
    console.driver.switch_to.default_content()
    console.screenshot("search")

    console.driver.switch_to.frame(console.find("#flamegraph"))
    index = frames.index(target)
    console.find_all("#frames > g")[index].find_element("css selector", "rect").click()
    console.wait("the zoom", lambda: "hidden" not in console.find("#unzoom").get_attribute("class"))
    plot_width = float(console.find("#frames").get_attribute("data-plot-width"))
    zoomed = console.find_all("#frames > g")[index].find_element("css selector", "rect")
    assert abs(float(zoomed.get_attribute("width")) - plot_width) < 1, "the frame spans the graph"
    if partial:
        assert any(f["hidden"] for f in frame_facts(console)), "frames outside it are hidden"
    check_policy_applies(console, "the flamegraph")
    console.driver.switch_to.default_content()
    console.screenshot("zoom")


def check_policy_applies(console, what):
    """The console's policy holds in the current document: a script added to it runs with the
    console's nonce, and not without."""
    with_nonce, without_nonce = console.js("""
        const nonce = Array.from(window.top.document.scripts, (s) => s.nonce).find((n) => n);
        function runs(withNonce) {
          window.top.injectedScriptRan = false;
          const script = document.createElementNS(document.documentElement.namespaceURI, 'script');
          if (withNonce) script.setAttribute('nonce', nonce);
          script.textContent = 'window.top.injectedScriptRan = true;';
          document.documentElement.appendChild(script);
          script.remove();
          return window.top.injectedScriptRan;
        }
        return [runs(true), runs(false)];
    """)
    assert with_nonce, f"{what}: a script with the console's nonce did not run"
    assert not without_nonce, f"{what}: a script without the console's nonce ran"


def open_diff_flamegraph(console):
    """The range and the baseline brushed on the graph (ranges_on_the_graph), compared."""
    console.find("#show-diff").click()
    console.wait("the differential flamegraph", lambda: console.find(
        "#flamegraph-caption").text.startswith("Differential flamegraph of " + SERVICE))
    enter_flamegraph(console)
    assert "change from the baseline" in console.find("#title").text
    assert_subtitle_times(console, " UTC")
    console.driver.switch_to.default_content()
    console.screenshot("diff-flamegraph")
    # The drawing shown follows "Times in" too, and so does the next one.
    console.find('#time-zone option[value="local"]').click()
    enter_flamegraph(console)
    assert_subtitle_times(console, " " + BROWSER_OFFSET)
    console.driver.switch_to.default_content()
    console.find("#show-diff").click()
    console.wait("the diff drawn again", lambda: console.find(
        "#flamegraph-caption").text.startswith("Differential flamegraph of " + SERVICE))
    enter_flamegraph(console)
    assert_subtitle_times(console, " " + BROWSER_OFFSET)
    console.driver.switch_to.default_content()
    console.screenshot("diff-flamegraph-local-times")
    console.find('#time-zone option[value="UTC"]').click()


def assert_subtitle_times(console, zone):
    """The server's drawing names its range in the console's zone, never in raw ISO form."""
    def times():
        text = console.find("#subtitle").text
        return re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d( UTC(?:[+-]\d\d:\d\d)?)", text), text

    console.wait("the subtitle's times in" + zone, lambda: times()[0] and all(
        found == zone for found in times()[0]))
    found, text = times()
    assert len(found) == 4, text  # the range's and the baseline's
    assert not re.search(r"\d\dT\d\d:", text), text


def set_fields(console, values):
    console.js("""for (const [id, value] of Object.entries(arguments[0])) {
                    document.getElementById(id).value = value; }""", values)


def check_silent_mistakes(console):
    """Issue 43: each answered 200 with an empty or wrong picture; each now says what is wrong."""
    def caption_after(click, says):
        console.find(click).click()
        console.wait(says, lambda: says in console.find("#flamegraph-caption").text)
        assert not console.find("#flame-area").is_displayed()
        assert not console.find("#flamegraph").is_displayed()

    console.find('#range-presets button[data-minutes="60"]').click()
    set_fields(console, {"flamegraph-service": "nobody"})
    caption_after("#show-merged", "service 'nobody' is unknown")
    set_fields(console, {"flamegraph-service": SERVICE, "flamegraph-since": "2026-01-02T00:00:00",
                         "flamegraph-until": "2026-01-01T00:00:00"})
    caption_after("#show-merged", "the range is inverted")
    set_fields(console, {"flamegraph-since": "2026-01-01T00:00:00",
                         "flamegraph-until": "2026-01-01T00:00:00"})
    caption_after("#show-merged", "the range is empty")
    set_fields(console, {"flamegraph-since": "yesterday"})
    caption_after("#show-merged", "Range, From: 'yesterday' is no time")
    set_fields(console, {"flamegraph-since": "2026-01-01T00:00:00",
                         "flamegraph-until": "2026-01-01T01:00:00"})
    caption_after("#show-merged",
                  "no profiles of '" + SERVICE + "', from 2026-01-01 00:00:00 UTC to")
    console.find('#range-presets button[data-minutes="60"]').click()
    set_fields(console, {"baseline-since": "2001-01-01T00:00:00",
                         "baseline-until": "2001-01-02T00:00:00"})
    caption_after("#show-diff", "no profiles of '" + SERVICE + "' in the baseline")
    since = console.find("#flamegraph-since").get_attribute("value")
    set_fields(console, {"baseline-since": since, "baseline-until": ""})
    caption_after("#show-diff", "the range and the baseline share")
    console.screenshot("silent-mistakes")


def filter_by_labels(console):
    """Pods and namespaces narrow the merge on the server; runtimes and processes in the page."""
    def show(pod="", namespace=""):
        set_fields(console, {"flamegraph-service": K8S_SERVICE, "flamegraph-host": "",
                             "flamegraph-container": "", "flamegraph-pod": pod,
                             "flamegraph-namespace": namespace})
        console.js("document.getElementById('flamegraph-caption').textContent = '';")
        console.find('#range-presets button[data-minutes="60"]').click()
        console.wait("the merged flamegraph of " + K8S_SERVICE, lambda: console.find(
            "#flamegraph-caption").text.startswith("Merged flamegraph of " + K8S_SERVICE))
        console.wait("the frames", lambda: len(flame_frames(console)) > 1)
        return {frame["name"] for frame in flame_frames(console)}

    def choices(list_id):
        return console.js("return Array.from(document.querySelectorAll(arguments[0] + ' option'),"
                          " (option) => option.value)", list_id)

    every = show()
    assert {"java", "python3", "sshd"} <= every, every
    console.wait("the pods and namespaces of the range", lambda: sorted(
        choices("#label-PodName")) == ["batch-0", "web-7d9f8b6c5-x2x9k"] and sorted(
        choices("#label-Namespace")) == ["jobs", "shop"])
    assert sorted(choices("#flamegraph-runtime")) == ["", "Java", "Python", "native"]
    frames = show(pod="batch-0")
    assert "run (job.py:3)_[p]" in frames and "java" not in frames, frames
    frames = show(namespace="shop")
    assert "Main.run_[j]" in frames and "python3" not in frames, frames
    show()
    console.js("""const runtime = document.getElementById('flamegraph-runtime');
                  runtime.value = 'Python';
                  runtime.dispatchEvent(new Event('change'));""")
    console.wait("Python's processes alone", lambda: {
        frame["name"] for frame in flame_frames(console)} - {"all"} == {"python3",
                                                                      "run (job.py:3)_[p]"})
    console.screenshot("runtime-filter")
    console.js("""const runtime = document.getElementById('flamegraph-runtime');
                  runtime.value = '';
                  runtime.dispatchEvent(new Event('change'));""")


def stop_profiling(console, hostname):
    console.go("hosts")
    console.wait("the agent in the hosts table", lambda: console.row_with("hosts", hostname))
    console.click_in_row("hosts", hostname, "Select")
    console.find("#stop-profiling").click()
    console.wait("the stop to be accepted",
                 lambda: "Stop requested" in console.find("#profiling-result").text)
    console.wait("the agent to run the stop",
                 lambda: "stop completed" in console.row_with("hosts", hostname).text)
    console.go("commands")
    console.wait("the start and the stop in the commands' history", lambda: {
        "start", "stop"} <= set(console.cell_texts("commands")))
    console.screenshot("stopped")


def check_markup_shows_as_text(console, gpid):
    console.go("hosts")
    console.wait("the host named with markup", lambda: HOST_MARKUP in console.cell_texts("hosts"))
    assert SERVICE_MARKUP in console.cell_texts("hosts")
    console.wait("the session state with markup", lambda: HEALTH_MARKUP in [
        cell.text for cell in console.row_with("hosts", HOST_MARKUP).find_elements(
            "css selector", "td")])
    assert not console.find_all("#hosts tbody script, #hosts tbody img, #hosts tbody b")
    console.click_in_row("hosts", HOST_MARKUP, "Details")
    console.wait("the health details", lambda: console.find("#health-dialog").is_displayed())
    assert HEALTH_MARKUP in console.find("#health-detail").text
    assert not console.find_all("#health-dialog script, #health-dialog b")
    console.find("#health-dialog button").click()
    console.wait("the details closed", lambda: not console.find("#health-dialog").is_displayed())
    console.screenshot("markup-host")
    console.go("profiles")
    console.wait("the profile with markup", lambda: str(gpid) in console.cell_texts("profiles"))
    texts = console.cell_texts("profiles")
    assert HOST_MARKUP in texts and SERVICE_MARKUP in texts, texts
    assert not console.find_all("#profiles tbody script, #profiles tbody img")
    console.click_in_row("profiles", str(gpid), "Flamegraph")
    enter_flamegraph(console)
    names = [f["name"] for f in frame_facts(console)]
    assert FRAME_MARKUP in names, names
    assert not console.find_all("img, foreignObject"), "markup in a frame name became elements"
    assert HOST_MARKUP in console.find("#title").text
    console.driver.switch_to.default_content()
    console.no_dialog_open()
    check_policy_applies(console, "the console")
    console.screenshot("markup-flamegraph")
    # Merged in the page: the names are text there too.
    set_fields(console, {"flamegraph-service": SERVICE_MARKUP})
    console.find('#range-presets button[data-minutes="60"]').click()
    console.wait("the merged frames", lambda: FRAME_MARKUP in [
        f["name"] for f in flame_frames(console)])
    assert not console.find_all("#flame-area script, #flame-area img, #flame-area b")
    console.no_dialog_open()


def check_gpu_view(console, gpid):
    """Each GPU of a profile apart: its figures, then its flamegraph alone."""
    console.go("profiles")
    console.click_in_row("profiles", str(gpid), "GPUs")
    console.wait("the profile's GPUs", lambda: len(console.find_all("#gpu-devices tbody tr")) == 2)
    first = [cell.text for cell in console.row_with("gpu-devices", "GPU 0").find_elements(
        "css selector", "td")]
    assert first[1:7] == ["2.000", "0.100", "2.050", "57.950", "3.4%", "22"], first
    console.screenshot("gpus")
    console.click_in_row("gpu-devices", "GPU 1", "Flamegraph")
    console.wait("the GPU's flamegraph", lambda: "GPU 1 of profile" in console.find(
        "#flamegraph-caption").text)
    enter_flamegraph(console)
    names = [f["name"] for f in frame_facts(console)]
    assert "[GPU] softmax" in names and "[GPU] gemm" not in names, names
    console.driver.switch_to.default_content()
    console.screenshot("gpu-flamegraph")


def main():
    args = arguments()
    output = Path(args.output)
    shutil.rmtree(output, ignore_errors=True)
    output.mkdir(parents=True)
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="dormant-browser-"))
    server = agent = console = None
    try:
        server = ServerProcess(args.server, args.gen_certs, root, TOKEN)
        markup_gpid = plant_markup(server)
        gpu_gpid = plant_gpu_profile(server)
        # The baseline of the agent's service, for the differential flamegraph.
        plant_profile(server, SERVICE, "baseline-host", "0;;app;main;parse 5\n", minutes_ago=20)
        plant_profile(server, K8S_SERVICE, "node-1", K8S_STACKS)
        check_served_headers(server, markup_gpid)
        available, reason = browser_or_skip_reason()
        if os.geteuid() != 0:
            available, reason = False, "needs root: the agent's perf profiles the whole host"
        if not available:
            print("the served headers are checked; the browser steps are SKIPPED: " + reason)
            return SKIPPED
        print(f"screenshots go to {output}", flush=True)
        agent = AgentProcess(args.agent, server, root / "agent", SERVICE)
        hostname = agent_hostname(server)
        console = Console(server, output)
        log_in(console)
        start_profiling(console, hostname)
        see_profile_arrive(console, hostname)
        open_profile_flamegraph(console, hostname)
        search_and_zoom(console)
        open_merged_flamegraph(console)
        target = search_and_zoom_merged(console)
        top_functions_and_sandwich(console, target)
        ranges_on_the_graph(console)
        open_diff_flamegraph(console)
        check_silent_mistakes(console)
        filter_by_labels(console)
        stop_profiling(console, hostname)
        check_markup_shows_as_text(console, markup_gpid)
        check_gpu_view(console, gpu_gpid)
        console.no_dialog_open()
    except BaseException:
        for process, name in ((server, "server"), (agent, "agent")):
            if process is not None:
                print(f"---- {name} log (last 4000 characters)\n{process.read_log()[-4000:]}")
        if console is not None:
            console.screenshot("failure")
        raise
    finally:
        if console is not None:
            console.quit()
        for process in (agent, server):
            if process is not None:
                process.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"passed in {time.monotonic() - started:.1f} s; screenshots in {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
