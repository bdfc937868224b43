#!/usr/bin/python3
"""The console's Workloads view in headless Chromium against a real dormant-server, with no agent:
heartbeats that carry an inventory (containers, pods, processes) are posted with an agent token,
and the console logs in with an operator token. It checks the tab counts, a filter, paging, a
start of a pod that the console first checks with a dry run (nothing exists before Confirm, the
pod's pids reach its host after), a cancelled review, a refusal shown as text, a continuous
service start that shows as a subscription and a stop that ends it, and a pod named with markup
that shows as text.
A screenshot of each step goes to --output. Without Chromium, its driver or Selenium, only the
served page is checked and it exits 77 (skipped), saying why."""

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from console_test import Console, browser_or_skip_reason, check_document_headers, \
    check_policy_applies
from dormant_processes import ServerProcess

SKIPPED = 77
OPERATOR_TOKEN = "workloads-operator-0123456789"
AGENT_TOKEN = "workloads-agent-0123456789"
MARKUP_POD = "<img src=x onerror=alert(1)>"


def container(name, namespace, pod, workload, processes):
    return {"container_id": f"{name}-{pod}", "container_name": name, "runtime": "containerd",
            "namespace": namespace, "pod_name": pod, "workload_name": workload,
            "workload_kind": "Deployment",
            "processes": [{"pid": pid, "process_name": process} for pid, process in processes]}


# hostname -> (service, address, containers)
FLEET = {
    "node-a": ("shop", "10.0.0.1", [
        container("app", "shop", "cart-0", "cart", [(101, "java")]),
        container("side", "shop", "cart-0", "cart", [(102, "envoy")]),
        container("app", "shop", "pay-1", "pay", [(201, "java")])]),
    "node-b": ("shop", "10.0.0.2", [
        container("app", "billing", "invoice-0", "invoice", [(301, "python")]),
        container("app", "billing", MARKUP_POD, "evil", [(302, "sh")])]),
    "node-c": ("batch", "10.0.0.3", [
        container("etl", "jobs", "etl-0", "etl", [(401, "spark")])]),
}
EVERY_COUNT = {"service": 2, "namespace": 3, "host": 3, "pod": 5, "container": 6, "process": 6}
BILLING_COUNT = {"service": 1, "namespace": 1, "host": 1, "pod": 2, "container": 2, "process": 2}


def arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--gen-certs", required=True)
    parser.add_argument("--output", required=True, help="folder for the screenshots")
    return parser.parse_args()


def beat(server, hostname):
    """A heartbeat of `hostname` with its inventory, as its agent sends one; the answer."""
    service, address, containers = FLEET[hostname]
    reply = server.request("/api/metrics/heartbeat", token=AGENT_TOKEN, body={
        "ip_address": address, "hostname": hostname, "service_name": service,
        "containers": containers})
    assert reply.status == 200, reply.body
    return reply.json()


def beat_all(server):
    return {hostname: beat(server, hostname) for hostname in FLEET}


def commands(server):
    reply = server.request("/api/commands")
    assert reply.status == 200, reply.body
    return reply.json()["commands"]


def check_served_page(server):
    reply = server.request("/ui/workloads", bearer=False)
    check_document_headers(reply, "/ui/workloads")
    assert 'data-view="workloads"' in reply.body.decode(), "the page has the Workloads view"


class WorkloadsPage:
    """The Workloads view of `console` (console_test.Console)."""

    def __init__(self, console):
        self.console = console

    def log_in_and_open(self):
        console = self.console
        console.driver.get(console.server.url("/"))
        console.wait("the login form", lambda: console.find("#token").is_displayed())
        console.find("#token").send_keys(OPERATOR_TOKEN)
        console.find("#login-form button[type=submit]").click()
        console.wait("the hosts view", lambda: console.find("#hosts-view").is_displayed())
        console.go("workloads")
        assert console.js("return location.pathname") == "/ui/workloads"

    def tab_counts(self):
        return self.console.js("""
            const counts = {};
            for (const tab of document.querySelectorAll('#workload-tabs button[data-scope]')) {
              const text = tab.querySelector('.count').textContent;
              counts[tab.dataset.scope] = text ? Number(text.replace(/[()]/g, '')) : null;
            }
            return counts;""")

    def wait_for_counts(self, expected, what):
        self.console.wait(what, lambda: self.tab_counts() == expected, 20)

    def choose_tab(self, scope):
        self.console.find(f'#workload-tabs button[data-scope="{scope}"]').click()
        self.console.wait(f"the {scope} tab", lambda: self.console.find(
            f'#workload-tabs button[data-scope="{scope}"]').get_attribute("aria-selected")
            == "true")

    def row_ids(self):
        return self.console.js("return Array.from(document.querySelectorAll("
                               "'#workloads tbody tr[data-id]'), (tr) => tr.dataset.id)")

    def wait_for_rows(self, expected, what):
        self.console.wait(what, lambda: sorted(self.row_ids()) == sorted(expected), 20)

    def select(self, row_id):
        def click():
            box = self.console.js(
                "const tr = Array.from(document.querySelectorAll('#workloads tbody tr'))"
                "  .find((each) => each.dataset.id === arguments[0]);"
                "return tr ? tr.querySelector('input[type=checkbox]') : null;", row_id)
            if box is None:
                return False
            if not box.is_selected():
                box.click()
            return box.is_selected()
        self.console.wait(f"row {row_id} selected", click)

    def filter_namespace(self, namespace):
        field = self.console.find('#workload-filters input[name="namespace"]')
        field.clear()
        field.send_keys(namespace)
        self.console.find("#apply-filters").click()

    def set_field(self, css, value):
        self.console.find(css).clear()
        self.console.find(css).send_keys(value)

    def set_continuous(self, continuous):
        box = self.console.find("#workload-continuous")
        if box.is_selected() != continuous:
            box.click()

    def review_text(self):
        review = self.console.find("#workload-review")
        return review.text if review.is_displayed() else None

    def ask(self, button):
        """Clicks Start or Stop; the review the dry run shows."""
        self.console.find(button).click()
        return self.console.wait("the dry run's review", self.review_text, 20)

    def result_text(self):
        return self.console.find("#workload-result").text


def check_counts_and_filter(page, console):
    page.wait_for_counts(EVERY_COUNT, "the tab counts of the whole fleet")
    assert console.find('#workload-tabs button[data-scope="pod"]').text == "Pods (5)"
    page.wait_for_rows(["batch", "shop"], "a row per service")
    console.screenshot("services")
    page.filter_namespace("billing")
    page.wait_for_counts(BILLING_COUNT, "the tab counts of namespace billing")
    page.wait_for_rows(["shop"], "the service of namespace billing")
    page.choose_tab("pod")
    page.wait_for_rows(["shop|billing|invoice-0", f"shop|billing|{MARKUP_POD}"],
                       "the pods of namespace billing")
    check_markup_shows_as_text(console)
    console.screenshot("pods-of-billing")
    console.find("#clear-filters").click()
    page.wait_for_counts(EVERY_COUNT, "the tab counts without a filter")


def check_markup_shows_as_text(console):
    cells = console.cell_texts("workloads")
    assert MARKUP_POD in cells, cells
    assert not console.find_all("#workloads tbody img, #workloads tbody script")
    console.no_dialog_open()


def check_paging(page, console):
    page.choose_tab("process")
    console.find("#workload-page-size option[value='5']").click()
    console.wait("the first page", lambda: len(page.row_ids()) == 5 and
                 console.find("#workload-rows").text == "Rows 1 to 5 of 6")
    assert not console.find("#workloads-next").get_property("disabled")
    console.find("#workloads-next").click()
    page.wait_for_rows(["shop|node-b|302"], "the second page: the last process")
    assert console.find("#workload-rows").text == "Rows 6 to 6 of 6"
    assert console.find("#workloads-next").get_property("disabled")
    console.screenshot("processes-page-2")
    console.find("#workloads-previous").click()
    console.wait("the first page again", lambda: len(page.row_ids()) == 5)
    console.find("#workload-page-size option[value='20']").click()


def start_a_pod(page, console, server):
    page.choose_tab("pod")
    page.wait_for_rows(["batch|jobs|etl-0", "shop|billing|invoice-0", f"shop|billing|{MARKUP_POD}",
                        "shop|shop|cart-0", "shop|shop|pay-1"], "every pod")
    page.select("shop|shop|cart-0")
    page.set_field("#workload-duration", "30")
    page.set_continuous(False)
    review = page.ask("#workload-start")
    assert "Start profiling of 1 pod (cpu, 99 Hz, 30 s, once)" in review, review
    assert "podName=cart-0, namespace=shop" in review, review
    assert "would change the command of 1 of 1 hosts" in review, review
    assert "node-a new (pids 101, 102)" in review, review
    console.screenshot("pod-start-review")
    assert commands(server) == [], "the dry run made a command"
    assert all(answer["profiling_command"] is None for answer in beat_all(server).values())

    console.find("#workload-confirm").click()
    console.wait("the start to be accepted",
                 lambda: "Profiling start request accepted" in page.result_text(), 20)
    assert page.review_text() is None, "the review closes on Confirm"
    made = commands(server)
    assert [(c["hostname"], c["command_type"]) for c in made] == [("node-a", "start")], made
    command = beat(server, "node-a")["profiling_command"]
    assert command["command_type"] == "start", command
    assert command["combined_config"]["pids"] == [101, 102], command
    assert command["combined_config"]["target_scope"] == "pod", command
    assert beat(server, "node-b")["profiling_command"] is None
    console.wait("the pod profiled", lambda: "active" in console.row_with(
        "workloads", "cart-0").text)
    console.screenshot("pod-started")


def cancel_a_review(page, console, server):
    page.select(f"shop|billing|{MARKUP_POD}")
    review = page.ask("#workload-start")
    assert f"podName={MARKUP_POD}, namespace=billing" in review, review
    assert not console.find_all("#workload-review img, #workload-review script")
    console.no_dialog_open()
    console.screenshot("markup-pod-review")
    console.find("#workload-cancel").click()
    console.wait("the review to close", lambda: page.review_text() is None)
    assert page.result_text() == "Cancelled: nothing was sent."
    assert len(commands(server)) == 1, "a cancelled review sent its request"
    assert beat(server, "node-b")["profiling_command"] is None


def show_a_refusal(page, console, server):
    page.set_field("#workload-frequency", "1000000")
    console.find("#workload-start").click()
    console.wait("the refusal", lambda: "frequency" in page.result_text(), 20)
    assert page.review_text() is None, "a refused dry run has nothing to confirm"
    console.screenshot("refusal")
    page.set_field("#workload-frequency", "11")
    assert len(commands(server)) == 1


def subscribe_a_service(page, console, server):
    page.choose_tab("service")
    page.wait_for_rows(["batch", "shop"], "a row per service")
    page.select("batch")
    page.set_continuous(True)
    review = page.ask("#workload-start")
    assert "continuous" in review and "serviceName=batch" in review, review
    assert "would change the command of 1 of 1 hosts" in review, review
    assert not server.request("/api/subscriptions").json()["subscriptions"], "the dry run subscribed"
    console.find("#workload-confirm").click()
    console.wait("the start to be accepted",
                 lambda: "Profiling start request accepted" in page.result_text(), 20)

    def subscription_row():
        row = console.row_with("subscriptions", "batch")
        return [cell.text for cell in row.find_elements("css selector", "td")] if row else None
    cells = console.wait("the subscription in its table", subscription_row, 20)
    assert cells[1:5] == ["batch", "service", "serviceName=batch", "active"], cells
    assert cells[5] == "1 host, 0 processes", cells
    assert len(console.find_all("#subscriptions tbody tr")) == 1
    command = beat(server, "node-c")["profiling_command"]
    assert command["combined_config"]["continuous"] is True, command
    assert command["combined_config"]["target_scope"] == "service", command
    console.screenshot("subscription")


def end_the_subscription(page, console, server):
    """A stop of the same selection ends the subscription, and stops its host."""
    page.select("batch")
    review = page.ask("#workload-stop")
    assert review.startswith("Stop profiling of 1 service:"), review
    assert "would change the command of 1 of 1 hosts" in review, review
    console.find("#workload-confirm").click()
    console.wait("the stop to be accepted",
                 lambda: "Profiling stop request accepted" in page.result_text(), 20)
    console.wait("the subscription ended", lambda: "ended" in console.row_with(
        "subscriptions", "batch").text, 20)
    command = beat(server, "node-c")["profiling_command"]
    assert command["command_type"] == "stop", command
    assert command["combined_config"]["stop_level"] == "host", command
    console.screenshot("subscription-ended")


def main():
    args = arguments()
    output = Path(args.output)
    shutil.rmtree(output, ignore_errors=True)
    output.mkdir(parents=True)
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="dormant-workloads-"))
    server = console = None
    try:
        server = ServerProcess(args.server, args.gen_certs, root, OPERATOR_TOKEN,
                               roles={OPERATOR_TOKEN: "operator", AGENT_TOKEN: "agent"})
        check_served_page(server)
        beat_all(server)
        available, reason = browser_or_skip_reason()
        if not available:
            print("the served page is checked; the browser steps are SKIPPED: " + reason)
            return SKIPPED
        print(f"screenshots go to {output}", flush=True)
        console = Console(server, output)
        page = WorkloadsPage(console)
        page.log_in_and_open()
        check_counts_and_filter(page, console)
        check_paging(page, console)
        start_a_pod(page, console, server)
        cancel_a_review(page, console, server)
        show_a_refusal(page, console, server)
        subscribe_a_service(page, console, server)
        end_the_subscription(page, console, server)
        console.no_dialog_open()
        check_policy_applies(console, "the console")
    except BaseException:
        if server is not None:
            print(f"---- server log (last 4000 characters)\n{server.read_log()[-4000:]}")
        if console is not None:
            console.screenshot("failure")
        raise
    finally:
        if console is not None:
            console.quit()
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"passed in {time.monotonic() - started:.1f} s; screenshots in {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
