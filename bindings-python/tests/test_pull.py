"""client.models.pull: the real default model pulled from a local mirror (an HTTP server on
127.0.0.1 serving the models cache) into an empty models directory, with progress; then served
by the same client. Stopping from the progress callback, and unknown tags."""

import functools
import hashlib
import json
import http.server
import threading

import pytest

import ingle
from conftest import FRANCE, MODEL

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def mirror():
    """An HTTP server on 127.0.0.1 over the models cache; yields its URL."""
    handler = functools.partial(_QuietHandler, directory=str(_models_dir()))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """No log lines, and no traceback when a stopped pull hangs up."""

    def log_message(self, *args):
        pass

    def handle(self):
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):
            pass


def _models_dir():
    import os
    import pathlib

    if os.environ.get("INGLE_MODELS_DIR"):
        return pathlib.Path(os.environ["INGLE_MODELS_DIR"])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(cache) / "ingle" / "models"


@pytest.fixture
def catalog(tmp_path, mirror, monkeypatch):
    """A catalog with the default model at the mirror, in force for this test."""
    data = (_models_dir() / GGUF).read_bytes()
    path = tmp_path / "catalog.toml"
    path.write_text(
        f'schema = 1\nindex = "{mirror}/simple/"\n'
        f'[[model]]\ntag = "{MODEL}"\nkind = "chat"\nlicence = "Apache-2.0"\n'
        f'[[model.file]]\npath = "{GGUF}"\nsize = {len(data)}\n'
        f'sha256 = "{hashlib.sha256(data).hexdigest()}"\n'
        f'[[model.file.part]]\nurl = "{mirror}/{GGUF}"\n'
    )
    monkeypatch.setenv("INGLE_CATALOG", str(path))
    return path


def test_pull_into_an_empty_models_dir_then_chat(tmp_path, catalog):
    models = tmp_path / "models"
    client = ingle.OpenAI(models_dir=models)
    with pytest.raises(ingle.NotFoundError) as e:  # a 404 that says how, not a 500 to retry
        client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=2)
    assert f"ingle pull {MODEL}" in e.value.message, e.value.message

    events = []
    result = client.models.pull(MODEL, progress=events.append)
    assert isinstance(result, ingle.types.PullResult)
    assert result.tag == MODEL and result.status == "success"
    assert [(f.path, f.fetched) for f in result.files] == [(GGUF, True)]
    assert result.downloaded_bytes == (models / GGUF).stat().st_size == result.files[0].size
    downloading = [e for e in events if e.status == "downloading"]
    assert len(downloading) > 10 and all(e.file == GGUF for e in downloading)
    assert [e.completed for e in downloading] == sorted(e.completed for e in downloading)
    assert downloading[-1].completed == downloading[-1].total == result.files[0].size
    assert events[-1].status == "success" and events[-1].file is None

    answer = client.chat.completions.create(model=MODEL, messages=FRANCE, max_tokens=12, temperature=0)
    assert "Paris" in answer.choices[0].message.content

    # Again: verified in place, nothing downloaded; no callback is fine too.
    again = client.models.pull(MODEL)
    assert again.downloaded_bytes == 0 and not again.files[0].fetched


def test_the_progress_callback_stops_a_pull(tmp_path, catalog):
    client = ingle.OpenAI(models_dir=tmp_path / "models")

    def stop_after_some(event):
        return not (event.status == "downloading" and event.completed > 5_000_000)

    with pytest.raises(ingle.APIStatusError) as e:
        client.models.pull(MODEL, progress=stop_after_some)
    assert e.value.code == "cancelled" and "resumes" in e.value.message
    assert not (tmp_path / "models" / GGUF).exists()

    class Boom(Exception):
        pass

    def raises(event):
        raise Boom("from the callback")

    with pytest.raises(Boom):
        client.models.pull(MODEL, progress=raises)
    # Finished by the next pull (from the start: this server ignores ranges); the client is
    # still usable.
    result = client.models.pull(MODEL)
    assert result.files[0].fetched
    assert (tmp_path / "models" / GGUF).stat().st_size == result.files[0].size

    # On the last event: `False` cancels nothing (the pull is done), an exception is raised.
    events = []
    result = client.models.pull(
        MODEL, progress=lambda e: events.append(e.status) or e.status != "success"
    )
    assert result.status == "success" and events[-1] == "success"

    def raises_at_the_end(event):
        if event.status == "success":
            raise Boom("at the end")

    with pytest.raises(Boom):
        client.models.pull(MODEL, progress=raises_at_the_end)


def test_bad_arguments_and_unknown_tags(tmp_path, catalog):
    client = ingle.OpenAI(models_dir=tmp_path)
    with pytest.raises(ingle.NotFoundError) as e:
        client.models.pull("@local/no-such-model")
    assert e.value.param == "model" and MODEL in e.value.message
    with pytest.raises(ingle.BadRequestError):
        client.models.pull(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.models.pull(MODEL, progress="not callable")  # type: ignore[arg-type]


def test_async_pull(tmp_path, catalog):
    import asyncio

    async def main():
        client = ingle.AsyncOpenAI(models_dir=tmp_path / "models")
        events = []
        result = await client.models.pull(MODEL, progress=events.append)
        assert result.files[0].fetched and events[-1].status == "success"

    asyncio.run(main())


def test_the_ingle_command_of_the_wheel(tmp_path, catalog):
    import os
    import subprocess
    import sys

    # The console script the wheel installs, next to this Python.
    assert os.path.exists(os.path.join(os.path.dirname(sys.executable), "ingle"))
    env = dict(os.environ, INGLE_MODELS_DIR=str(tmp_path / "models"))
    run = lambda *args: subprocess.run([sys.executable, "-m", "ingle", *args], env=env,
                                       capture_output=True, text=True, timeout=120)
    listed = run("models")
    assert f"not downloaded: ingle pull {MODEL}" in listed.stdout, listed
    pulled = run("pull", MODEL)
    assert pulled.returncode == 0 and pulled.stderr == "", pulled
    assert pulled.stdout.startswith(f"pulled {MODEL}: 98.4 MB (98.4 MB downloaded), verified"), pulled
    listed = json.loads(run("models", "--json").stdout)
    assert listed["models_dir"] == str(tmp_path / "models") and listed["models"][0]["cached"] is True
    # The same command as the binary: a usage error is clap's (status 2), --help lists its verbs.
    usage = run("pull", "--no-such-flag")
    assert usage.returncode == 2 and "--no-such-flag" in usage.stderr, usage
    assert all(verb in run("--help").stdout for verb in ("pull", "models", "chat", "serve", "transcribe"))
    other_dir = run("--models-dir", str(tmp_path / "elsewhere"), "models", "--json")
    assert json.loads(other_dir.stdout)["models_dir"] == str(tmp_path / "elsewhere"), other_dir
    unknown = run("pull", "@local/nope")
    assert unknown.returncode == 1 and unknown.stderr.startswith("ingle: error: "), unknown


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_the_wheels_ingle_serve_stops_on_a_signal(tmp_path, signal_name):
    # The command runs without the GIL, where Python's own Ctrl-C handler never runs: the
    # signals stop it as they stop the binary (serve drains and exits 0).
    import os
    import signal
    import subprocess
    import sys
    import time

    env = dict(os.environ, INGLE_MODELS_DIR=str(tmp_path / "models"))
    server = subprocess.Popen([sys.executable, "-m", "ingle", "serve", "--port", "0"], env=env,
                              stderr=subprocess.PIPE, text=True)
    try:
        import select

        deadline = time.monotonic() + 60
        line = ""
        while "serving the OpenAI API on" not in line and time.monotonic() < deadline:
            # A line, or nothing within what is left of the minute: never a blocked read.
            ready, _, _ = select.select([server.stderr], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            line = server.stderr.readline()
            assert line or server.poll() is None, "ingle serve ended before serving"
        assert "serving the OpenAI API on" in line, line
        server.send_signal(getattr(signal, signal_name))
        assert server.wait(timeout=10) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
