//! A package index and file server on 127.0.0.1 for the `pull` tests: the JSON API of PEP 691
//! for wheels, plain files, HTTP range requests, and switches for the failures a real network
//! has (a connection cut mid-file, a server that ignores ranges, bytes that arrive wrong, an
//! HTTP error status).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// What the server holds and how it misbehaves.
#[derive(Default)]
pub struct State {
    /// `/files/NAME` → bytes (wheels and plain files).
    pub files: HashMap<String, Vec<u8>>,
    /// Package name (as the index spells it) → its wheels' file names.
    pub packages: HashMap<String, Vec<String>>,
    /// Sha256 the index states for a wheel instead of the real one.
    pub stated_sha256: HashMap<String, String>,
    /// Cut the next bodies of the file named here that are longer than this many bytes after
    /// them, this many times.
    pub cut: Option<(String, usize, usize)>,
    /// Answer range requests for the file named here with the whole file (200).
    pub ignore_ranges_of: Option<String>,
    /// Flip one byte in the middle of every body served from `/files/`.
    pub corrupt: bool,
    /// Answer the next requests whose path ends with the text here with this HTTP status (a
    /// mirror's 503, a 404), this many times; then serve them as usual.
    pub fail: Option<(String, u16, usize)>,
    /// Each request's path and Range header.
    pub requests: Vec<(String, Option<String>)>,
    /// Body bytes sent, per file of `/files/`.
    pub sent: HashMap<String, usize>,
}

pub struct Server {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<State>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let _ = serve(stream, &state);
                });
            }
        });
        Server { addr, state }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The index URL to give `INGLE_INDEX_URL` (or a catalog's `index`).
    pub fn index(&self) -> String {
        format!("{}/simple/", self.url())
    }

    pub fn add_file(&self, name: &str, bytes: Vec<u8>) {
        self.state
            .lock()
            .unwrap()
            .files
            .insert(name.to_string(), bytes);
    }

    /// Puts `wheel` on the index under `package`.
    pub fn add_wheel(&self, package: &str, wheel: &str, bytes: Vec<u8>) {
        self.add_file(wheel, bytes);
        self.state
            .lock()
            .unwrap()
            .packages
            .entry(package.to_string())
            .or_default()
            .push(wheel.to_string());
    }

    pub fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.state.lock().unwrap())
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut range = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("range") {
                range = Some(value.trim().to_string());
            }
        }
    }
    let mut out = stream;
    let mut state = state.lock().unwrap();
    state.requests.push((path.clone(), range.clone()));
    if let Some((suffix, status, times)) = &mut state.fail {
        if path.ends_with(suffix.as_str()) {
            let status = format!("{status} Failing On Purpose");
            *times -= 1;
            if *times == 0 {
                state.fail = None;
            }
            return respond(&mut out, &status, &[], b"failing on purpose");
        }
    }
    if let Some(package) = path
        .strip_prefix("/simple/")
        .map(|p| p.trim_end_matches('/'))
    {
        let Some(wheels) = state.packages.get(package) else {
            return respond(&mut out, "404 Not Found", &[], b"no such package");
        };
        let files: Vec<serde_json::Value> = wheels
            .iter()
            .map(|wheel| {
                let sha = state
                    .stated_sha256
                    .get(wheel)
                    .cloned()
                    .unwrap_or_else(|| sha256_hex(&state.files[wheel]));
                serde_json::json!({
                    "filename": wheel,
                    // Relative, as PEP 691 allows: the client resolves it against the page.
                    "url": format!("../../files/{wheel}#sha256={sha}"),
                    "hashes": {"sha256": sha},
                    "size": state.files[wheel].len(),
                })
            })
            .collect();
        let body =
            serde_json::json!({"meta": {"api-version": "1.1"}, "name": package, "files": files});
        return respond(
            &mut out,
            "200 OK",
            &[("Content-Type", "application/vnd.pypi.simple.v1+json".into())],
            body.to_string().as_bytes(),
        );
    }
    let Some(name) = path.strip_prefix("/files/") else {
        return respond(&mut out, "404 Not Found", &[], b"not found");
    };
    let Some(file) = state.files.get(name).cloned() else {
        return respond(&mut out, "404 Not Found", &[], b"not found");
    };
    let len = file.len();
    let span = range
        .filter(|_| state.ignore_ranges_of.as_deref() != Some(name))
        .and_then(|r| parse_range(&r, len));
    let (status, start, end) = match span {
        Some(Ok((start, end))) => ("206 Partial Content", start, end),
        Some(Err(())) => {
            return respond(
                &mut out,
                "416 Range Not Satisfiable",
                &[("Content-Range", format!("bytes */{len}"))],
                b"",
            )
        }
        None => ("200 OK", 0, len.saturating_sub(1)),
    };
    let mut body = if len == 0 {
        Vec::new()
    } else {
        file[start..=end].to_vec()
    };
    if state.corrupt && !body.is_empty() {
        let middle = body.len() / 2;
        body[middle] ^= 0x55;
    }
    let mut headers = vec![("Accept-Ranges", "bytes".to_string())];
    if status.starts_with("206") {
        headers.push(("Content-Range", format!("bytes {start}-{end}/{len}")));
    }
    let cut = match &mut state.cut {
        Some((file, n, times)) if file == name && *n < body.len() => {
            let n = *n;
            *times -= 1;
            if *times == 0 {
                state.cut = None;
            }
            Some(n)
        }
        _ => None,
    };
    *state.sent.entry(name.to_string()).or_default() += cut.unwrap_or(body.len()).min(body.len());
    drop(state);
    match cut {
        Some(n) if n < body.len() => {
            // Promise the whole body, send part of it, and hang up.
            write_head(&mut out, status, &headers, body.len())?;
            out.write_all(&body[..n])?;
            out.flush()?;
            out.shutdown(std::net::Shutdown::Both)
        }
        _ => respond(&mut out, status, &headers, &body),
    }
}

/// `bytes=A-B`, `bytes=A-` or `bytes=-N` over a file of `len` bytes: the inclusive span, or
/// `Err` when it is past the end.
fn parse_range(value: &str, len: usize) -> Option<Result<(usize, usize), ()>> {
    let spec = value.strip_prefix("bytes=")?;
    let (a, b) = spec.split_once('-')?;
    let span = match (a.parse::<usize>().ok(), b.parse::<usize>().ok()) {
        (Some(a), Some(b)) => (a, b.min(len.saturating_sub(1))),
        (Some(a), None) => (a, len.saturating_sub(1)),
        (None, Some(n)) => (len.saturating_sub(n), len.saturating_sub(1)),
        (None, None) => return None,
    };
    Some(if span.0 >= len || span.0 > span.1 {
        Err(())
    } else {
        Ok(span)
    })
}

fn write_head(
    out: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
    len: usize,
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {len}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())
}

fn respond(
    out: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    write_head(out, status, headers, body.len())?;
    out.write_all(body)?;
    out.flush()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(bytes))
}

/// A zip (a wheel) of `files`: (name, bytes, deflated?), laid out as zip tools write it, with
/// an extra field in each local header (its length differs from the central directory's, as
/// it often does in real archives) and an archive comment.
pub fn zip(files: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut directory = Vec::new();
    for (name, data, deflate) in files {
        let stored: Vec<u8> = if *deflate {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), Default::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        } else {
            data.to_vec()
        };
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let method: u16 = if *deflate { 8 } else { 0 };
        let offset = out.len() as u32;
        let common = |v: &mut Vec<u8>| {
            v.extend_from_slice(&20u16.to_le_bytes()); // version needed
            v.extend_from_slice(&0u16.to_le_bytes()); // flags
            v.extend_from_slice(&method.to_le_bytes());
            v.extend_from_slice(&[0; 4]); // time, date
            v.extend_from_slice(&crc.sum().to_le_bytes());
            v.extend_from_slice(&(stored.len() as u32).to_le_bytes());
            v.extend_from_slice(&(data.len() as u32).to_le_bytes());
            v.extend_from_slice(&(name.len() as u16).to_le_bytes());
        };
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        common(&mut out);
        out.extend_from_slice(&4u16.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&[0xfe, 0xca, 0, 0]);
        out.extend_from_slice(&stored);
        directory.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        directory.extend_from_slice(&20u16.to_le_bytes()); // version made by
        common(&mut directory);
        directory.extend_from_slice(&0u16.to_le_bytes()); // extra field length
        directory.extend_from_slice(&[0; 10]); // comment length, disk, attributes
        directory.extend_from_slice(&offset.to_le_bytes());
        directory.extend_from_slice(name.as_bytes());
    }
    let directory_offset = out.len() as u32;
    out.extend_from_slice(&directory);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(files.len() as u16).to_le_bytes());
    out.extend_from_slice(&(files.len() as u16).to_le_bytes());
    out.extend_from_slice(&(directory.len() as u32).to_le_bytes());
    out.extend_from_slice(&directory_offset.to_le_bytes());
    out.extend_from_slice(&3u16.to_le_bytes());
    out.extend_from_slice(b"hi!");
    out
}

/// The length of `data` deflated as [`zip`] stores it.
pub fn deflated_len(data: &[u8]) -> usize {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), Default::default());
    e.write_all(data).unwrap();
    e.finish().unwrap().len()
}

/// `n` bytes that deflate a little (so a member's compressed and inflated sizes differ) but
/// not to nothing (so a download takes several reads).
pub fn sample_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 4 == 0 {
                b'a'
            } else {
                (x % 64) as u8 + b'0'
            }
        })
        .collect()
}

/// A catalog (TOML) whose index is `server`'s.
pub fn catalog(server: &Server, entries: &str) -> String {
    format!("schema = 1\nindex = \"{}\"\n{entries}", server.index())
}
