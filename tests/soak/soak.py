"""Soak: `ingle serve` and a Python `ingle.serve` (serving user predictors) under a bounded
mixed load on loopback for MINUTES, driven by the official openai and anthropic SDKs: streamed
and whole chat, tool calls, embeddings, rerank, speech, transcription uploads (English-only and
multilingual Whisper), Anthropic messages (streamed, and hung up mid-stream), the user's chat
and image predictors, clients that hang up mid-stream and slow readers. Every 10 s it samples each server's RSS, open files, threads and
(from /metrics) KV cells in use. Fails if a request that should succeed failed, if RSS grew
after warm-up beyond what a bounded cache explains, if open files or threads grew, or if KV
cells are still held once the load stops. Prints the figures (docs/testing.md has the hour's).

Usage: python tests/soak/soak.py --bin INGLE [--minutes M] [--clients N]"""

import argparse
import collections
import io
import os
import pathlib
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import wave

import anthropic
import openai

CHAT = "@local/smollm2-135m-instruct"
TOOLS = "@local/qwen2.5-coder-0.5b-instruct"
EMBED = "@local/all-minilm-l6-v2"
SPEECH = "@local/piper-en-us-joe-medium"
WHISPER = "@local/whisper-tiny-en"
MULTILINGUAL = "@local/whisper-base"
USER = "@soak/echo"
IMAGES = "@soak/gradient"
MODELS_DIR = pathlib.Path(os.environ.get("INGLE_MODELS_DIR", pathlib.Path.home() / ".cache/ingle/models"))
WEATHER = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]

USER_SERVER = '''
import sys, time
from typing import Annotated, Iterator
import numpy as np
import ingle
from ingle import Parameter
from ingle.types import ChatCompletionMessageParam

@ingle.predictor("@soak/echo")
def echo(messages: list[ChatCompletionMessageParam]) -> Iterator[str]:
    """Echoes the last message word by word, a little slowly, as a model would."""
    for word in str(messages[-1]["content"]).split():
        time.sleep(0.005)
        yield word + " "

@ingle.predictor("@soak/gradient")
def gradient(
    prompt: str,
    width: Annotated[int, Parameter.ImageWidth("Width.", min=1, max=512)] = 64,
    height: Annotated[int, Parameter.ImageHeight("Height.", min=1, max=512)] = 64,
    n: Annotated[int, Parameter.ImageCount("How many.", min=1, max=4)] = 1,
) -> np.ndarray:
    """A horizontal gradient, red if the prompt says so."""
    image = np.zeros((n, height, width, 3), dtype=np.uint8)
    image[..., 0 if "red" in prompt else 2] = np.linspace(0, 255, width, dtype=np.uint8)
    return image

client = ingle.OpenAI()
client.predictors.register(echo)
client.predictors.register(gradient)
ingle.serve(client, port=int(sys.argv[1]))
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"soak: {url} not ready within {seconds} s")


def clip(seconds):
    with wave.open(str(MODELS_DIR / "recordings" / "beckett.wav")) as source:
        frames = source.readframes(int(seconds * source.getframerate()))
        out = io.BytesIO()
        with wave.open(out, "wb") as target:
            target.setparams(source.getparams())
            target.writeframes(frames)
    return out.getvalue()


def process_figures(pid):
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    field = lambda name: int(next(l.split()[1] for l in status.splitlines() if l.startswith(name + ":")))
    return {"rss_mb": field("VmRSS") / 1024, "threads": field("Threads"),
            "files": len(os.listdir(f"/proc/{pid}/fd"))}


def kv_cells(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("ingle_kv_cache_cells_used{"))


class Load:
    """Each kind of request: what it does, and whether failing is allowed (it never is here:
    a hang-up or a slow reader is the client's choice, and its request must still succeed up
    to where the client left)."""

    def __init__(self, main, user, messages, audio):
        self.main, self.user, self.messages, self.audio = main, user, messages, audio
        self.counts = collections.Counter()
        self.failures = collections.defaultdict(list)
        self.lock = threading.Lock()

    def chat_stream(self):
        stream = self.main.chat.completions.create(model=CHAT, stream=True, max_tokens=24,
                                                   messages=[{"role": "user", "content": "Tell me about the sea."}])
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    def chat_whole(self):
        r = self.main.chat.completions.create(model=CHAT, max_tokens=16, messages=[{"role": "user", "content": "Hi"}])
        assert r.choices[0].message.content is not None

    def tools(self):
        r = self.main.chat.completions.create(model=TOOLS, max_tokens=40, tools=WEATHER, tool_choice="required",
                                              messages=[{"role": "user", "content": "Weather in Paris?"}])
        assert r.choices[0].message.tool_calls[0].function.name == "get_weather"

    def embeddings(self):
        r = self.main.embeddings.create(model=EMBED, input=["the sea", "a boat", "the shore"])
        assert len(r.data) == 3

    def speech(self):
        r = self.main.audio.speech.create(model=SPEECH, voice="alloy", input="The sea is calm tonight.",
                                          response_format="wav")
        assert len(r.content) > 1000

    def transcription(self):
        r = self.main.audio.transcriptions.create(model=WHISPER, file=("clip.wav", self.audio))
        assert "tried" in r.text.lower(), r.text

    def multilingual(self):
        r = self.main.audio.transcriptions.create(model=MULTILINGUAL, file=("clip.wav", self.audio),
                                                  response_format="verbose_json")
        assert "tried" in r.text.lower() and r.language == "english", (r.language, r.text)

    def rerank(self):
        r = self.main.post("/rerank", cast_to=object, body={
            "model": EMBED, "query": "What is the capital of France?", "top_n": 2,
            "documents": ["Bananas are rich in potassium.", "Paris is the capital of France.",
                          "The Loire is a long river."]})
        assert r["results"][0]["index"] == 1 and len(r["results"]) == 2, r

    def messages_stream(self):
        with self.messages.messages.stream(model=CHAT, max_tokens=24,
                                           messages=[{"role": "user", "content": "Tell me about the sea."}]) as s:
            text = "".join(s.text_stream)
            final = s.get_final_message()
        assert text and final.stop_reason in ("end_turn", "max_tokens"), final

    def messages_hang_up(self):
        """An Anthropic stream of a long answer, closed after three events."""
        with self.messages.messages.stream(model=CHAT, max_tokens=400,
                                           messages=[{"role": "user", "content": "Write a long story."}]) as s:
            for i, _ in enumerate(s):
                if i == 2:
                    break

    def images(self):
        r = self.user.images.generate(model=IMAGES, prompt="something red", size="64x32", n=2)
        assert len(r.data) == 2 and r.data[0].b64_json, r

    def user_predictor(self):
        stream = self.user.chat.completions.create(model=USER, stream=True,
                                                   messages=[{"role": "user", "content": "one two three four"}])
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices).split() == \
            ["one", "two", "three", "four"]

    def hang_up(self):
        """Reads two chunks of a long answer and closes the connection."""
        stream = self.main.chat.completions.create(model=CHAT, stream=True, max_tokens=400,
                                                   messages=[{"role": "user", "content": "Write a long story."}])
        for i, _ in enumerate(stream):
            if i == 2:
                break
        stream.close()

    def slow_reader(self):
        stream = self.main.chat.completions.create(model=CHAT, stream=True, max_tokens=12,
                                                   messages=[{"role": "user", "content": "Count to five."}])
        for _ in stream:
            time.sleep(0.3)

    KINDS = {"chat_stream": 4, "chat_whole": 3, "tools": 1, "embeddings": 3, "speech": 2, "transcription": 1,
             "multilingual": 1, "rerank": 2, "messages_stream": 2, "messages_hang_up": 1, "images": 2,
             "user_predictor": 3, "hang_up": 1, "slow_reader": 1}

    def run(self, until, seed):
        rng = random.Random(seed)
        kinds, weights = zip(*self.KINDS.items())
        while time.monotonic() < until:
            kind = rng.choices(kinds, weights)[0]
            try:
                getattr(self, kind)()
                with self.lock:
                    self.counts[kind] += 1
            except Exception as error:  # noqa: BLE001 - every failure is counted and reported
                with self.lock:
                    self.counts[kind] += 1
                    self.failures[kind].append(f"{type(error).__name__}: {error}"[:300])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    work = pathlib.Path(args.work or f"/tmp/soak-{os.getpid()}")
    work.mkdir(parents=True, exist_ok=True)

    main_port, user_port = free_port(), free_port()
    servers = {
        "ingle serve": subprocess.Popen(
            [args.bin, "serve", "--port", str(main_port), "--preload", ",".join([CHAT, TOOLS, EMBED, SPEECH, WHISPER, MULTILINGUAL]),
             "--log-format", "off"], stdout=subprocess.DEVNULL, stderr=open(work / "serve.log", "w"),
            env={k: v for k, v in os.environ.items() if k != "INGLE_API_KEY"}),
        "ingle.serve": subprocess.Popen(
            [sys.executable, "-c", USER_SERVER, str(user_port)], stdout=subprocess.DEVNULL,
            stderr=open(work / "user.log", "w")),
    }
    try:
        wait_ready(f"http://127.0.0.1:{main_port}/ready", 180)
        wait_ready(f"http://127.0.0.1:{user_port}/health", 60)
        sdk = lambda port: openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="soak", max_retries=0,
                                         timeout=120)
        messages = anthropic.Anthropic(base_url=f"http://127.0.0.1:{main_port}", api_key="soak", max_retries=0,
                                       timeout=120)
        load = Load(sdk(main_port), sdk(user_port), messages, clip(2.0))
        # Each kind once before the clock starts, so that a model the mix picks rarely (Whisper
        # base, 1 in 28) has its first request (its arenas) before the warm-up ends, not after.
        for kind in Load.KINDS:
            getattr(load, kind)()
        seconds = args.minutes * 60
        start = time.monotonic()
        until = start + seconds
        workers = [threading.Thread(target=load.run, args=(until, i), daemon=True) for i in range(args.clients)]
        for w in workers:
            w.start()
        samples = []  # (t, name, figures)
        while any(w.is_alive() for w in workers):
            t = time.monotonic() - start
            for name, process in servers.items():
                if process.poll() is not None:
                    raise SystemExit(f"soak: {name} exited with {process.returncode} (logs in {work})")
                figures = process_figures(process.pid)
                if name == "ingle serve":
                    figures["kv_cells"] = kv_cells(main_port)
                samples.append((t, name, figures))
            time.sleep(min(10, max(1, seconds / 60)))
        for w in workers:
            w.join()
        time.sleep(2)  # the last hang-up's generation stops at its next token
        idle_kv = kv_cells(main_port)
        final = {name: process_figures(p.pid) for name, p in servers.items()}
    finally:
        for process in servers.values():
            process.terminate()
        for process in servers.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()

    total = sum(load.counts.values())
    failed = sum(len(f) for f in load.failures.values())
    print(f"soak: {args.minutes:g} min, {args.clients} clients: {total} requests, {failed} failed")
    for kind, n in sorted(load.counts.items()):
        print(f"  {kind:17} {n:6}  failed {len(load.failures.get(kind, []))}")
    for kind, errors in load.failures.items():
        for error in errors[:3]:
            print(f"  ! {kind}: {error}")
    # Warm-up: the first fifth (caches, arenas and the KV cache fill as the load first reaches
    # each model); after it, each figure should stay flat.
    warm = seconds / 5
    problems = []
    for name in servers:
        series = [(t, f) for t, n, f in samples if n == name]
        after = [f for t, f in series if t >= warm] or [series[-1][1]]
        first, peak = after[0], max(after, key=lambda f: f["rss_mb"])
        growth = peak["rss_mb"] - first["rss_mb"]
        print(f"  {name}: RSS {series[0][1]['rss_mb']:.0f} MB at start, {first['rss_mb']:.0f} MB after warm-up, "
              f"peak {peak['rss_mb']:.0f} MB after it (+{growth:.0f} MB, {100 * growth / first['rss_mb']:.1f}%), "
              f"{final[name]['rss_mb']:.0f} MB at the end; open files {first['files']} -> {final[name]['files']}; "
              f"threads {first['threads']} -> {final[name]['threads']}")
        if growth > max(64, 0.05 * first["rss_mb"]):
            problems.append(f"{name}'s RSS grew {growth:.0f} MB after warm-up")
        if final[name]["files"] > first["files"] + 4:
            problems.append(f"{name}'s open files grew from {first['files']} to {final[name]['files']}")
        if final[name]["threads"] > first["threads"] + 4:
            problems.append(f"{name}'s threads grew from {first['threads']} to {final[name]['threads']}")
    kv_peak = max(f.get("kv_cells", 0) for _, _, f in samples)
    print(f"  KV cells in use: peak {kv_peak:.0f} while loaded, {idle_kv:.0f} once idle")
    if idle_kv:
        problems.append(f"{idle_kv:.0f} KV cells still held once idle")
    if failed:
        problems.append(f"{failed} requests failed")
    if problems:
        print("soak: FAILED: " + "; ".join(problems))
        sys.exit(1)
    print("soak: passed")


if __name__ == "__main__":
    main()
