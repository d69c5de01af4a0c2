"""A web page cannot drive a keyless `ingle serve`: a real headless Chromium (Debian's
`chromium`) loads a page of another origin that tries a form POST to /drain, `no-cors` fetches
with `text/plain` bodies to /drain and /v1/chat/completions, and a CORS fetch of /v1/models; then
it opens the server under a rebound domain name (Chromium's resolver maps `evil.example` to
127.0.0.1, as DNS rebinding would). The server must still be up, not draining, and have
generated nothing; a page of an origin given by --cors-origin reads the API."""

import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

CHAT = "@local/smollm2-135m-instruct"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"



@pytest.fixture(autouse=True)
def chromium_is_installed():
    # Not skipped: scripts/setup --tests (which scripts/test runs) installs it.
    assert os.path.exists(CHROMIUM), "Chromium is missing: run scripts/setup --tests (apt install chromium)"

ATTACK = """<!doctype html>
<html><body><pre id="out">running</pre>
<iframe name="sink" style="display:none"></iframe>
<form id="form" method="POST" action="SERVER/drain" target="sink">
  <input name="x" value="1"></form>
<script>
const server = "SERVER";
const results = {};
async function attempt(name, run) {
  try { const r = await run(); results[name] = r.type === "opaque" ? "opaque" : r.status; }
  catch (e) { results[name] = "blocked: " + e.name; }
}
(async () => {
  document.getElementById("form").submit();
  await new Promise(done => setTimeout(done, 300));
  await attempt("drain_no_cors", () => fetch(server + "/drain",
      {method: "POST", mode: "no-cors", body: "please stop"}));
  await attempt("chat_no_cors", () => fetch(server + "/v1/chat/completions",
      {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
       body: JSON.stringify({model: "MODEL", max_tokens: 8,
                             messages: [{role: "user", content: "Say hi."}]})}));
  await attempt("models_cors", () => fetch(server + "/v1/models"));
  await attempt("chat_cors", () => fetch(server + "/v1/chat/completions",
      {method: "POST", headers: {"Content-Type": "application/json"},
       body: JSON.stringify({model: "MODEL", max_tokens: 4,
                             messages: [{role: "user", content: "Say hi."}]})}));
  if (results.chat_cors === 200) {
    results.models_read = (await (await fetch(server + "/v1/models")).json()).object;
  }
  document.getElementById("out").textContent = "RESULTS " + JSON.stringify(results);
})();
</script></body></html>"""


def get(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


class PageServer:
    """Serves the attacking page on a port of its own: another origin than the server's."""

    def __init__(self, page=""):
        self.page = page
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = owner.page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


def start_server(tmp_path, *args):
    log = open(tmp_path / "serve.log", "w+")
    process = subprocess.Popen(
        [os.environ["INGLE_SERVE_BIN"], "serve", "--port", "0", *args], stderr=log,
        env={k: v for k, v in os.environ.items() if k != "INGLE_API_KEY"})
    for _ in range(600):
        log.seek(0)
        found = re.search(r"http://(\S+):(\d+)/v1", log.read())
        if found:
            return process, int(found.group(2))
        assert process.poll() is None, (tmp_path / "serve.log").read_text()
        time.sleep(0.05)
    raise AssertionError("ingle serve did not start")


def chromium(tmp_path, url, budget_ms=8000):
    """The DOM of `url` once its scripts have run, `evil.example` resolving to 127.0.0.1."""
    profile = tmp_path / f"profile-{time.monotonic_ns()}"
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}",
         "--host-resolver-rules=MAP evil.example 127.0.0.1",
         f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
        capture_output=True, text=True, timeout=90)
    return done.stdout


def results_of(dom):
    found = re.search(r"RESULTS (\{.*?\})</pre>", dom)
    assert found, dom[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"'))


def chat_requests(port):
    """`ingle_requests_total` samples of the chat surface."""
    status, text = get(f"http://127.0.0.1:{port}/metrics")
    assert status == 200, text
    return [line for line in text.splitlines()
            if line.startswith('ingle_requests_total{surface="chat"')]


def test_a_page_of_another_origin_cannot_drive_a_keyless_server(tmp_path):
    process, port = start_server(tmp_path)
    server = f"http://127.0.0.1:{port}"
    page = PageServer(ATTACK.replace("SERVER", server).replace("MODEL", CHAT))
    try:
        results = results_of(chromium(tmp_path, f"http://evil.example:{page.port}/"))
        # The simple requests left the browser (opaque answers) and were refused; the reads
        # were blocked by the browser, having no CORS headers.
        assert results["drain_no_cors"] == "opaque", results
        assert results["chat_no_cors"] == "opaque", results
        assert results["models_cors"].startswith("blocked"), results
        assert results["chat_cors"].startswith("blocked"), results
        assert process.poll() is None, "the page stopped the server"
        assert get(f"{server}/ready") == (200, json.dumps({"status": "ready"}, separators=(",", ":")))
        assert chat_requests(port) == [], "a page's request was served"

        # DNS rebinding: the server opened under a name that resolves to 127.0.0.1. A top-level
        # navigation sends no Origin; the Host gives it away.
        rebound = chromium(tmp_path, f"http://evil.example:{port}/v1/models", 3000)
        assert "host_not_allowed" in rebound and '"object":"list"' not in rebound, rebound
        drained = chromium(tmp_path, f"http://evil.example:{port}/metrics", 3000)
        assert "host_not_allowed" in drained and "ingle_requests" not in drained, drained
        assert process.poll() is None
        # Opened by its own address, it answers (as curl would).
        assert '"object":"list"' in chromium(tmp_path, f"{server}/v1/models", 3000)
    finally:
        page.close()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)


def test_a_page_of_an_origin_given_by_cors_origin_reads_the_api(tmp_path):
    page = PageServer()  # bound first, so that its origin can be named
    process, port = start_server(tmp_path, "--cors-origin", f"http://evil.example:{page.port}")
    server = f"http://127.0.0.1:{port}"
    page.page = (ATTACK.replace("SERVER", server).replace("MODEL", CHAT)
                 .replace('document.getElementById("form").submit();', ""))
    try:
        results = results_of(chromium(tmp_path, f"http://evil.example:{page.port}/", 30000))
        assert results["chat_cors"] == 200, results
        assert results["models_cors"] == 200 and results["models_read"] == "list", results
        # Even an allowed page cannot stop the server.
        assert results["drain_no_cors"] == "opaque" and process.poll() is None
        assert get(f"{server}/ready")[0] == 200
    finally:
        page.close()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
