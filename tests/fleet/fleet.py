"""A fleet on one machine: three `ingle serve` replicas behind two real routers, nginx
(least_conn, retrying the next replica on a refused connection or a 503) and LiteLLM's proxy
(least-busy), driven by the official openai SDK (default retries) from concurrent clients,
while one replica is killed (SIGKILL) and the other two are rolled (SIGTERM, restart) one at a
time. Prints what was sent, what succeeded and failed, and latency before, during and after,
per router; fails unless the rolling restart lost nothing and the kill lost only streams that
were in flight on the killed replica (a stream cut mid-way is the client's to retry).

Usage: python tests/fleet/fleet.py --bin INGLE [--short] [--work DIR]"""

import argparse
import collections
import os
import pathlib
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import openai

CHAT = "@local/smollm2-135m-instruct"
EMBED = "@local/all-minilm-l6-v2"
SPEECH = "@local/piper-en-us-joe-medium"
WHISPER = "@local/whisper-tiny-en"
MODELS_DIR = pathlib.Path(os.environ.get("INGLE_MODELS_DIR", pathlib.Path.home() / ".cache/ingle/models"))
LITELLM_KEY = "sk-fleet-" + "%032x" % random.getrandbits(128)


def clip(path, seconds):
    """The first `seconds` of a WAV file, as WAV bytes: "Ever tried. Ever failed." """
    import io
    import wave
    with wave.open(str(path)) as source:
        frames = source.readframes(int(seconds * source.getframerate()))
        out = io.BytesIO()
        with wave.open(out, "wb") as target:
            target.setparams(source.getparams())
            target.writeframes(frames)
    return out.getvalue()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_status(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def wait_until(check, seconds, what):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"fleet-test: {what} did not happen within {seconds} s")
        time.sleep(0.05)


class Replica:
    def __init__(self, binary, port, work, name):
        self.binary, self.port, self.work, self.name = binary, port, work, name
        self.process = None
        self.starts = 0

    def start(self):
        self.starts += 1
        log = open(self.work / f"{self.name}-{self.starts}.log", "w")
        self.process = subprocess.Popen(
            [self.binary, "--config", str(pathlib.Path(__file__).with_name("replica.toml")), "serve", "--port", str(self.port), "--preload", ",".join([CHAT, EMBED, SPEECH, WHISPER]),
             "--drain-timeout", "30", "--keep-alive", "never", "--log-format", "json",
             # nginx names the replicas by its upstream (`Host: ingle`): a keyless server
             # answers only to the names it is given (docs/operations.md).
             "--allowed-hosts", "ingle"],
            stdout=subprocess.DEVNULL, stderr=log, env={k: v for k, v in os.environ.items() if k != "INGLE_API_KEY"})

    def ready(self):
        return get_status(f"http://127.0.0.1:{self.port}/ready") == 200

    def wait_ready(self):
        wait_until(self.ready, 120, f"{self.name} ready")


class Nginx:
    def __init__(self, replicas, work):
        self.port = free_port()
        self.dir = work / "nginx"
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        servers = "\n".join(f"    server 127.0.0.1:{r.port} max_fails=1 fail_timeout=2s;" for r in replicas)
        (self.dir / "nginx.conf").write_text(f"""
worker_processes 1;
error_log {self.dir}/logs/error.log warn;
pid {self.dir}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  log_format fleet '$msec $status "$upstream_addr" "$upstream_status" $request_uri';
  access_log {self.dir}/logs/access.log fleet;
  client_body_temp_path {self.dir}/body;
  proxy_temp_path {self.dir}/proxy;
  fastcgi_temp_path {self.dir}/fastcgi;
  uwsgi_temp_path {self.dir}/uwsgi;
  scgi_temp_path {self.dir}/scgi;
  upstream ingle {{
    least_conn;
{servers}
  }}
  server {{
    listen 127.0.0.1:{self.port};
    client_max_body_size 30m;
    location / {{
      proxy_pass http://ingle;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      # Server-Sent Events go through as they come.
      proxy_buffering off;
      proxy_read_timeout 300s;
      # A replica that refuses the connection (it drains, or is gone) or answers 503 (a model
      # loading, a drain) did nothing with the request: another one may take it, POST included.
      proxy_next_upstream error timeout http_502 http_503 non_idempotent;
      proxy_next_upstream_tries 3;
    }}
  }}
}}
""")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.process = subprocess.Popen([nginx, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf"),
                                         "-g", "daemon off;"], stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        wait_until(lambda: get_status(f"http://127.0.0.1:{self.port}/health") == 200, 30, "nginx up")

    def retried(self):
        """Requests nginx sent to more than one replica (its log's upstream list)."""
        lines = (self.dir / "logs" / "access.log").read_text().splitlines()
        return sum(1 for line in lines if ", " in line.split('"')[1])

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


class LiteLLM:
    def __init__(self, python, replicas, work):
        self.port = free_port()
        entries = []
        for model in (CHAT, EMBED, SPEECH, WHISPER):
            for r in replicas:
                entries.append(f"""  - model_name: "{model}"
    litellm_params:
      model: "openai/{model}"
      api_base: "http://127.0.0.1:{r.port}/v1"
      api_key: "none"
""")
        config = work / "litellm.yaml"
        config.write_text("model_list:\n" + "".join(entries) + """router_settings:
  routing_strategy: least-busy
  num_retries: 2
  allowed_fails: 1
  cooldown_time: 3
  retry_after: 0
litellm_settings:
  request_timeout: 300
""")
        env = {**os.environ, "LITELLM_MASTER_KEY": LITELLM_KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "LITELLM_LOG": "ERROR"}
        self.log = open(work / "litellm.log", "w")
        self.process = subprocess.Popen([str(pathlib.Path(python).parent / "litellm"), "--config", str(config), "--host", "127.0.0.1", "--port", str(self.port),
                                         "--num_workers", "1"],
                                        stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        wait_until(lambda: get_status(f"http://127.0.0.1:{self.port}/health/liveliness") == 200, 120, "LiteLLM up")

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.rows = []  # (router, phase, kind, seconds, outcome)
        self.phase = "warm-up"

    def add(self, *row):
        with self.lock:
            self.rows.append(row)


def one_request(client, kind, audio):
    """One call as an application makes it; returns 'ok', or raises. A stream that ends
    without a finish reason was cut."""
    if kind == "chat-stream":
        finish = None
        stream = client.chat.completions.create(
            model=CHAT, messages=[{"role": "user", "content": "Tell me about the sea."}],
            max_tokens=16, temperature=0.7, stream=True)
        started = False
        try:
            for chunk in stream:
                started = True
                if chunk.choices and chunk.choices[0].finish_reason:
                    finish = chunk.choices[0].finish_reason
        except Exception as error:
            raise StreamCut(error) if started else error
        if finish is None:
            raise StreamCut("the stream ended without a finish reason")
    elif kind == "chat":
        reply = client.chat.completions.create(
            model=CHAT, messages=[{"role": "user", "content": "Name a colour."}], max_tokens=12)
        assert reply.choices[0].message.content is not None
    elif kind == "embeddings":
        reply = client.embeddings.create(model=EMBED, input=["a fleet of replicas", "behind a router"])
        assert len(reply.data) == 2 and len(reply.data[0].embedding) == 384
    elif kind == "speech":
        audio_bytes = client.audio.speech.create(model=SPEECH, voice="alloy", input="Hello there.",
                                                 response_format="wav").read()
        assert len(audio_bytes) > 10_000
    elif kind == "transcription":
        reply = client.audio.transcriptions.create(model=WHISPER, file=("clip.wav", audio))
        assert "fail" in reply.text.lower(), reply.text
    return "ok"


class StreamCut(Exception):
    pass


MIX = ["chat-stream"] * 4 + ["chat"] * 2 + ["embeddings"] * 2 + ["speech", "transcription"]


def client_loop(router, url, key, results, stop, audio, seed):
    rng = random.Random(seed)
    client = openai.OpenAI(base_url=url, api_key=key, timeout=120)  # default retries (2)
    while not stop.is_set():
        kind = rng.choice(MIX)
        phase = results.phase
        started = time.monotonic()
        try:
            outcome = one_request(client, kind, audio)
        except StreamCut as error:
            outcome = f"stream cut: {str(error)[:80]}"
        except Exception as error:  # what the application would see
            outcome = f"failed: {type(error).__name__}: {str(error)[:80]}"
        # A request belongs to the phase it started in; one cut by the kill may have started
        # before it.
        if results.phase == "kill" and phase != "kill" and outcome.startswith("stream cut"):
            phase = "kill"
        results.add(router, phase, kind, time.monotonic() - started, outcome)


def readiness_watch(replicas, stop, flips):
    last = {r.name: None for r in replicas}
    while not stop.is_set():
        for r in replicas:
            now = r.ready()
            if now != last[r.name]:
                flips.append((time.monotonic(), r.name, now))
                last[r.name] = now
        time.sleep(0.1)


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def report(results, routers, flips, nginx_retried, took):
    print(f"\nfleet-test: {len(results.rows)} requests in {took:.0f} s")
    print(f"{'router':8} {'phase':9} {'sent':>5} {'ok':>5} {'failed':>6} {'cut':>4} {'p50 s':>6} {'p95 s':>6}")
    by = collections.defaultdict(list)
    for router, phase, kind, seconds, outcome in results.rows:
        by[(router, phase)].append((kind, seconds, outcome))
    for router in routers:
        for phase in ("before", "kill", "roll", "after"):
            rows = by.get((router, phase), [])
            ok = [s for _, s, o in rows if o == "ok"]
            cut = sum(1 for _, _, o in rows if o.startswith("stream cut"))
            failed = sum(1 for _, _, o in rows if o.startswith("failed"))
            print(f"{router:8} {phase:9} {len(rows):5} {len(ok):5} {failed:6} {cut:4} "
                  f"{percentile(ok, 50):6.2f} {percentile(ok, 95):6.2f}")
    kinds = collections.defaultdict(list)
    for _, phase, kind, seconds, outcome in results.rows:
        if outcome == "ok":
            kinds[kind].append(seconds)
    print("latency by kind, p50 / p95 s: " + ", ".join(
        f"{k} {percentile(v, 50):.2f} / {percentile(v, 95):.2f} ({len(v)})" for k, v in sorted(kinds.items())))
    print(f"nginx sent {nginx_retried} request(s) on to another replica")
    print("readiness, as /ready said: " + ", ".join(f"{name} {'ready' if up else 'not ready'}"
                                                     for _, name, up in flips))
    problems = []
    for router, phase, kind, seconds, outcome in results.rows:
        if outcome == "ok" or phase == "warm-up":
            continue
        # Through the kill, only a stream cut mid-way may be lost (it was in flight on the
        # killed replica); everything else must succeed, with the SDK's retries at most.
        if phase == "kill" and outcome.startswith("stream cut"):
            continue
        problems.append(f"{router} {phase} {kind}: {outcome}")
    for p in problems[:20]:
        print("  " + p)
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--python", default=sys.executable, help="the Python with LiteLLM's proxy")
    parser.add_argument("--short", action="store_true")
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    work = pathlib.Path(args.work or os.environ.get("TMPDIR", "/tmp")) / f"fleet-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    # nginx's workers run as another user when it starts as root: they need to reach its
    # temporary files in here.
    for folder in (work, work.parent):
        folder.chmod(folder.stat().st_mode | 0o711)
    clients = 8 if args.short else 32
    steady = 8 if args.short else 30
    audio = clip(MODELS_DIR / "recordings" / "beckett.wav", 3.5)
    started = time.monotonic()
    replicas = [Replica(args.bin, free_port(), work, name) for name in ("a", "b", "c")]
    routers = {}
    for r in replicas:
        r.start()
    nginx = litellm = None
    try:
        nginx = Nginx(replicas, work)
        litellm = LiteLLM(args.python, replicas, work)
        routers = {"nginx": (nginx.url, "none"), "litellm": (litellm.url, LITELLM_KEY)}
        for r in replicas:
            r.wait_ready()
        print(f"fleet-test: 3 replicas ready, nginx and LiteLLM up, {time.monotonic() - started:.0f} s in; "
              f"{clients} clients")
        results, stop, flips = Results(), threading.Event(), []
        watcher = threading.Thread(target=readiness_watch, args=(replicas, stop, flips), daemon=True)
        watcher.start()
        threads = []
        for i in range(clients):
            router = "nginx" if i % 2 == 0 else "litellm"
            url, key = routers[router]
            t = threading.Thread(target=client_loop, args=(router, url, key, results, stop, audio, i), daemon=True)
            t.start()
            threads.append(t)
        load_started = time.monotonic()
        time.sleep(2)
        results.phase = "before"
        time.sleep(steady)
        # (1) SIGKILL one replica, and bring it back.
        results.phase = "kill"
        replicas[0].process.kill()
        replicas[0].process.wait()
        replicas[0].start()
        replicas[0].wait_ready()
        time.sleep(2)
        # (2) Roll the other two: SIGTERM (drain), wait for the exit, start again, wait ready.
        results.phase = "roll"
        for r in replicas[1:]:
            r.process.send_signal(signal.SIGTERM)
            code = r.process.wait(timeout=60)
            if code != 0:
                raise SystemExit(f"fleet-test: replica {r.name} exited {code} after SIGTERM")
            r.start()
            r.wait_ready()
        time.sleep(2)
        results.phase = "after"
        time.sleep(steady)
        stop.set()
        for t in threads:
            t.join(timeout=180)
        problems = report(results, list(routers), flips, nginx.retried(), time.monotonic() - load_started)
    finally:
        for r in replicas:
            if r.process and r.process.poll() is None:
                r.process.kill()
        for router in (nginx, litellm):
            if router:
                router.stop()
    print(f"fleet-test: {'passed' if not problems else 'FAILED'} in {time.monotonic() - started:.0f} s "
          f"(logs in {work})")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
