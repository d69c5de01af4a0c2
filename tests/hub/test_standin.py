"""The Hub stand-in (tests/hub/standin.py) checked with the real `huggingface_hub` client, so that
the stand-in cannot drift from the Hub that client was written against.

Run with an interpreter that has huggingface_hub (2.4.0 is what the stand-in was checked with),
for example the clients venv:

    ~/.cache/ingle/venv/clients-openai3-*/bin/pytest -q tests/hub/test_standin.py

huggingface_hub reads HF_ENDPOINT, HF_HUB_CACHE, HF_TOKEN... once, when imported, so each check runs
the client in a subprocess of its own (`client()`), with an environment made for it and nothing
inherited from the user's (no HF_* variable, no token file, no proxy). $INGLE_HF_PYTHON names
another interpreter to run the client with.
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
STANDIN = HERE / "standin.py"
TOKEN = "hf_standin_secret_token"
CLIENT_PYTHON = os.environ.get("INGLE_HF_PYTHON") or sys.executable
MiB = 1024 * 1024

sys.path.insert(0, str(HERE))
import standin  # noqa: E402  (the in-process interface is checked too)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def git_oid(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def rand(n, seed):
    """n bytes that look random (fast, and the same on every run)."""
    out = bytearray()
    block = hashlib.sha256(seed.encode()).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block * 64
    return bytes(out[:n])


# --- the repos ---------------------------------------------------------------------------------

BIG = rand(10 * MiB + 4321, "big")  # over 10 MiB and a .bin: LFS twice over
TINY = {
    "README.md": b"# tiny\nA test repo.\n",
    "config.json": b'{"model_type": "tiny", "hidden_size": 8}\n',
    "tokenizer.json": b'{"version": "1.0", "model": {"type": "BPE"}}\n',
    "model.bin": BIG,
    "onnx/model.onnx": rand(4096, "onnx"),  # small, LFS by its name
    "onnx/config.json": b'{"opset": 17}\n',
}
REPOS = {
    "acme/tiny": (TINY, None),
    "acme/gated": ({"config.json": b'{"gated": true}\n', "model.safetensors": rand(2048, "st")},
                   {"gated": True}),
    "acme/private": ({"config.json": b'{"private": true}\n'}, {"private": True}),
    "acme/corrupt": ({"model.bin": rand(300_000, "corrupt"), "notes.txt": b"some notes\n" * 10},
                     {"corrupt": ["model.bin", "notes.txt"]}),
    # The same big blob as acme/tiny's model.bin: the CDN cuts it only when the hub sent the client
    # there for acme/resume.
    "acme/resume": ({"big.gguf": BIG, "small.gguf": rand(3 * MiB, "resume")},
                    {"cut_after": {"big.gguf": 10 * MiB + 1000, "small.gguf": 1_000_000}}),
}


def lfs(path, data):
    return len(data) > 10 * MiB or path.endswith((".gguf", ".bin", ".onnx", ".safetensors"))


def etag(path, data):
    """The name huggingface_hub gives the blob: sha256 for LFS, the git blob oid otherwise."""
    return sha256(data) if lfs(path, data) else git_oid(data)


def build_repos(root):
    store = root / "store"  # the big file lives outside the repo and is symlinked in, as tests do
    store.mkdir()
    (store / "big.bin").write_bytes(BIG)
    repos = root / "repos"
    for repo_id, (files, control) in REPOS.items():
        base = repos / repo_id
        for path, data in files.items():
            p = base / path
            p.parent.mkdir(parents=True, exist_ok=True)
            if data is BIG:
                p.symlink_to(store / "big.bin")
            else:
                p.write_bytes(data)
        if control is not None:
            (base / ".standin.json").write_text(json.dumps(control))
    return repos


class Server:
    """standin.py as a subprocess, as other code runs it."""

    def __init__(self, repos, log, token=TOKEN):
        cmd = [sys.executable, str(STANDIN), "--repos", str(repos), "--log", str(log)]
        if token is not None:
            cmd += ["--token", token]
        self.log = Path(log)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"standin.py printed nothing: {self.proc.stderr.read()}")
        urls = json.loads(line)
        assert set(urls) == {"hub", "cdn"}, line
        self.hub, self.cdn = urls["hub"], urls["cdn"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=10)
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc, err

    def mark(self):
        """Where the log is now: `records(mark)` gives what came after."""
        return self.log.stat().st_size if self.log.exists() else 0

    def records(self, since=0):
        with open(self.log, "rb") as f:
            f.seek(since)
            return [json.loads(line) for line in f.read().decode().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    repos = build_repos(root)
    server = Server(repos, root / "log.jsonl")
    server.root, server.repos = root, repos
    yield server
    rc, err = server.stop()
    assert rc == 0, f"standin.py exited {rc} on SIGTERM: {err}"
    assert "standin:" not in err, err  # a handler raised


# --- the client --------------------------------------------------------------------------------

PRELUDE = """
import json, os, sys, hashlib
from pathlib import Path
import huggingface_hub
from huggingface_hub import HfApi, hf_hub_download, snapshot_download
R = {"version": huggingface_hub.__version__}
def err(fn, *args, **kwargs):
    try:
        value = fn(*args, **kwargs)
    except Exception as e:
        response = getattr(e, "response", None)
        return {"error": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
                "status": getattr(response, "status_code", None), "message": str(e)}
    return {"ok": value if isinstance(value, (str, int, float, bool, list, dict, type(None))) else repr(value)}
"""


def client(server, cache, code, token=None):
    """Runs `code` (with PRELUDE) under the given cache and token; returns its dict `R`."""
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith(("HF_", "HUGGING", "TRANSFORMERS_"))
           and "proxy" not in k.lower()}
    home = Path(cache).parent / "hf_home"
    home.mkdir(parents=True, exist_ok=True)
    env.update({
        "HF_ENDPOINT": server.hub,
        "HF_HUB_CACHE": str(cache),
        "HF_HOME": str(home),  # no token file of the user's
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "NO_PROXY": "127.0.0.1,localhost",
    })
    if token is not None:
        env["HF_TOKEN"] = token
    script = PRELUDE + textwrap.dedent(code) + "\nprint('@@R@@' + json.dumps(R, default=str))\n"
    p = subprocess.run([CLIENT_PYTHON, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    marker = [line for line in p.stdout.splitlines() if line.startswith("@@R@@")]
    assert p.returncode == 0 and marker, f"client failed (rc {p.returncode}):\n{p.stdout}\n{p.stderr}"
    return json.loads(marker[-1][len("@@R@@"):])


@pytest.fixture(scope="module", autouse=True)
def has_huggingface_hub():
    p = subprocess.run([CLIENT_PYTHON, "-c", "import huggingface_hub; print(huggingface_hub.__version__)"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.fail(f"{CLIENT_PYTHON} has no huggingface_hub: run these tests with the clients venv "
                    "(~/.cache/ingle/venv/clients-openai3-*/bin/pytest) or set INGLE_HF_PYTHON\n" + p.stderr)


def commit_of(server, repo_id):
    with urllib.request.urlopen(f"{server.hub}/api/models/{repo_id}") as r:
        return json.load(r)["sha"]


def assert_cached(cache, repo_id, commit, path, data):
    """The file sits in huggingface_hub's cache layout: a relative link to its blob."""
    storage = Path(cache) / ("models--" + repo_id.replace("/", "--"))
    assert (storage / "refs" / "main").read_text() == commit
    pointer = storage / "snapshots" / commit / path
    assert pointer.is_symlink(), pointer
    target = os.readlink(pointer)
    depth = path.count("/") + 2
    assert target == "../" * depth + "blobs/" + etag(path, data), target
    assert pointer.read_bytes() == data
    blob = storage / "blobs" / etag(path, data)
    assert blob.is_file() and not blob.is_symlink()
    assert (Path(cache) / ".locks" / storage.name / (etag(path, data) + ".lock")).exists()
    assert not list((storage / "blobs").glob("*.incomplete"))


def cdn_records(records):
    return [r for r in records if r["server"] == "cdn"]


# --- checks with huggingface_hub ---------------------------------------------------------------


def test_hf_hub_download_regular_and_lfs_with_token(world, tmp_path):
    cache = tmp_path / "cache"
    mark = world.mark()
    r = client(world, cache, """
        R["config"] = hf_hub_download("acme/tiny", "config.json")
        R["big"] = hf_hub_download("acme/tiny", "model.bin")
        R["onnx"] = hf_hub_download("acme/tiny", "onnx/model.onnx")
        R["again"] = hf_hub_download("acme/tiny", "model.bin")  # cached: a HEAD, no GET
        R["sha"] = HfApi().model_info("acme/tiny").sha
    """, token=TOKEN)
    records = world.records(mark)
    assert r["version"] == "2.4.0", f"checked with huggingface_hub 2.4.0, this is {r['version']}"
    commit = commit_of(world, "acme/tiny")
    assert r["sha"] == commit
    for key, path in (("config", "config.json"), ("big", "model.bin"), ("onnx", "onnx/model.onnx")):
        assert r[key] == str(cache / "models--acme--tiny" / "snapshots" / commit / path)
        assert_cached(cache, "acme/tiny", commit, path, TINY[path])
    assert r["again"] == r["big"]
    # HF_TOKEN was set and went to the hub ...
    assert all(x["authorization"] for x in records if x["server"] == "hub"), records
    # ... and never to the CDN, which served both LFS files once each.
    cdn = cdn_records(records)
    assert cdn and not any(x["authorization"] for x in cdn), cdn
    assert sorted((x["method"], x["path"], x["status"]) for x in cdn) == sorted(
        ("GET", f"/blobs/{sha256(TINY[p])}", 200) for p in ("model.bin", "onnx/model.onnx"))
    resolves = [x for x in records if x["server"] == "hub" and "/resolve/" in x["path"]]
    assert {(x["method"], x["status"]) for x in resolves} == {("HEAD", 200), ("HEAD", 302), ("GET", 200)}


def test_snapshot_download_whole_and_allow_patterns(world, tmp_path):
    mark = world.mark()
    r = client(world, tmp_path / "all", """
        R["folder"] = snapshot_download("acme/tiny")
    """)
    commit = commit_of(world, "acme/tiny")
    folder = Path(r["folder"])
    assert folder == tmp_path / "all" / "models--acme--tiny" / "snapshots" / commit
    got = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert got == TINY
    for path, data in TINY.items():
        assert_cached(tmp_path / "all", "acme/tiny", commit, path, data)
    assert not any(x["authorization"] for x in world.records(mark))  # no token: none sent

    r = client(world, tmp_path / "some", """
        R["folder"] = snapshot_download("acme/tiny", allow_patterns=["*.json"])
    """)
    folder = Path(r["folder"])
    got = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert got == ["config.json", "onnx/config.json", "tokenizer.json"]


def test_list_repo_tree_and_model_info(world, tmp_path):
    r = client(world, tmp_path / "cache", """
        api = HfApi()
        def entry(x):
            if hasattr(x, "blob_id"):
                return {"path": x.path, "size": x.size, "blob_id": x.blob_id,
                        "lfs": None if x.lfs is None else {"sha256": x.lfs.sha256, "size": x.lfs.size,
                                                           "pointer_size": x.lfs.pointer_size}}
            return {"path": x.path, "dir": True, "tree_id": x.tree_id}
        R["recursive"] = [entry(x) for x in api.list_repo_tree("acme/tiny", recursive=True)]
        R["top"] = [entry(x) for x in api.list_repo_tree("acme/tiny")]
        R["onnx"] = [entry(x) for x in api.list_repo_tree("acme/tiny", path_in_repo="onnx", expand=True)]
        info = api.model_info("acme/tiny")
        R["info"] = {"id": info.id, "sha": info.sha, "private": info.private, "gated": info.gated,
                     "siblings": [s.rfilename for s in info.siblings], "tags": info.tags,
                     "last_modified": str(info.last_modified)}
        meta = api.model_info("acme/tiny", files_metadata=True, revision=info.sha)
        R["meta"] = {s.rfilename: [s.size, s.blob_id, s.lfs.sha256 if s.lfs else None] for s in meta.siblings}
        R["expand"] = api.model_info("acme/tiny", expand=["sha", "downloads"]).sha
        R["gated"] = api.model_info("acme/gated").gated
        R["exists"] = [api.repo_exists("acme/tiny"), api.repo_exists("acme/nope"),
                       api.file_exists("acme/tiny", "onnx/model.onnx"), api.file_exists("acme/tiny", "nope.txt")]
    """)
    commit = commit_of(world, "acme/tiny")
    files = {e["path"]: e for e in r["recursive"] if not e.get("dir")}
    assert set(files) == set(TINY)
    assert [e["path"] for e in r["recursive"] if e.get("dir")] == ["onnx"]
    for path, data in TINY.items():
        e = files[path]
        assert e["size"] == len(data), path
        if lfs(path, data):
            pointer = (f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256(data)}\n"
                       f"size {len(data)}\n").encode()
            assert e["lfs"] == {"sha256": sha256(data), "size": len(data), "pointer_size": len(pointer)}
            assert e["blob_id"] == git_oid(pointer)
        else:
            assert e["lfs"] is None and e["blob_id"] == git_oid(data), path
    assert sorted(e["path"] for e in r["top"]) == ["README.md", "config.json", "model.bin", "onnx",
                                                   "tokenizer.json"]
    assert sorted(e["path"] for e in r["onnx"]) == ["onnx/config.json", "onnx/model.onnx"]
    info = r["info"]
    assert info["id"] == "acme/tiny" and info["sha"] == commit
    assert info["private"] is False and info["gated"] is False and info["tags"] == []
    assert sorted(info["siblings"]) == sorted(TINY)
    assert info["last_modified"].startswith("20")
    assert r["meta"]["model.bin"] == [len(BIG), files["model.bin"]["blob_id"], sha256(BIG)]
    assert r["meta"]["config.json"] == [len(TINY["config.json"]), git_oid(TINY["config.json"]), None]
    assert r["expand"] == commit
    assert r["gated"] == "manual"
    assert r["exists"] == [True, False, True, False]


def test_tree_pagination_and_plain_http(world):
    """What HfApi never asks for but the protocol has: Link pagination, Range, HEAD, 404s."""
    url = f"{world.hub}/api/models/acme/tiny/tree/main?recursive=true&limit=3"
    paths = []
    while url:
        with urllib.request.urlopen(url) as r:
            paths += [e["path"] for e in json.load(r)]
            link = r.headers.get("Link")
        url = link[1:link.index(">")] if link else None
    assert sorted(paths) == sorted(list(TINY) + ["onnx"])

    req = urllib.request.Request(f"{world.hub}/acme/tiny/resolve/main/config.json", headers={"Range": "bytes=2-6"})
    with urllib.request.urlopen(req) as r:
        assert r.status == 206 and r.read() == TINY["config.json"][2:7]
        assert r.headers["Content-Range"] == f"bytes 2-6/{len(TINY['config.json'])}"

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)

    def status(url, method="GET", headers=None):
        req = urllib.request.Request(url, method=method, headers=headers or {})
        try:
            with opener.open(req) as r:
                return r.status, dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers)

    code, headers = status(f"{world.hub}/acme/tiny/resolve/main/model.bin", "HEAD")
    assert code == 302 and headers["Location"].startswith(f"{world.cdn}/blobs/{sha256(BIG)}?")
    assert (headers["X-Linked-Etag"], headers["X-Linked-Size"]) == (f'"{sha256(BIG)}"', str(len(BIG)))
    code, headers = status(f"{world.cdn}/blobs/{sha256(BIG)}", "HEAD")
    assert (code, headers["Content-Length"], headers["ETag"]) == (200, str(len(BIG)), f'"{sha256(BIG)}"')
    code, _ = status(f"{world.cdn}/blobs/{sha256(BIG)}", headers={"Authorization": f"Bearer {TOKEN}"})
    assert code == 403
    assert status(f"{world.cdn}/blobs/{'0' * 64}")[0] == 404
    code, headers = status(f"{world.hub}/api/spaces/acme/tiny")
    assert code == 404 and "X-Error-Code" not in headers
    code, headers = status(f"{world.hub}/acme/tiny/resolve/refs%2Fpr%2F1/config.json")
    assert (code, headers["X-Error-Code"]) == (404, "RevisionNotFound")


def test_gated_repo(world, tmp_path):
    code = """
        R["info"] = err(lambda: HfApi().model_info("acme/gated").gated)
        R["tree"] = err(lambda: len(list(HfApi().list_repo_tree("acme/gated"))))
        R["file"] = err(hf_hub_download, "acme/gated", "config.json")
        R["weights"] = err(lambda: Path(hf_hub_download("acme/gated", "model.safetensors")).stat().st_size)
    """
    anonymous = client(world, tmp_path / "anon", code)
    assert anonymous["info"] == {"ok": "manual"} and anonymous["tree"] == {"ok": 2}
    for key in ("file", "weights"):
        assert anonymous[key]["error"] == "GatedRepoError" and anonymous[key]["status"] == 401, anonymous[key]
    assert "Access to model acme/gated is restricted" in anonymous["file"]["message"]

    wrong = client(world, tmp_path / "wrong", code, token="hf_not_the_token")
    assert wrong["file"]["error"] == "GatedRepoError" and wrong["file"]["status"] == 403, wrong["file"]

    mark = world.mark()
    authed = client(world, tmp_path / "authed", code, token=TOKEN)
    assert Path(authed["file"]["ok"]).read_bytes() == REPOS["acme/gated"][0]["config.json"]
    assert authed["weights"] == {"ok": 2048}
    cdn = cdn_records(world.records(mark))
    assert cdn and not any(x["authorization"] for x in cdn)


def test_errors(world, tmp_path):
    r = client(world, tmp_path / "cache", """
        api = HfApi()
        R["missing_repo"] = err(hf_hub_download, "acme/nope", "config.json")
        R["missing_repo_info"] = err(api.model_info, "acme/nope")
        R["missing_repo_snapshot"] = err(snapshot_download, "acme/nope")
        R["private"] = err(hf_hub_download, "acme/private", "config.json")
        R["private_info"] = err(api.model_info, "acme/private")
        R["private_tree"] = err(lambda: list(api.list_repo_tree("acme/private")))
        R["missing_file"] = err(hf_hub_download, "acme/tiny", "nope.txt")
        R["bad_revision"] = err(hf_hub_download, "acme/tiny", "config.json", revision="v9")
        R["pr_revision"] = err(hf_hub_download, "acme/tiny", "config.json", revision="refs/pr/1")
        R["bad_revision_info"] = err(api.model_info, "acme/tiny", revision="v9")
        R["bad_revision_tree"] = err(lambda: list(api.list_repo_tree("acme/tiny", revision="v9")))
        R["bad_revision_snapshot"] = err(snapshot_download, "acme/tiny", revision="v9")
        R["private_with_token"] = err(lambda: Path(hf_hub_download("acme/private", "config.json", token=%r)).read_text())
        R["private_info_with_token"] = err(lambda: api.model_info("acme/private", token=%r).private)
    """ % (TOKEN, TOKEN))
    for key in ("missing_repo", "missing_repo_info", "missing_repo_snapshot"):
        assert r[key]["error"] == "RepositoryNotFoundError" and r[key]["status"] == 404, (key, r[key])
    for key in ("private", "private_info", "private_tree"):
        assert r[key]["error"] == "RepositoryNotFoundError" and r[key]["status"] == 401, (key, r[key])
    assert r["missing_file"]["error"] == "RemoteEntryNotFoundError", r["missing_file"]
    assert "EntryNotFoundError" in r["missing_file"]["mro"] and r["missing_file"]["status"] == 404
    for key in ("bad_revision", "pr_revision", "bad_revision_info", "bad_revision_tree", "bad_revision_snapshot"):
        assert r[key]["error"] == "RevisionNotFoundError" and r[key]["status"] == 404, (key, r[key])
    assert r["private_with_token"] == {"ok": '{"private": true}\n'}
    assert r["private_info_with_token"] == {"ok": True}
    # huggingface_hub remembers a missing file under .no_exist/<commit>/, from X-Repo-Commit.
    commit = commit_of(world, "acme/tiny")
    assert (tmp_path / "cache" / "models--acme--tiny" / ".no_exist" / commit / "nope.txt").exists()


def test_resume_after_cut(world, tmp_path):
    """A GET cut short is retried. huggingface_hub reads the body in 10 MiB chunks
    (constants.DOWNLOAD_CHUNK_SIZE) and counts only whole chunks as downloaded: a cut after
    10 MiB + 1000 bytes resumes with `Range: bytes=10485760-`; a cut within the first 10 MiB
    starts again from byte 0, without a Range."""
    files = REPOS["acme/resume"][0]
    mark = world.mark()
    r = client(world, tmp_path / "cache", """
        R["big"] = hf_hub_download("acme/resume", "big.gguf")
        R["small"] = hf_hub_download("acme/resume", "small.gguf")
    """)
    assert Path(r["big"]).read_bytes() == files["big.gguf"]
    assert Path(r["small"]).read_bytes() == files["small.gguf"]
    gets = [x for x in cdn_records(world.records(mark)) if x["method"] == "GET"]
    big = [(x["range"], x["status"]) for x in gets if x["path"] == f"/blobs/{sha256(BIG)}"]
    assert big == [(None, 200), (f"bytes={10 * MiB}-", 206)], gets
    small = [(x["range"], x["status"]) for x in gets if x["path"] == f"/blobs/{sha256(files['small.gguf'])}"]
    assert small == [(None, 200), (None, 200)], gets


def test_corrupt_bytes_are_not_caught_by_huggingface_hub(world, tmp_path):
    """The stand-in sends flipped bytes under the true hashes; huggingface_hub 2.4.0 checks only the
    length over plain HTTP, so it caches the wrong bytes. (A client of our own must check.)"""
    files = REPOS["acme/corrupt"][0]
    r = client(world, tmp_path / "cache", """
        R["bin"] = hf_hub_download("acme/corrupt", "model.bin")
        R["txt"] = hf_hub_download("acme/corrupt", "notes.txt")
        R["lfs_sha"] = [x.lfs.sha256 for x in HfApi().list_repo_tree("acme/corrupt") if x.path == "model.bin"][0]
    """)
    for key, path in (("bin", "model.bin"), ("txt", "notes.txt")):
        got = Path(r[key]).read_bytes()
        assert len(got) == len(files[path]) and got != files[path], path
        assert Path(r[key]).resolve().name == etag(path, files[path])  # named by the true hash
    assert r["lfs_sha"] == sha256(files["model.bin"]) != sha256(Path(r["bin"]).read_bytes())


def test_local_files_only_after_the_stand_in_stops(tmp_path):
    repos = build_repos(tmp_path)
    server = Server(repos, tmp_path / "log.jsonl", token=None)
    cache = tmp_path / "cache"
    try:
        online = client(server, cache, """
            R["file"] = hf_hub_download("acme/tiny", "model.bin")
            R["snapshot"] = snapshot_download("acme/tiny", allow_patterns=["*.json"])
        """)
    finally:
        rc, err = server.stop()
    assert rc == 0, err
    offline = client(server, cache, """
        R["file"] = err(hf_hub_download, "acme/tiny", "model.bin", local_files_only=True)
        R["online"] = err(hf_hub_download, "acme/tiny", "model.bin")  # the HEAD fails: the cache answers
        R["snapshot"] = err(snapshot_download, "acme/tiny", allow_patterns=["*.json"], local_files_only=True)
        R["uncached"] = err(hf_hub_download, "acme/tiny", "README.md", local_files_only=True)
    """)
    assert offline["file"] == {"ok": online["file"]} and offline["online"] == {"ok": online["file"]}
    assert Path(online["file"]).read_bytes() == BIG
    assert offline["snapshot"] == {"ok": online["snapshot"]}
    assert offline["uncached"]["error"] == "LocalEntryNotFoundError"


def test_in_process_interface(tmp_path):
    repos = build_repos(tmp_path)
    s = standin.start(str(repos), token=TOKEN, log=str(tmp_path / "log.jsonl"))
    try:
        with urllib.request.urlopen(f"{s.hub_url}/api/models/acme/tiny") as r:
            assert json.load(r)["id"] == "acme/tiny"
        assert s.cdn_url.startswith("http://127.0.0.1:") and s.cdn_url != s.hub_url
    finally:
        s.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{s.hub_url}/api/models/acme/tiny", timeout=2)
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"server": "hub", "method": "GET", "path": "/api/models/acme/tiny",
                                    "range": None, "authorization": False, "status": 200}
