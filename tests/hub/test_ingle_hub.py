"""ingle's Python client and `huggingface_hub` on one Hugging Face cache, both ways, through the
Hub stand-in (tests/hub/standin.py) serving the real model files: what ingle pulls,
huggingface_hub finds offline; what huggingface_hub downloads, ingle serves with no download.
Also `client.models.pull(REF)` with progress, requests by reference, `config=` as a dict and as
TOML text, and the errors a user meets.

Runs in the clients virtualenv (the ingle wheel and huggingface_hub 2.4.0; scripts/test-clients).
ingle reads HF_ENDPOINT and HF_HUB_CACHE at each call, so they are set here; huggingface_hub reads
them once, when imported, so it runs in a subprocess with its own environment.
"""

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ingle

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import standin  # noqa: E402

MODELS = Path(
    os.environ.get("INGLE_MODELS_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ingle" / "models"
)
CHAT = "ingle-test/SmolLM2-135M-Instruct-GGUF"
EMBED = "sentence-transformers/all-MiniLM-L6-v2"
WHISPER = "Systran/faster-whisper-tiny.en"
TOKEN = "hf_ingle_test_token"


def link(repos, path, source):
    dest = repos / path
    dest.parent.mkdir(parents=True, exist_ok=True)
    assert source.is_file(), f"{source} is missing: run scripts/fetch-models"
    dest.symlink_to(source)


def write(repos, path, text):
    dest = repos / path
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    repos = tmp_path / "repos"
    link(repos, f"{CHAT}/SmolLM2-135M-Instruct.Q4_1.gguf", MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf")
    link(repos, f"{EMBED}/onnx/model.onnx", MODELS / "all-minilm-l6-v2/model.onnx")
    link(repos, f"{EMBED}/tokenizer.json", MODELS / "all-minilm-l6-v2/tokenizer.json")
    write(repos, f"{EMBED}/1_Pooling/config.json", '{"pooling_mode_mean_tokens": true}')
    write(repos, f"{EMBED}/sentence_bert_config.json", '{"max_seq_length": 256}')
    for name in ["model.bin", "config.json", "tokenizer.json"]:
        link(repos, f"{WHISPER}/{name}", MODELS / "whisper-tiny-en" / name)
    write(repos, "ingle-test/gated-GGUF/.standin.json", '{"gated": true}')
    write(repos, "ingle-test/gated-GGUF/x.Q8_0.gguf", "not a model")
    server = standin.start(str(repos), token=TOKEN)
    cache = tmp_path / "hf-cache"
    env = {"HF_ENDPOINT": server.hub_url, "HF_HUB_CACHE": str(cache), "HF_HOME": str(tmp_path / "hf-home")}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_TOKEN_PATH"]:
        monkeypatch.delenv(name, raising=False)
    yield server, cache, env
    server.stop()


def huggingface_hub(env, code):
    """Runs `code` with huggingface_hub in a subprocess with `env`; returns what it prints (JSON)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    clean.update(env, HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_XET="1")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=clean, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_what_ingle_pulls_huggingface_hub_finds_offline(hub):
    server, cache, env = hub
    client = ingle.OpenAI()
    events = []
    result = client.models.pull(f"hf.co/{EMBED}", progress=events.append)
    assert result.tag == f"hf.co/{EMBED}" and result.models_dir == str(cache)
    assert {f.path for f in result.files} >= {"onnx/model.onnx", "tokenizer.json", "1_Pooling/config.json"}
    assert any(e.status == "downloading" and e.completed > 0 for e in events)
    assert events[-1].status == "success"
    # Served by reference (and by its name without `/`), as the built-in model it is.
    text = "The sea is blue."
    by_reference = client.embeddings.create(model=f"hf.co/{EMBED}", input=text).data[0].embedding
    builtin = client.embeddings.create(model="@local/all-minilm-l6-v2", input=text).data[0].embedding
    assert by_reference == builtin
    assert client.embeddings.create(model="all-MiniLM-L6-v2", input=text).data[0].embedding == builtin
    assert f"hf.co/{EMBED}" in [m.id for m in client.models.list()]
    server.stop()
    found = huggingface_hub(
        {**env, "HF_HUB_OFFLINE": "1"},
        f"""
        import json
        from huggingface_hub import hf_hub_download, snapshot_download
        path = hf_hub_download("{EMBED}", "onnx/model.onnx", local_files_only=True)
        folder = snapshot_download("{EMBED}", local_files_only=True)
        print(json.dumps({{"path": path, "folder": folder}}))
        """,
    )
    assert sha256(found["path"]) == sha256(MODELS / "all-minilm-l6-v2/model.onnx")
    assert Path(found["folder"], "tokenizer.json").is_file()


def test_what_huggingface_hub_downloads_ingle_serves_without_a_download(hub):
    server, cache, env = hub
    folder = huggingface_hub(
        env,
        f"""
        import json
        from huggingface_hub import snapshot_download
        print(json.dumps(snapshot_download("{WHISPER}")))
        """,
    )
    assert Path(folder, "model.bin").is_file()
    server.stop()  # no Hub now: what the cache holds is all there is
    client = ingle.OpenAI()
    assert f"hf.co/{WHISPER}" in [m.id for m in client.models.list()]
    audio = MODELS / "recordings/beckett.wav"
    with open(audio, "rb") as f:
        by_reference = client.audio.transcriptions.create(model=f"hf.co/{WHISPER}", file=f).text
    with open(audio, "rb") as f:
        builtin = client.audio.transcriptions.create(model="@local/whisper-tiny-en", file=f).text
    assert by_reference == builtin  # the same files, the same words
    # A pull with the Hub unreachable answers with the cached copy, and says so.
    result = client.models.pull(f"hf.co/{WHISPER}")
    assert result.downloaded_bytes == 0 and any("cached copy" in n for n in result.notes), result.notes


def test_chat_by_reference_and_config_as_a_dict_or_toml_text(hub):
    server, cache, env = hub
    client = ingle.OpenAI()
    with pytest.raises(ingle.NotFoundError) as e:
        client.chat.completions.create(model=f"hf.co/{CHAT}", messages=[{"role": "user", "content": "hi"}])
    assert f'client.models.pull("hf.co/{CHAT}")' in e.value.message and e.value.param == "model"
    result = client.models.pull(f"hf.co/{CHAT}")
    assert result.tag == f"hf.co/{CHAT}:Q4_1"
    ask = {"messages": [{"role": "user", "content": "Name the capital of France."}], "temperature": 0, "max_tokens": 8}
    answer = client.chat.completions.create(model=f"hf.co/{CHAT}:q4_1", **ask).choices[0].message.content
    assert "Paris" in answer
    # A config that names the cached model by reference, with options of its own.
    predictor = {"tag": "@me/chat", "backend": "llama", "model": f"hf.co/{CHAT}:Q4_1", "n_ctx": 512}
    mine = ingle.OpenAI(config={"predictors": [predictor], "builtin_models": False})
    assert mine.chat.completions.create(model="@me/chat", **ask).choices[0].message.content == answer
    assert "@local/smollm2-135m-instruct" not in [m.id for m in mine.models.list()]
    toml = f'[[predictors]]\ntag = "@me/chat"\nbackend = "llama"\nmodel = "hf.co/{CHAT}:Q4_1"\n'
    mine = ingle.OpenAI(config=toml)
    assert mine.chat.completions.create(model="chat", **ask).choices[0].message.content == answer
    with pytest.raises(ingle.BadRequestError) as e:
        ingle.OpenAI(config={"predictors": [{"tag": "@me/x", "backend": "nope", "model": "x"}]})
    assert "backend" in e.value.message
    with pytest.raises(ingle.BadRequestError) as e:
        ingle.OpenAI(config={"predictors": [{"tag": "@me/x", "backend": "piper", "model": f"hf.co/{CHAT}"}]}).audio.speech.create(
            model="@me/x", input="hi", voice="alloy"
        )
    assert "llama" in e.value.message


def test_gated_and_missing_repos_say_what_to_do(hub):
    client = ingle.OpenAI()
    with pytest.raises(ingle.BadRequestError) as e:
        client.models.pull("hf.co/ingle-test/gated-GGUF")
    assert e.value.code == "gated_repo" and "HF_TOKEN" in e.value.message
    with pytest.raises(ingle.NotFoundError) as e:
        client.models.pull("hf.co/ingle-test/nothing-here")
    assert e.value.code == "repo_not_found"
    with pytest.raises(ingle.BadRequestError) as e:
        client.models.pull("hf.co/ingle-test")
    assert e.value.param == "model"
    os.environ["HF_TOKEN"] = TOKEN
    try:
        assert client.models.pull("hf.co/ingle-test/gated-GGUF").files[0].fetched
    finally:
        del os.environ["HF_TOKEN"]
