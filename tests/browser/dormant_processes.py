"""A real dormant-server and dormant-agent for the browser tests, on loopback TLS with a test CA
made by scripts/gen-certs, and an HTTPS client that trusts that CA."""

import base64
import gzip
import json
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path


class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)


class ServerProcess:
    """`token`: what request() presents. `roles`: token -> role ("agent", "operator", "reader")
    for the tokens file; without it `token` is its only line, with every role."""

    def __init__(self, binary, gen_certs, root: Path, token, roles=None):
        self.root = root
        self.token = token
        subprocess.run([gen_certs, str(root / "certs")], check=True)
        lines = [f"{each} {role}" for each, role in roles.items()] if roles else [token]
        (root / "tokens").write_text("\n".join(lines) + "\n")
        self.ca = root / "certs" / "ca.pem"
        self.log = open(root / "server.log", "w")
        self.process = subprocess.Popen(
            [binary, "--listen", "127.0.0.1", "--port", "0", "--data-dir", str(root / "data"),
             "--tokens-file", str(root / "tokens"),
             "--tls-cert", str(root / "certs" / "server.pem"),
             "--tls-key", str(root / "certs" / "server.key")],
            stdout=subprocess.PIPE, stderr=self.log, text=True, start_new_session=True)
        # "dormant-server listening on https://127.0.0.1:PORT"
        first_line = self.process.stdout.readline().strip()
        if not first_line:
            raise RuntimeError("dormant-server did not start:\n" + self.read_log())
        self.port = int(first_line.rsplit(":", 1)[1])
        self.tls = ssl.create_default_context(cafile=str(self.ca))

    def url(self, path):
        return f"https://localhost:{self.port}{path}"

    def read_log(self):
        return (self.root / "server.log").read_text(errors="replace")

    def request(self, path, body=None, headers=None, bearer=True, token=None):
        headers = dict(headers or {})
        if bearer:
            headers["Authorization"] = "Bearer " + (token or self.token)
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        request = urllib.request.Request(self.url(path), data=body, headers=headers,
                                         method="POST" if body is not None else "GET")
        try:
            with urllib.request.urlopen(request, context=self.tls, timeout=20) as response:
                return Reply(response.status, response.headers, response.read())
        except urllib.error.HTTPError as error:
            return Reply(error.code, error.headers, error.read())

    def upload_profile(self, service, hostname, collapsed, minutes_ago=10):
        """A profile upload as gProfiler sends it (gzip JSON, GPROFILER-API-KEY), of the minute
        that began `minutes_ago` minutes ago: merged flamegraphs read rollups, kept for a time."""
        begin = (datetime.now(timezone.utc).replace(second=0, microsecond=0) -
                 timedelta(minutes=minutes_ago))
        body = {"start_time": begin.strftime("%Y-%m-%dT%H:%M:%S"),
                "end_time": (begin + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S"),
                "hostname": hostname, "profile": collapsed, "cpu_avg": 1.0, "mem_avg": 1.0,
                "spawn_time": "2026-07-25T17:20:00", "gpid": ""}
        return self.request("/api/v2/profiles", body=gzip.compress(json.dumps(body).encode()),
                            bearer=False,
                            headers={"GPROFILER-API-KEY": self.token,
                                     "GPROFILER-SERVICE-NAME": service,
                                     "Content-Type": "application/json",
                                     "Content-Encoding": "gzip"})

    def spki_sha256(self):
        """The base64 SHA-256 of the server certificate's public key, the form Chromium's
        --ignore-certificate-errors-spki-list takes: the browser trusts this key only."""
        der = subprocess.run(
            "openssl x509 -in server.pem -pubkey -noout | openssl pkey -pubin -outform der",
            shell=True, cwd=self.root / "certs", check=True, capture_output=True).stdout
        digest = subprocess.run(["openssl", "dgst", "-sha256", "-binary"], input=der,
                                check=True, capture_output=True).stdout
        return base64.b64encode(digest).decode()

    def stop(self):
        stop_process(self.process)
        self.log.close()


class AgentProcess:
    """dormant-agent in heartbeat mode, uploading its profiles to `server`."""

    def __init__(self, binary, server: ServerProcess, root: Path, service):
        root.mkdir(parents=True, exist_ok=True)
        token_file = root / "token"
        token_file.write_text(server.token + "\n")
        token_file.chmod(0o600)
        self.log_path = root / "agent.log"
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [binary, "--enable-heartbeat-server", "--api-server", server.url(""),
             "--tls-ca-bundle", str(server.ca), "--token-file", str(token_file),
             "--service-name", service, "--heartbeat-interval", "1", "-u",
             "-o", str(root / "out"), "--state-dir", str(root / "state"),
             "--host-lock", str(root / "run" / "agent.lock")],
            stdout=subprocess.DEVNULL, stderr=self.log, start_new_session=True)

    def read_log(self):
        return self.log_path.read_text(errors="replace")

    def stop(self):
        stop_process(self.process)
        self.log.close()


def stop_process(process, grace_s=30):
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_for(what, check, timeout_s=60, every_s=0.2):
    """check() until it returns something true; that value. A timeout raises, naming `what`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every_s)
