#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub's download protocol (Python 3 standard library only).

    python3 tests/hub/standin.py --repos DIR [--token TOKEN] [--log FILE]

starts two HTTP/1.1 servers on 127.0.0.1 with ports the OS picks, the *hub* and a *CDN*, prints
one line `{"hub": "http://127.0.0.1:PORT", "cdn": "http://127.0.0.1:PORT2"}` to stdout and serves
until SIGTERM or SIGINT. From Python: `from standin import start; s = start(DIR, token=None,
log=None)`, then `s.hub_url`, `s.cdn_url`, `s.stop()`.

Repos: `DIR/ORG/NAME/` is the model repo `ORG/NAME`; its files are the regular files under it
(symlinks followed, nothing copied), except the control file `DIR/ORG/NAME/.standin.json`:
    {"gated": true}                 resolve needs `Authorization: Bearer TOKEN` (401/403 GatedRepo);
                                    model info and tree stay readable
    {"private": true}               everything needs the token (401 RepoNotFound)
    {"corrupt": ["path", ...]}      those files' bytes are sent with some bytes flipped (same
                                    length; by the CDN for LFS files, by the hub for regular ones)
                                    while the headers announce the true hashes
    {"cut_after": {"path": N}}      the first GET of that file (from the CDN for LFS files, from
                                    the hub for regular ones) announces the full length, sends N
                                    bytes of body and closes the connection (a FIN, not a reset);
                                    later GETs are whole. Counted per server process.
The control file is read on every request.

Each repo has one commit, `main`: a sha1 of its sorted (path, git blob oid) list. A file is stored
"in LFS" when it is over 10 MiB or its name ends in .gguf, .bin, .onnx or .safetensors. Its git
oid is then that of its LFS pointer, as on the Hub.

Hub endpoints (model repos only):
    HEAD|GET /ORG/NAME/resolve/REV/PATH
        regular file: 200 (206 for a Range) with the bytes, ETag "<git oid>", X-Repo-Commit
        LFS file: 302 to {cdn}/blobs/<sha256>?repo=..&path=..&filename=.., X-Linked-Etag
        "<sha256>", X-Linked-Size, ETag "<git oid of the pointer>", X-Repo-Commit
    GET /api/models/ORG/NAME[/revision/REV][?blobs=true][&expand=..]      model info
    GET /api/models/ORG/NAME/tree/REV[/PATH][?recursive=true][&expand=true][&limit=N&cursor=..]
    GET /api/agent-harnesses        an empty registry (huggingface_hub asks when telemetry is on)
Errors carry X-Error-Code / X-Error-Message headers and a JSON body {"error": "..."}:
missing repo 404 RepoNotFound, private repo without the token 401 RepoNotFound, gated repo's file
without a token 401 GatedRepo (403 GatedRepo with a wrong one), unknown revision 404
RevisionNotFound, missing file 404 EntryNotFound (with X-Repo-Commit), anything else 404.

CDN: HEAD|GET /blobs/<sha256> serves the bytes (200, or 206 for a Range) with ETag "<sha256>";
any request carrying an Authorization header is refused with 403.

Log (--log FILE): one JSON line per request, flushed:
    {"server": "hub"|"cdn", "method", "path" (without the query), "range": header or null,
     "authorization": bool, "status"}
"""

import argparse
import hashlib
import json
import os
import signal
import socket
import stat
import sys
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

LFS_THRESHOLD = 10 * 1024 * 1024
LFS_SUFFIXES = (".gguf", ".bin", ".onnx", ".safetensors")
CONTROL_FILE = ".standin.json"
CHUNK = 1 << 20
CORRUPT_STRIDE = 1 << 16  # a corrupted file has every byte at a multiple of this flipped, and its last


def git_blob_oid(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256, size):
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def is_lfs(path, size):
    return size > LFS_THRESHOLD or path.lower().endswith(LFS_SUFFIXES)


def iso(ts):
    dt = datetime.fromtimestamp(ts, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


# Entries of a tree page when the client names no `limit`.
DEFAULT_TREE_PAGE = 5

class Hashes:
    """sha256 and git blob sha1 of files, computed once per (real path, size, mtime)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._done = {}
        self._busy = {}

    def get(self, abspath, st, lfs):
        key = (os.path.realpath(abspath), st.st_size, st.st_mtime_ns, lfs)
        with self._lock:
            if key in self._done:
                return self._done[key]
            lock = self._busy.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._done:
                    return self._done[key]
            sha256 = hashlib.sha256()
            sha1 = None if lfs else hashlib.sha1(b"blob %d\0" % st.st_size)
            with open(abspath, "rb") as f:
                while True:
                    chunk = f.read(CHUNK)
                    if not chunk:
                        break
                    sha256.update(chunk)
                    if sha1 is not None:
                        sha1.update(chunk)
            result = (sha256.hexdigest(), sha1.hexdigest() if sha1 is not None else None)
            with self._lock:
                self._done[key] = result
                self._busy.pop(key, None)
            return result


class FileEntry:
    __slots__ = ("path", "abspath", "size", "mtime", "lfs", "sha256", "oid", "pointer_size")

    def tree_json(self):
        out = {"type": "file", "oid": self.oid, "size": self.size, "path": self.path}
        if self.lfs:
            out["lfs"] = {"oid": self.sha256, "size": self.size, "pointerSize": self.pointer_size}
        return out


class Repo:
    """A snapshot of one repo directory, taken for one request."""

    def __init__(self, repos_dir, org, name, hashes):
        self.org, self.name = org, name
        self.id = f"{org}/{name}"
        self.root = os.path.join(repos_dir, org, name)
        try:
            with open(os.path.join(self.root, CONTROL_FILE)) as f:
                self.control = json.load(f)
        except FileNotFoundError:
            self.control = {}
        self.files = {}
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=True):
            dirnames.sort()
            for fn in sorted(filenames):
                abspath = os.path.join(dirpath, fn)
                rel = os.path.relpath(abspath, self.root).replace(os.sep, "/")
                if rel == CONTROL_FILE:
                    continue
                try:
                    st = os.stat(abspath)
                except OSError:
                    continue  # a dangling link
                if not stat.S_ISREG(st.st_mode):
                    continue
                e = FileEntry()
                e.path, e.abspath, e.size, e.mtime = rel, abspath, st.st_size, st.st_mtime
                e.lfs = is_lfs(rel, st.st_size)
                e.sha256, oid = hashes.get(abspath, st, e.lfs)
                if e.lfs:
                    pointer = lfs_pointer(e.sha256, e.size)
                    e.oid, e.pointer_size = git_blob_oid(pointer), len(pointer)
                else:
                    e.oid, e.pointer_size = oid, None
                self.files[rel] = e
        listing = "".join(f"{p}\0{e.oid}\n" for p, e in sorted(self.files.items()))
        self.commit = hashlib.sha1(f"standin commit {self.id}\n{listing}".encode()).hexdigest()
        self.dirs = set()
        for p in self.files:
            parts = p.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                self.dirs.add("/".join(parts[:i]))

    @property
    def gated(self):
        return bool(self.control.get("gated"))

    @property
    def private(self):
        return bool(self.control.get("private"))

    def corrupt(self, path):
        return path in (self.control.get("corrupt") or [])

    def cut_after(self, path):
        n = (self.control.get("cut_after") or {}).get(path)
        return int(n) if n is not None else None

    def dir_oid(self, d):
        prefix = d + "/"
        inner = "".join(f"{p}\0{e.oid}\n" for p, e in sorted(self.files.items()) if p.startswith(prefix))
        return hashlib.sha1(f"tree {d}\n{inner}".encode()).hexdigest()

    def last_modified(self):
        return max((e.mtime for e in self.files.values()), default=os.stat(self.root).st_mtime)

    def created(self):
        return min((e.mtime for e in self.files.values()), default=os.stat(self.root).st_mtime)


def parse_range(header, size):
    """None: the whole file; (start, end) inclusive; or "bad" when unsatisfiable."""
    if not header:
        return None
    header = header.strip()
    if not header.lower().startswith("bytes=") or "," in header:
        return None
    spec = header[6:].strip()
    first, sep, last = spec.partition("-")
    if not sep:
        return None
    try:
        if first.strip() == "":
            n = int(last)
            if n <= 0:
                return "bad"
            return (max(size - n, 0), size - 1) if size else "bad"
        start = int(first)
        end = int(last) if last.strip() else size - 1
    except ValueError:
        return None
    if start >= size or end < start:
        return "bad"
    return (start, min(end, size - 1))


def flip(chunk, pos, size):
    b = bytearray(chunk)
    o = -(-pos // CORRUPT_STRIDE) * CORRUPT_STRIDE
    while o < pos + len(b):
        b[o - pos] ^= 0xFF
        o += CORRUPT_STRIDE
    if pos <= size - 1 < pos + len(b):
        b[size - 1 - pos] ^= 0xFF
    return bytes(b)


class State:
    def __init__(self, repos_dir, token, log):
        self.repos_dir = os.path.abspath(repos_dir)
        self.token = token
        self.hashes = Hashes()
        self.blob_index = {}  # sha256 -> (org, name, path)
        self.cuts_done = set()
        self.lock = threading.Lock()
        self.log_file = open(log, "a", encoding="utf-8") if log else None
        self.hub_url = self.cdn_url = None

    def log(self, record):
        if self.log_file is None:
            return
        line = json.dumps(record) + "\n"
        with self.lock:
            self.log_file.write(line)
            self.log_file.flush()

    def take_cut(self, server, repo, path):
        """The N of cut_after for this GET, the first time only."""
        n = repo.cut_after(path)
        if n is None:
            return None
        key = (server, repo.id, path)
        with self.lock:
            if key in self.cuts_done:
                return None
            self.cuts_done.add(key)
        return n

    def load_repo(self, org, name):
        for part in (org, name):
            if not part or part.startswith(".") or "/" in part or "\\" in part or "\0" in part:
                return None
        if not os.path.isdir(os.path.join(self.repos_dir, org, name)):
            return None
        repo = Repo(self.repos_dir, org, name, self.hashes)
        with self.lock:
            for e in repo.files.values():
                if e.lfs:
                    self.blob_index.setdefault(e.sha256, (org, name, e.path))
        return repo

    def all_repos(self):
        try:
            orgs = sorted(os.listdir(self.repos_dir))
        except OSError:
            return
        for org in orgs:
            try:
                names = sorted(os.listdir(os.path.join(self.repos_dir, org)))
            except OSError:
                continue
            for name in names:
                repo = self.load_repo(org, name)
                if repo is not None:
                    yield repo


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "standin"
    timeout = 120
    kind = "?"  # "hub" or "cdn"

    def log_message(self, format, *args):
        pass

    def version_string(self):
        return self.server_version

    def setup(self):
        super().setup()
        with self.server.conns_lock:
            self.server.conns.add(self.connection)

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        with self.server.conns_lock:
            self.server.conns.discard(self.connection)

    @property
    def state(self):
        return self.server.state

    def send_response(self, code, message=None):
        self._status = code
        super().send_response(code, message)

    def do_GET(self):
        self._dispatch()

    def do_HEAD(self):
        self._dispatch()

    def _other(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self._dispatch(unsupported=True)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _other

    def _dispatch(self, unsupported=False):
        self._status = None
        split = urlsplit(self.path)
        self.raw_path, self.query = split.path, parse_qs(split.query, keep_blank_values=True)
        self.is_head = self.command == "HEAD"
        try:
            if unsupported:
                self.send_error_json(404, "Not Found")
            else:
                self.route()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug here: say so, keep serving
            self.close_connection = True
            if self._status is None:
                try:
                    self.send_error_json(500, f"stand-in error: {type(exc).__name__}: {exc}")
                except OSError:
                    pass
            print(f"standin: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        finally:
            self.state.log({
                "server": self.kind,
                "method": self.command,
                "path": self.raw_path,
                "range": self.headers.get("Range"),
                "authorization": self.headers.get("Authorization") is not None,
                "status": self._status,
            })

    # --- responses -------------------------------------------------------------------------

    def send_bytes(self, status, body, headers=(), content_type="application/json; charset=utf-8"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if not self.is_head:
            self.wfile.write(body)

    def send_json(self, status, obj, headers=()):
        self.send_bytes(status, json.dumps(obj).encode(), headers)

    def send_error_json(self, status, message, code=None, headers=()):
        hdrs = list(headers)
        if code is not None:
            hdrs.append(("X-Error-Code", code))
        hdrs.append(("X-Error-Message", message))
        self.send_json(status, {"error": message}, hdrs)

    def send_file(self, entry, headers, corrupt=False, cut_after=None):
        size = entry.size
        rng = parse_range(self.headers.get("Range"), size)
        if rng == "bad":
            self.send_bytes(416, b"", [("Content-Range", f"bytes */{size}")] + list(headers),
                            content_type="text/plain")
            return
        start, end = rng if rng is not None else (0, size - 1)
        length = end - start + 1 if size else 0
        self.send_response(206 if rng is not None else 200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        if rng is not None:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.is_head:
            return
        todo = length if cut_after is None else min(length, cut_after)
        pos = start
        with open(entry.abspath, "rb") as f:
            f.seek(start)
            while todo > 0:
                chunk = f.read(min(CHUNK, todo))
                if not chunk:  # the file shrank under us: the length announced is now a lie
                    cut_after = 0
                    break
                if corrupt:
                    chunk = flip(chunk, pos, size)
                self.wfile.write(chunk)
                pos += len(chunk)
                todo -= len(chunk)
        if cut_after is not None and cut_after < length:
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # --- auth ------------------------------------------------------------------------------

    def bearer(self):
        auth = self.headers.get("Authorization")
        if auth is None:
            return None
        scheme, _, value = auth.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else ""

    def authorized(self):
        token = self.bearer()
        return self.state.token is not None and token is not None and token == self.state.token


class HubHandler(Handler):
    kind = "hub"

    def route(self):
        segs = self.raw_path.split("/")[1:]
        if len(segs) >= 4 and segs[0] == "api" and segs[1] == "models":
            org, name, rest = unquote(segs[2]), unquote(segs[3]), segs[4:]
            if rest in ([], [""]):
                return self.model_info(org, name, "main", explicit=False)
            if rest[0] == "revision" and len(rest) >= 2 and rest[1]:
                return self.model_info(org, name, unquote("/".join(rest[1:])), explicit=True)
            if rest[0] == "tree" and len(rest) >= 2 and rest[1]:
                path = unquote("/".join(rest[2:])).strip("/")
                return self.tree(org, name, unquote(rest[1]), path)
        elif segs == ["api", "agent-harnesses"]:
            # huggingface_hub >= 2.x fetches this registry once a day when telemetry is on
            # (utils/_detect_agent.py); an empty one detects no agent.
            return self.send_json(200, {"standardEnvVars": [], "harnesses": {}})
        elif len(segs) >= 5 and segs[2] == "resolve" and segs[0] != "api":
            return self.resolve(unquote(segs[0]), unquote(segs[1]), unquote(segs[3]), unquote("/".join(segs[4:])))
        self.send_error_json(404, "Sorry, we can't find the page you are looking for.")

    def open_repo(self, org, name, for_files):
        """The repo, or None after answering as the Hub does when it is missing or closed."""
        repo = self.state.load_repo(org, name)
        if repo is None:
            self.send_error_json(404, "Repository not found", "RepoNotFound")
            return None
        if repo.private and not self.authorized():
            message = "Invalid username or password." if self.bearer() is None else "Repository not found"
            self.send_error_json(401, message, "RepoNotFound")
            return None
        if for_files and repo.gated and not self.authorized():
            if self.bearer() is None:
                self.send_error_json(
                    401,
                    f"Access to model {repo.id} is restricted. You must have access to it and be "
                    "authenticated to access it. Please log in.",
                    "GatedRepo")
            else:
                self.send_error_json(
                    403,
                    f"Access to model {repo.id} is restricted and you are not in the authorized list. "
                    f"Visit {self.state.hub_url}/{repo.id} to ask for access.",
                    "GatedRepo")
            return None
        return repo

    def check_revision(self, repo, revision):
        if revision in ("main", repo.commit):
            return True
        self.send_error_json(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return False

    def resolve(self, org, name, revision, path):
        repo = self.open_repo(org, name, for_files=True)
        if repo is None or not self.check_revision(repo, revision):
            return
        entry = repo.files.get(path)
        if entry is None:
            self.send_error_json(404, "Entry not found", "EntryNotFound", [("X-Repo-Commit", repo.commit)])
            return
        if entry.lfs:
            query = urlencode({"repo": repo.id, "path": path, "filename": path.rsplit("/", 1)[-1]})
            location = f"{self.state.cdn_url}/blobs/{entry.sha256}?{query}"
            self.send_bytes(302, f"Found. Redirecting to {location}".encode(), [
                ("Location", location),
                ("ETag", f'"{entry.oid}"'),
                ("X-Linked-Etag", f'"{entry.sha256}"'),
                ("X-Linked-Size", str(entry.size)),
                ("X-Repo-Commit", repo.commit),
            ], content_type="text/plain; charset=utf-8")
            return
        cut = self.state.take_cut("hub", repo, path) if not self.is_head else None
        self.send_file(entry, [("ETag", f'"{entry.oid}"'), ("X-Repo-Commit", repo.commit)],
                       corrupt=repo.corrupt(path), cut_after=cut)

    def model_info(self, org, name, revision, explicit):
        repo = self.open_repo(org, name, for_files=False)
        if repo is None or not self.check_revision(repo, revision):
            return
        blobs = self.flag("blobs")
        siblings = []
        for p, e in sorted(repo.files.items()):
            s = {"rfilename": p}
            if blobs:
                s["blobId"] = e.oid
                s["size"] = e.size
                if e.lfs:
                    s["lfs"] = {"sha256": e.sha256, "size": e.size, "pointerSize": e.pointer_size}
            siblings.append(s)
        info = {
            "_id": hashlib.sha1(repo.id.encode()).hexdigest()[:24],
            "id": repo.id,
            "modelId": repo.id,
            "author": repo.org,
            "sha": repo.commit,
            "lastModified": iso(repo.last_modified()),
            "createdAt": iso(repo.created()),
            "private": repo.private,
            "gated": "manual" if repo.gated else False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": siblings,
            "spaces": [],
            "usedStorage": sum(e.size for e in repo.files.values()),
        }
        expand = self.query.get("expand", []) + self.query.get("expand[]", [])
        if expand:
            info = {k: v for k, v in info.items() if k in ("_id", "id") or k in expand}
        self.send_json(200, info)

    def tree(self, org, name, revision, path):
        repo = self.open_repo(org, name, for_files=False)
        if repo is None or not self.check_revision(repo, revision):
            return
        if path and path not in repo.dirs:
            self.send_error_json(404, f"Entry not found: {path}", "EntryNotFound",
                                 [("X-Repo-Commit", repo.commit)])
            return
        recursive = self.flag("recursive")
        prefix = path + "/" if path else ""

        def wanted(p):
            if not p.startswith(prefix):
                return False
            return recursive or "/" not in p[len(prefix):]

        dirs = [{"type": "directory", "oid": repo.dir_oid(d), "size": 0, "path": d}
                for d in sorted(repo.dirs) if wanted(d)]
        files = [e.tree_json() for p, e in sorted(repo.files.items()) if wanted(p)]
        entries = dirs + files
        if self.flag("expand"):
            commit = {"id": repo.commit, "title": "Stand-in commit", "date": iso(repo.last_modified())}
            for item in entries:
                item["lastCommit"] = dict(commit)
                if item["type"] == "file":
                    item["securityFileStatus"] = {
                        "status": "safe", "avScan": {"virusFound": False, "virusNames": None},
                        "pickleImportScan": None}
        headers = []
        # The real Hub pages a tree whether or not a client asks (1,000 entries); the stand-in
        # pages by 5, so that every client's pagination (ingle's, huggingface_hub's) is used.
        limit = self.query.get("limit", [None])[0] or DEFAULT_TREE_PAGE
        if limit:
            try:
                limit = max(int(limit), 1)
                offset = int(self.query.get("cursor", ["0"])[0] or 0)
            except ValueError:
                self.send_error_json(400, "Invalid limit or cursor")
                return
            page = entries[offset:offset + limit]
            if offset + limit < len(entries):
                query = {k: v[-1] for k, v in self.query.items()}
                query["cursor"] = str(offset + limit)
                nxt = f"{self.state.hub_url}{self.raw_path}?{urlencode(query)}"
                headers.append(("Link", f'<{nxt}>; rel="next"'))
            entries = page
        self.send_json(200, entries, headers)

    def flag(self, name):
        values = self.query.get(name)
        return bool(values) and values[-1].strip().lower() in ("1", "true", "yes")


class CdnHandler(Handler):
    kind = "cdn"

    def route(self):
        segs = self.raw_path.split("/")[1:]
        if self.headers.get("Authorization") is not None:
            self.send_bytes(
                403,
                b"Refused: a request to the CDN carried an Authorization header; the Hub's token "
                b"must never leave the Hub.",
                [("X-Error-Message", "Authorization header sent to the CDN")],
                content_type="text/plain; charset=utf-8")
            return
        if len(segs) != 2 or segs[0] != "blobs" or len(segs[1]) != 64:
            self.send_bytes(404, b"Not Found", content_type="text/plain; charset=utf-8")
            return
        sha = segs[1].lower()
        found = self.find(sha)
        if found is None:
            self.send_bytes(404, b"Not Found", content_type="text/plain; charset=utf-8")
            return
        repo, entry = found
        headers = [("ETag", f'"{sha}"')]
        filename = self.query.get("filename", [None])[-1]
        if filename:
            headers.append(("Content-Disposition",
                            f"inline; filename*=UTF-8''{quote(filename)}; filename=\"{filename}\";"))
        cut = self.state.take_cut("cdn", repo, entry.path) if not self.is_head else None
        self.send_file(entry, headers, corrupt=repo.corrupt(entry.path), cut_after=cut)

    def find(self, sha):
        """(repo, entry) holding the blob: the repo and path the hub's redirect named, else any."""
        repo_id = self.query.get("repo", [None])[-1]
        path = self.query.get("path", [None])[-1]
        if repo_id and path and repo_id.count("/") == 1:
            repo = self.state.load_repo(*repo_id.split("/"))
            if repo is not None:
                e = repo.files.get(path)
                if e is not None and e.lfs and e.sha256 == sha:
                    return repo, e
        with self.state.lock:
            known = self.state.blob_index.get(sha)
        candidates = [known] if known else []
        for org, name, p in candidates:
            repo = self.state.load_repo(org, name)
            e = repo.files.get(p) if repo is not None else None
            if e is not None and e.lfs and e.sha256 == sha:
                return repo, e
        for repo in self.state.all_repos():  # hashes every repo's files once, then it is cached
            for e in repo.files.values():
                if e.lfs and e.sha256 == sha:
                    return repo, e
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, handler, state):
        super().__init__(("127.0.0.1", 0), handler)
        self.state = state
        self.conns = set()
        self.conns_lock = threading.Lock()

    def close_connections(self):
        with self.conns_lock:
            conns = list(self.conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class StandIn:
    """A running stand-in: `.hub_url`, `.cdn_url`, `.stop()`."""

    def __init__(self, repos_dir, token=None, log=None):
        self.state = State(repos_dir, token, log)
        self._cdn = _Server(CdnHandler, self.state)
        self._hub = _Server(HubHandler, self.state)
        self.cdn_url = f"http://127.0.0.1:{self._cdn.server_address[1]}"
        self.hub_url = f"http://127.0.0.1:{self._hub.server_address[1]}"
        self.state.cdn_url, self.state.hub_url = self.cdn_url, self.hub_url
        self._threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.2},
                                          name=f"standin-{n}", daemon=True)
                         for n, s in (("hub", self._hub), ("cdn", self._cdn))]
        for t in self._threads:
            t.start()
        self._stopped = False

    def stop(self):
        if self._stopped:
            return
        self._stopped = True
        for s in (self._hub, self._cdn):
            s.shutdown()
            s.server_close()
            s.close_connections()
        for t in self._threads:
            t.join(timeout=5)
        if self.state.log_file is not None:
            with self.state.lock:
                self.state.log_file.close()
                self.state.log_file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start(repos_dir, token=None, log=None):
    return StandIn(repos_dir, token=token, log=log)


def main(argv=None):
    ap = argparse.ArgumentParser(description="A local stand-in for the Hugging Face Hub's download protocol.")
    ap.add_argument("--repos", required=True, help="DIR: DIR/ORG/NAME/ is the repo ORG/NAME")
    ap.add_argument("--token", default=None, help="the token gated and private repos accept")
    ap.add_argument("--log", default=None, help="append one JSON line per request to this file")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.repos):
        ap.error(f"--repos {args.repos}: not a directory")
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    standin = start(args.repos, token=args.token, log=args.log)
    print(json.dumps({"hub": standin.hub_url, "cdn": standin.cdn_url}), flush=True)
    while not done.wait(0.5):
        pass
    standin.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
