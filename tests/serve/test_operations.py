"""What an operator's tools read of `ingle serve`: /metrics parsed by the Prometheus project's
own OpenMetrics parser after real traffic on every surface, /health and /ready, request logs
as JSON lines, and a SIGTERM drain that lets a stream in flight finish while the process
takes no new connections, then exits 0."""

import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import time

import openai
import pytest
import urllib.error
import urllib.request
from prometheus_client.openmetrics.parser import text_string_to_metric_families

URL = os.environ["INGLE_SERVE_URL"]
KEY = os.environ["INGLE_SERVE_KEY"]
ROOT = URL.removesuffix("/v1")
CHAT = "@local/smollm2-135m-instruct"
EMBED = "@local/all-minilm-l6-v2"
SPEECH = "@local/piper-en-us-joe-medium"
WHISPER = "@local/whisper-tiny-en"
MODELS_DIR = pathlib.Path(os.environ.get("INGLE_MODELS_DIR", pathlib.Path.home() / ".cache/ingle/models"))
BECKETT = MODELS_DIR / "recordings" / "beckett.wav"


class Reply:
    def __init__(self, status, headers, text):
        self.status_code, self.headers, self.text = status, headers, text

    def json(self):
        return json.loads(self.text)


def get(url, headers=None):
    """A GET with the standard library, errors included (the SDK knows only /v1)."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return Reply(reply.status, reply.headers, reply.read().decode())
    except urllib.error.HTTPError as error:
        return Reply(error.code, error.headers, error.read().decode())


def scrape():
    """Every sample of /metrics as {(name, frozenset(labels)): value}, through the strict
    OpenMetrics parser (a malformed exposition raises)."""
    reply = get(f"{ROOT}/metrics", {"Authorization": f"Bearer {KEY}"})
    assert reply.status_code == 200, reply.text
    assert reply.headers["Content-Type"].startswith("application/openmetrics-text")
    samples = {}
    for family in text_string_to_metric_families(reply.text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_after_traffic_on_every_surface():
    client = openai.OpenAI(base_url=URL, api_key=KEY, max_retries=0)
    before = scrape()
    client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": "Hi"}],
                                   max_tokens=6, temperature=0)
    for _ in client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": "Hi"}],
                                            max_tokens=6, temperature=0, stream=True):
        pass
    client.embeddings.create(model=EMBED, input=["one text", "and another"])
    client.audio.speech.create(model=SPEECH, voice="alloy", input="Metrics, please.").read()
    with open(BECKETT, "rb") as file:
        client.audio.transcriptions.create(model=WHISPER, file=file)
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model=EMBED, input="")
    after = scrape()

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("ingle_requests_total", surface="chat", model=CHAT, status="200") == 2
    assert grew("ingle_requests_total", surface="embeddings", model=EMBED, status="200") == 1
    assert grew("ingle_requests_total", surface="embeddings", model=EMBED, status="400") == 1
    assert grew("ingle_requests_total", surface="speech", model=SPEECH, status="200") == 1
    assert grew("ingle_requests_total", surface="transcription", model=WHISPER, status="200") == 1
    assert grew("ingle_request_duration_seconds_count", surface="transcription", model=WHISPER) == 1
    assert grew("ingle_generation_tokens_total", model=CHAT) >= 2
    assert grew("ingle_time_to_first_token_seconds_count", model=CHAT) == 2
    assert grew("ingle_prompt_tokens_total", model=EMBED) >= 4
    # The Beckett recording is 9.96 s; the speech, a second or two.
    assert abs(grew("ingle_audio_input_seconds_total", model=WHISPER) - 9.96) < 0.05
    assert 0.5 < grew("ingle_audio_output_seconds_total", model=SPEECH) < 5
    assert value(after, "ingle_kv_cache_usage_ratios", model=CHAT) == 0  # nothing running
    assert value(after, "ingle_model_loaded", model=WHISPER) == 1
    assert value(after, "process_resident_memory_bytes") > 100e6


def test_health_and_ready_need_no_key_and_metrics_do():
    assert get(f"{ROOT}/health").json() == {"status": "ok"}
    assert get(f"{ROOT}/ready").json() == {"status": "ready"}
    refused = get(f"{ROOT}/metrics")
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"


def start_server(tmp_path, *args):
    log = open(tmp_path / "serve.log", "w+")
    process = subprocess.Popen(
        [os.environ["INGLE_SERVE_BIN"], "serve", "--port", "0", "--log-format", "json", *args],
        stderr=log, env={k: v for k, v in os.environ.items() if k != "INGLE_API_KEY"})
    for _ in range(600):
        log.seek(0)
        found = re.search(r"http://\S+/v1", log.read())
        if found:
            return process, log, found.group(0)
        assert process.poll() is None, (tmp_path / "serve.log").read_text()
        time.sleep(0.05)
    raise AssertionError("ingle serve did not start")


def test_sigterm_drains_a_preloaded_replica_and_its_logs_are_json_lines(tmp_path):
    process, log, url = start_server(tmp_path, "--preload", CHAT, "--drain-timeout", "20")
    root = url.removesuffix("/v1")
    try:
        deadline = time.monotonic() + 60
        while get(f"{root}/ready").status_code != 200:
            assert time.monotonic() < deadline, "not ready in 60 s"
            time.sleep(0.05)
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=0)
        stream = client.chat.completions.create(
            model=CHAT, messages=[{"role": "user", "content": "Write a long story about a dragon."}],
            max_tokens=64, temperature=0, stream=True, extra_headers={"X-Request-Id": "drain-me"})
        pieces = [next(stream).choices[0].delta.content or "" for _ in range(3)]
        process.send_signal(signal.SIGTERM)
        # No new connections once the drain has begun.
        host, port = url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
        deadline = time.monotonic() + 5
        while True:
            try:
                socket.create_connection((host, int(port)), timeout=1).close()
            except OSError:
                break
            assert time.monotonic() < deadline, "still accepting 5 s into the drain"
            time.sleep(0.02)
        # The stream in flight runs to its own end.
        finish = None
        for chunk in stream:
            pieces.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
        # Ended by the model, not cut: its last chunk has a finish reason.
        assert finish in ("length", "stop") and len("".join(pieces)) > 20, pieces
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log.seek(0)
    lines = [json.loads(line) for line in log.read().splitlines() if line.startswith("{")]
    requests_logged = [line for line in lines if line.get("message") == "request"]
    drained = [line for line in requests_logged if line.get("request_id") == "drain-me"]
    assert len(drained) == 1, lines
    line = drained[0]
    assert (line["surface"], line["model"], line["status"], line["completed"]) == ("chat", CHAT, 200, True)
    assert line["stream"] is True and line["duration_ms"] > 0 and line["level"] == "INFO"
    assert any(line.get("message") == "model loaded" and line.get("model") == CHAT for line in lines)
    assert any(line.get("message") == "drained" and line.get("finished") is True for line in lines)
    # No prompt text in the logs.
    assert "dragon" not in json.dumps(lines)


def test_sigterm_during_a_drain_that_post_drain_began_stops_at_once(tmp_path):
    """POST /drain begins a drain; SIGTERM then stops the server at once, as a second SIGTERM
    does (the third probe: it was taken as "start a drain" and waited out --drain-timeout)."""
    process, log, url = start_server(tmp_path, "--drain-timeout", "60")
    root = url.removesuffix("/v1")
    try:
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=0)
        stream = client.chat.completions.create(
            model=CHAT, messages=[{"role": "user", "content": "Write a very long story about a dragon."}],
            max_tokens=2000, temperature=0, stream=True)
        next(stream)
        request = urllib.request.Request(f"{root}/drain", method="POST")
        with urllib.request.urlopen(request, timeout=30) as reply:
            assert reply.status == 202
        time.sleep(0.5)
        assert process.poll() is None, "the drain waits on the stream"
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
        assert time.monotonic() - started < 12, "SIGTERM during the drain did not stop the server"
        stream.close()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
