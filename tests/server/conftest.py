# SPDX-License-Identifier: Apache-2.0
"""Fixtures for the server suite: the bundled model exported once, and `staticlm serve` started on a
free loopback port (ctest passes STATICLM_CLI, STATICLM_SOURCE_DIR and STATICLM_ARTIFACTS_DIR; run
by hand they default to the release preset's paths)."""
import http.client
import json
import os
import pathlib
import re
import subprocess
import time

import pytest

ROOT = pathlib.Path(os.environ.get("STATICLM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
CLI = os.environ.get("STATICLM_CLI", str(ROOT / "build" / "release" / "bin" / "staticlm"))
ARTIFACTS = pathlib.Path(os.environ.get("STATICLM_ARTIFACTS_DIR", ROOT / "build" / "release" / "test-artifacts"))
CONTEXT = 512


def export_bundled(directory, context):
    path = directory / f"kjv_{context}.slm"
    subprocess.run([CLI, "export", str(ROOT / "models" / "kjv-llama-6m"), "-o", str(path), "--dtype", "bf16",
                    "--max-cache-len", str(context), "--prefill-len", "32"], check=True, capture_output=True)
    return path


@pytest.fixture(scope="session")
def model(tmp_path_factory):
    """The bundled model exported with a 512-token context."""
    return export_bundled(tmp_path_factory.mktemp("model"), CONTEXT)


@pytest.fixture(scope="session")
def f32_model(tmp_path_factory):
    """An f32 program: its prefill and decode logits agree to float rounding, so a result does not
    depend on which of the two computed a position."""
    path = tmp_path_factory.mktemp("f32") / "kjv_f32.slm"
    subprocess.run([CLI, "export", str(ROOT / "models" / "kjv-llama-6m"), "-o", str(path), "--dtype", "f32",
                    "--max-cache-len", "256", "--prefill-len", "16"], check=True, capture_output=True)
    return path


@pytest.fixture(scope="session")
def long_model(tmp_path_factory):
    """The bundled model with its whole 1024-token context: room for a chat page conversation whose
    second reply streams long enough to be stopped."""
    return export_bundled(tmp_path_factory.mktemp("long_model"), 1024)


class Server:
    """A running `staticlm serve`; requests go over http.client, one connection each."""

    def __init__(self, process, port, api_key=None):
        self.process = process
        self.port = port
        self.api_key = api_key

    def connection(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, key=True):
        """Returns (status, headers dict, body bytes)."""
        headers = dict(headers or {})
        if key and self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            headers.setdefault("Content-Type", "application/json")
        connection = self.connection()
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def post(self, path, body, **kwargs):
        status, headers, data = self.request("POST", path, body, **kwargs)
        return status, headers, json.loads(data) if data.strip() else None

    def get_json(self, path, **kwargs):
        status, _, data = self.request("GET", path, **kwargs)
        return status, json.loads(data)

    def metrics_with(self, *fragments, timeout=10):
        """The /metrics text once it holds every fragment (a request is counted just after its
        client has the response, so a test polls briefly)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.request("GET", "/metrics")[2].decode()
            if all(fragment in text for fragment in fragments) or time.monotonic() > deadline:
                return text
            time.sleep(0.05)

    def rss_bytes(self):
        for line in pathlib.Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")


def start_server(model_path, *extra, wait_ready=True):
    process = subprocess.Popen([CLI, "serve", str(model_path), "--port", "0", *extra], stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, text=True)
    port = None
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        lines.append(line)
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if match:
            port = int(match.group(1))
        if port and (not wait_ready or "ready:" in line):
            return process, port, lines
    process.kill()
    raise AssertionError("the server did not start:\n" + "".join(lines))


@pytest.fixture
def serve(model):
    """Starts servers (flags as arguments; program= another program); stops them after the test."""
    started = []

    def start(*extra, api_key=None, program=None):
        flags = list(extra) + (["--api-key", api_key] if api_key else [])
        process, port, _ = start_server(program or model, *flags)
        started.append(process)
        return Server(process, port, api_key)

    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            raise AssertionError("the server did not stop on SIGTERM")
        assert process.returncode == 0, process.stderr.read()


def read_events(response):
    """The SSE events of a streamed response: parsed JSON objects, then the string "[DONE]"."""
    events = []
    for raw in response:
        line = raw.decode().rstrip("\r\n")
        if line.startswith("data: "):
            payload = line[len("data: "):]
            events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events
