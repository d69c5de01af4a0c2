//! Pulls by Hugging Face reference from a hub that lies: a scripted server on 127.0.0.1 answers
//! each repo's requests with one hostile answer (redirects in circles or to `file://`, an
//! `X-Linked-Size` that lies, an endless body, a tree of 100,000 files, tree pages in a circle,
//! `..` in a file name), and the cache is tampered with (a blob's bytes changed, a snapshot link
//! pointing out of the cache). Each pull fails with a clear error, or succeeds with the right
//! bytes, never a panic or a hang; nothing wrong is left in the cache, and the puller works on.
//! tests/tests/hub.rs has the well-behaved stand-in (tests/hub/standin.py).
//!
//! The Hub's settings are the process's environment: the tests of this binary take turns on
//! [`ENV`].

use ingle::pull::Puller;
use ingle::{ErrorCode, ErrorKind};
use ingle_tests::pull_server::{sample_bytes, sha256_hex};
use ingle_tests::{hub_env, TempDir};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static ENV: Mutex<()> = Mutex::new(());

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const OID: &str = "89abcdef0123456789abcdef0123456789abcdef";
const FILE: &str = "tiny-Q4_K_M.gguf";
const SHARDS: [&str; 2] = [
    "tiny-Q4_K_M-00001-of-00002.gguf",
    "tiny-Q4_K_M-00002-of-00002.gguf",
];

/// An answer of the scripted hub.
enum Reply {
    Json(u16, String, Vec<(&'static str, String)>),
    /// A status and headers, no body (a redirect; a HEAD's answer).
    Head(u16, Vec<(&'static str, String)>),
    Bytes(Vec<u8>),
    /// 200 and bytes until the client hangs up, without a length.
    Endless,
}

type Script = dyn Fn(&str, &str, &str) -> Reply + Send + Sync;

/// A hub on 127.0.0.1 answering `script(base, method, path)`; every request's path is logged.
struct Hub {
    base: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Hub {
    fn start(script: impl Fn(&str, &str, &str) -> Reply + Send + Sync + 'static) -> Hub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let (log, at) = (Arc::clone(&requests), base.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (script, log, at) = (Arc::clone(&script), Arc::clone(&log), at.clone());
                std::thread::spawn(move || {
                    let _ = answer(stream, &at, &*script, &log);
                });
            }
        });
        Hub { base, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

fn answer(
    stream: TcpStream,
    base: &str,
    script: &Script,
    log: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" {
            break;
        }
    }
    log.lock().unwrap().push(format!("{method} {path}"));
    let mut out = stream;
    let head =
        |out: &mut TcpStream, status: u16, headers: &[(&str, String)], len: Option<usize>| {
            let mut text = format!("HTTP/1.1 {status} X\r\nConnection: close\r\n");
            for (name, value) in headers {
                text.push_str(&format!("{name}: {value}\r\n"));
            }
            if let Some(len) = len {
                text.push_str(&format!("Content-Length: {len}\r\n"));
            }
            text.push_str("\r\n");
            out.write_all(text.as_bytes())
        };
    match script(base, &method, &path) {
        Reply::Json(status, body, headers) => {
            let mut headers = headers;
            headers.push(("Content-Type", "application/json".into()));
            head(&mut out, status, &headers, Some(body.len()))?;
            if method != "HEAD" {
                out.write_all(body.as_bytes())?;
            }
        }
        Reply::Head(status, headers) => head(&mut out, status, &headers, Some(0))?,
        Reply::Bytes(bytes) => {
            head(&mut out, 200, &[], Some(bytes.len()))?;
            if method != "HEAD" {
                out.write_all(&bytes)?;
            }
        }
        Reply::Endless => {
            head(&mut out, 200, &[], None)?;
            let chunk = vec![b'x'; 64 << 10];
            // Until the client hangs up (the write fails), or a minute: a client that reads
            // forever fails the test by its time, not by the machine's disk.
            let until = Instant::now() + Duration::from_secs(60);
            while Instant::now() < until {
                out.write_all(&chunk)?;
            }
        }
    }
    out.flush()
}

/// The repo's name from `/api/models/ORG/NAME/...` or `/ORG/NAME/resolve/...`.
fn repo_of(path: &str) -> String {
    let rest = path.strip_prefix("/api/models/").unwrap_or(&path[1..]);
    rest.split('/').take(2).collect::<Vec<_>>().join("/")
}

fn tree_entry(path: &str, size: usize, sha256: &str) -> String {
    format!(
        r#"{{"type":"file","path":"{path}","oid":"{OID}","size":{size},"lfs":{{"oid":"{sha256}","size":{size}}}}}"#
    )
}

/// The well-behaved answers, for one GGUF file of `bytes` in every repo, and `hostile`'s
/// answers where it has one.
fn hub(
    bytes: Vec<u8>,
    hostile: impl Fn(&str, &str, &str, &str) -> Option<Reply> + Send + Sync + 'static,
) -> Hub {
    let sha256 = sha256_hex(&bytes);
    Hub::start(move |base, method, path| {
        let repo = repo_of(path);
        if let Some(reply) = hostile(base, &repo, method, path) {
            return reply;
        }
        if path.starts_with("/api/models/") && path.contains("/revision/") {
            Reply::Json(
                200,
                format!(r#"{{"id":"{repo}","sha":"{COMMIT}"}}"#),
                vec![],
            )
        } else if path.starts_with("/api/models/") && path.contains("/tree/") {
            // A repo named `...split` holds a GGUF in two shards (of the same bytes).
            let entries: Vec<String> = if repo.ends_with("split") {
                SHARDS
                    .iter()
                    .map(|f| tree_entry(f, bytes.len(), &sha256))
                    .collect()
            } else {
                vec![tree_entry(FILE, bytes.len(), &sha256)]
            };
            Reply::Json(200, format!("[{}]", entries.join(",")), vec![])
        } else if path.contains("/resolve/") && method == "HEAD" {
            Reply::Head(
                302,
                vec![
                    ("Location", format!("{base}/cdn/{sha256}")),
                    ("X-Linked-Etag", format!("\"{sha256}\"")),
                    ("X-Linked-Size", bytes.len().to_string()),
                ],
            )
        } else if path.starts_with("/cdn/") {
            Reply::Bytes(bytes.clone())
        } else {
            Reply::Json(
                404,
                "{}".into(),
                vec![("X-Error-Code", "RepoNotFound".into())],
            )
        }
    })
}

fn pull(puller: &Puller, reference: &str) -> ingle::Result<ingle::pull::PullReport> {
    puller.pull(reference, &mut |_| true)
}

/// Every regular file and link under `dir`, as paths relative to it.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(entry.path());
            } else {
                out.push(
                    entry
                        .path()
                        .strip_prefix(dir)
                        .unwrap()
                        .display()
                        .to_string(),
                );
            }
        }
    }
    out.sort();
    out
}

/// The cache holds no blob or snapshot file of `repo` (a lock file may stay, as
/// huggingface_hub's do).
fn nothing_cached(cache: &Path, repo: &str) {
    let folder = cache.join(format!("models--{}", repo.replace('/', "--")));
    let left: Vec<_> = files_under(&folder)
        .into_iter()
        .filter(|f| f.starts_with("blobs") || f.starts_with("snapshots"))
        .collect();
    assert!(left.is_empty(), "{repo} left {left:?}");
}

#[test]
fn hostile_hub_answers_fail_clearly_and_leave_nothing() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("hub-hostile");
    let bytes = sample_bytes(300_000, 7);
    let size = bytes.len();
    let sha256 = sha256_hex(&bytes);
    let files = 100_000;
    let hub = hub(bytes.clone(), move |base, repo, method, path| {
        let endless = || Reply::Endless;
        match (repo, method) {
            // The revision redirects to itself, forever.
            ("hostile/loop", _) => Some(Reply::Head(302, vec![("Location", path.to_string())])),
            // resolve redirects to itself, forever.
            ("hostile/resolve-loop", "HEAD") => {
                Some(Reply::Head(302, vec![("Location", path.to_string())]))
            }
            // The bytes are "at" a local file.
            ("hostile/file", "HEAD") => Some(Reply::Head(
                302,
                vec![
                    ("Location", "file:///etc/passwd".into()),
                    ("X-Linked-Etag", format!("\"{sha256}\"")),
                    ("X-Linked-Size", size.to_string()),
                ],
            )),
            // The announced size disagrees with the tree's.
            ("hostile/size", "HEAD") => Some(Reply::Head(
                302,
                vec![
                    ("Location", format!("{base}/cdn/x")),
                    ("X-Linked-Etag", format!("\"{sha256}\"")),
                    ("X-Linked-Size", "1".into()),
                ],
            )),
            // The CDN sends bytes without end.
            ("hostile/endless-cdn", "HEAD") => Some(Reply::Head(
                302,
                vec![
                    ("Location", format!("{base}/endless")),
                    ("X-Linked-Etag", format!("\"{sha256}\"")),
                    ("X-Linked-Size", size.to_string()),
                ],
            )),
            _ if path == "/endless" => Some(endless()),
            // The revision's JSON never ends.
            ("hostile/endless-api", _) => Some(endless()),
            // A file name that climbs out of the snapshot.
            ("hostile/dotdot", _) if path.contains("/tree/") => Some(Reply::Json(
                200,
                format!("[{}]", tree_entry("../../../escape.gguf", size, &sha256)),
                vec![],
            )),
            ("hostile/dotdot-inner", _) if path.contains("/tree/") => Some(Reply::Json(
                200,
                format!("[{}]", tree_entry("sub/../../x.gguf", size, &sha256)),
                vec![],
            )),
            // The tree's pages link to each other in a circle.
            ("hostile/pages", _) if path.contains("/tree/") => Some(Reply::Json(
                200,
                format!("[{}]", tree_entry(FILE, size, &sha256)),
                vec![("Link", format!("<{path}>; rel=\"next\""))],
            )),
            // Two pages that link to each other.
            ("hostile/pages2", _) if path.contains("/tree/") => {
                let other = match path.strip_suffix("&cursor=b") {
                    Some(first) => first.to_string(),
                    None => format!("{path}&cursor=b"),
                };
                Some(Reply::Json(
                    200,
                    format!("[{}]", tree_entry(FILE, size, &sha256)),
                    vec![("Link", format!("<{other}>; rel=\"next\""))],
                ))
            }
            // Pages without end, each at a new address.
            ("hostile/pages-forever", _) if path.contains("/tree/") => {
                let (first, n) = match path.split_once("&cursor=") {
                    Some((first, n)) => (first.to_string(), n.parse::<u64>().unwrap() + 1),
                    None => (path.to_string(), 1),
                };
                Some(Reply::Json(
                    200,
                    "[]".into(),
                    vec![("Link", format!("<{first}&cursor={n}>; rel=\"next\""))],
                ))
            }
            // A tree of 100,000 files, one of them the model.
            ("hostile/big-tree", _) if path.contains("/tree/") => {
                let mut list: Vec<String> = (0..files)
                    .map(|i| {
                        format!(
                            r#"{{"type":"file","path":"data/part-{i:06}.txt","oid":"{OID}","size":12}}"#
                        )
                    })
                    .collect();
                list.push(tree_entry(FILE, size, &sha256));
                Some(Reply::Json(200, format!("[{}]", list.join(",")), vec![]))
            }
            _ => None,
        }
    });
    let cache = dir.0.join("hub");
    hub_env(&hub.base, &cache);
    let puller = Puller::new(dir.0.join("models")).unwrap();

    let fails = |reference: &str, says: &str| {
        let started = Instant::now();
        let error = pull(&puller, reference).unwrap_err();
        let seconds = started.elapsed().as_secs_f64();
        assert!(
            error.message.contains(says),
            "{reference}: {error} (expected it to say {says:?})"
        );
        assert!(seconds < 30.0, "{reference} took {seconds:.1} s");
        nothing_cached(&cache, &reference["hf.co/".len()..]);
        eprintln!("{reference}: {error} ({seconds:.2} s)");
        error
    };
    let error = fails("hf.co/hostile/loop", "HTTP 302");
    assert_eq!(error.code, Some(ErrorCode::DownloadFailed));
    let loops = hub
        .requests()
        .iter()
        .filter(|r| r.contains("hostile/loop"))
        .count();
    assert!(loops <= 8, "{loops} requests for a redirect in a circle");
    fails("hf.co/hostile/resolve-loop", "too many redirects");
    fails("hf.co/hostile/file", "only https:// URLs");
    let error = fails("hf.co/hostile/size", "size 1");
    assert_eq!(error.code, Some(ErrorCode::ChecksumMismatch));
    let error = fails("hf.co/hostile/endless-cdn", "sends more than");
    assert_eq!(error.code, Some(ErrorCode::ChecksumMismatch));
    fails("hf.co/hostile/endless-api", "hostile/endless-api");
    fails("hf.co/hostile/dotdot", "unsafe path `../../../escape.gguf`");
    fails("hf.co/hostile/dotdot-inner", "unsafe path");
    fails("hf.co/hostile/pages", "circle");
    fails("hf.co/hostile/pages2", "circle");
    fails("hf.co/hostile/pages-forever", "more than 1000 pages");
    assert!(!dir.0.join("escape.gguf").exists() && !cache.join("escape.gguf").exists());

    // `..` in the repo's name: refused before any request.
    let before = hub.requests().len();
    for reference in [
        "hf.co/../etc",
        "hf.co/hostile/..",
        "hf.co/hostile/../../x",
        "hf.co/./x",
    ] {
        let error = pull(&puller, reference).unwrap_err();
        assert_eq!(
            error.kind,
            ErrorKind::InvalidRequest,
            "{reference}: {error}"
        );
    }
    assert_eq!(hub.requests().len(), before);

    // A tree of 100,000 files: the model is found among them and pulled.
    let started = Instant::now();
    let report = pull(&puller, "hf.co/hostile/big-tree").unwrap();
    eprintln!(
        "a tree of {files} files: pulled in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(report.files.len(), 1);
    assert_eq!(report.files[0].path, FILE);

    // The puller works on: a good repo pulls whole.
    let report = pull(&puller, "hf.co/hostile/good").unwrap();
    assert_eq!(report.downloaded_bytes, size as u64);
}

#[cfg(unix)]
#[test]
fn a_tampered_cache_is_pulled_again_and_never_read_outside() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("hub-tampered");
    let bytes = sample_bytes(200_000, 11);
    let hub = hub(bytes.clone(), |_, _, _, _| None);
    let cache = dir.0.join("hub");
    hub_env(&hub.base, &cache);
    let reference = "hf.co/ingle-test/tampered";
    let folder = cache.join("models--ingle-test--tampered");
    let blob = folder.join("blobs").join(sha256_hex(&bytes));
    let pointer = folder.join("snapshots").join(COMMIT).join(FILE);
    pull(&Puller::new(dir.0.join("models")).unwrap(), reference).unwrap();
    assert_eq!(std::fs::read(&pointer).unwrap(), bytes);

    // A blob whose bytes changed (its size kept): a new pull hashes it, downloads it again and
    // replaces it.
    let mut tampered = bytes.clone();
    tampered[1000] ^= 0x55;
    std::fs::write(&blob, &tampered).unwrap();
    let report = pull(&Puller::new(dir.0.join("models")).unwrap(), reference).unwrap();
    assert_eq!(report.downloaded_bytes, bytes.len() as u64);
    assert_eq!(std::fs::read(&pointer).unwrap(), bytes);

    // A snapshot link that leads out of the cache, to a file of the same size: offline, the
    // model is not in the cache (nothing outside is served); online, the pull links it back.
    let outside = dir.0.join("outside.gguf");
    std::fs::write(&outside, &tampered).unwrap();
    std::fs::remove_file(&pointer).unwrap();
    std::os::unix::fs::symlink(&outside, &pointer).unwrap();
    std::env::set_var("HF_HUB_OFFLINE", "1");
    let offline = pull(&Puller::new(dir.0.join("models")).unwrap(), reference).unwrap_err();
    std::env::remove_var("HF_HUB_OFFLINE");
    assert_eq!(offline.kind, ErrorKind::NotFound, "{offline}");
    let report = pull(&Puller::new(dir.0.join("models")).unwrap(), reference).unwrap();
    assert_eq!(report.downloaded_bytes, 0, "the blob was good");
    let target = std::fs::read_link(&pointer).unwrap();
    assert!(target.starts_with("../../blobs"), "{}", target.display());
    assert_eq!(std::fs::read(&pointer).unwrap(), bytes);
    assert_eq!(
        std::fs::read(&outside).unwrap(),
        tampered,
        "the outside file was not touched"
    );

    // A `blobs` folder that is itself a link (to a bigger disk, say) is a cache like any other.
    let elsewhere = dir.0.join("bigger-disk-blobs");
    std::fs::rename(folder.join("blobs"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, folder.join("blobs")).unwrap();
    std::env::set_var("HF_HUB_OFFLINE", "1");
    let offline = pull(&Puller::new(dir.0.join("models")).unwrap(), reference);
    std::env::remove_var("HF_HUB_OFFLINE");
    assert_eq!(offline.unwrap().files[0].path, FILE);

    // A split GGUF whose second shard's link leads outside: not in the cache (its name is not
    // taken from the first's), until a pull links it back.
    let split = "hf.co/ingle-test/tampered-split";
    let report = pull(&Puller::new(dir.0.join("models")).unwrap(), split).unwrap();
    assert_eq!(report.files.len(), 2, "{:?}", report.files);
    let shard = cache
        .join("models--ingle-test--tampered-split/snapshots")
        .join(COMMIT)
        .join(SHARDS[1]);
    std::fs::remove_file(&shard).unwrap();
    std::os::unix::fs::symlink(&outside, &shard).unwrap();
    std::env::set_var("HF_HUB_OFFLINE", "1");
    let offline = pull(&Puller::new(dir.0.join("models")).unwrap(), split).unwrap_err();
    std::env::remove_var("HF_HUB_OFFLINE");
    assert_eq!(offline.kind, ErrorKind::NotFound, "{offline}");
    pull(&Puller::new(dir.0.join("models")).unwrap(), split).unwrap();
    assert_eq!(std::fs::read(&shard).unwrap(), bytes);
}
