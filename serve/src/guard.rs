//! What keeps web pages from driving a server that runs without a key (`docs/operations.md`,
//! "Who can reach a keyless server"). A browser on the same machine can reach a loopback
//! server in two ways, and both are closed here, before any route runs:
//!
//! - **Cross-origin requests.** A page may send "simple" requests (a form post, `fetch` with
//!   `mode: "no-cors"`, `text/plain` bodies, an `<img>`) anywhere without a CORS preflight; it
//!   cannot read the answer, but the request runs. Every such POST carries an `Origin` header,
//!   and a request whose `Origin` is not allowed is refused (403) whatever its method: the
//!   loopback origins of pages served from this machine, and those given by `--cors-origin`,
//!   are allowed, and get the CORS headers (preflights included) that let their pages read the
//!   answers. A cross-origin GET may carry no `Origin` (an `<img>`, a `no-cors` fetch); browsers
//!   mark it `Sec-Fetch-Site: cross-site`, and it is refused too unless an allowed `Origin`
//!   comes with it (its `onload`/`onerror` would tell a page which models exist).
//! - **DNS rebinding.** A page whose own domain is made to resolve to 127.0.0.1 is
//!   same-origin with the server and sends no `Origin` on a GET; only its `Host` header gives
//!   it away. A server without an API key answers only when `Host` is a loopback name, an IP
//!   address, this machine's name or one given by `--allowed-hosts`. (With a key, any `Host`
//!   is served: a page cannot know the key, and proxies and clusters name servers freely.)
//!
//! `POST /drain` (which stops the server) is refused with any `Origin` at all, and without an
//! API key is taken only from a loopback peer, not through a proxy.

use crate::{error_response, AppState};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ingle::error::shown;
use ingle::ErrorCode;
use ingle::{Error, ErrorKind};
use std::net::{IpAddr, SocketAddr};

/// The `Host` values and browser origins a server accepts beyond its defaults.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    /// Extra `Host` names: exact, `.example.com` for a domain and its subdomains, `*` for any.
    allowed_hosts: Vec<String>,
    /// Extra origins (`https://app.example.com`, `http://10.0.0.5:3000`), or `*` for any.
    cors_origins: Vec<String>,
    /// This machine's name, which names it on its own network.
    hostname: Option<String>,
    /// Whether `Host` is checked: on a server without an API key.
    check_host: bool,
}

impl Policy {
    pub(crate) fn new(allowed_hosts: &[String], cors_origins: &[String], keyless: bool) -> Self {
        Policy {
            allowed_hosts: allowed_hosts.iter().map(|h| normal_host(h)).collect(),
            cors_origins: cors_origins.iter().map(|o| normal_origin(o)).collect(),
            hostname: machine_name(),
            check_host: keyless,
        }
    }

    /// Whether a request's `Host` (without its port) names this server.
    pub(crate) fn host_allowed(&self, host: &str) -> bool {
        let host = normal_host(host);
        if !self.check_host
            || host.is_empty()
            || is_loopback_name(&host)
            || host.parse::<IpAddr>().is_ok()
        {
            return true;
        }
        if self.hostname.as_deref() == Some(host.as_str()) {
            return true;
        }
        self.allowed_hosts.iter().any(|allowed| {
            allowed == "*"
                || *allowed == host
                || (allowed.starts_with('.')
                    && (host.ends_with(allowed.as_str()) || host == allowed[1..]))
        })
    }

    /// Whether pages of `origin` may call the API.
    pub(crate) fn origin_allowed(&self, origin: &str) -> bool {
        let origin = normal_origin(origin);
        if is_loopback_origin(&origin) {
            return true;
        }
        self.cors_origins
            .iter()
            .any(|allowed| allowed == "*" || *allowed == origin)
    }
}

/// Checks an origin given to `--cors-origin` (or `cors_origins=`): `*`, or
/// `http(s)://host[:port]` with no path; the error says what an origin is.
pub fn check_cors_origin(origin: &str) -> Result<(), String> {
    let normal = normal_origin(origin);
    let rest = normal
        .strip_prefix("http://")
        .or_else(|| normal.strip_prefix("https://"));
    match rest {
        _ if normal == "*" => Ok(()),
        Some(host) if !host.is_empty() && !host.contains(['/', '@', ' ', '?', '#']) => Ok(()),
        _ => Err(format!(
            "`{}` is not an origin: give the scheme, host and port a browser sends in `Origin` \
             (`https://app.example.com`, `http://localhost:3000`), or `*` for any",
            shown(origin)
        )),
    }
}

/// Checks a name given to `--allowed-hosts` (or `allowed_hosts=`): a host name, `.domain`
/// or `*`.
pub fn check_allowed_host(host: &str) -> Result<(), String> {
    let normal = host.trim();
    let name = normal.strip_prefix('.').unwrap_or(normal);
    if normal == "*"
        || (!name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'))
    {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a host name: give a name without a port (`models.example.com`), a \
             domain with its subdomains (`.example.com`), or `*` for any",
            shown(host)
        ))
    }
}

/// A host as compared: lower case, without a port, brackets or a final dot.
fn normal_host(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    let host = if let Some(rest) = host.strip_prefix('[') {
        // [::1] or [::1]:8080
        rest.split(']').next().unwrap_or("").to_string()
    } else if host.matches(':').count() == 1 {
        host.split(':').next().unwrap_or("").to_string()
    } else {
        host // a bare IPv6 address, or no port
    };
    host.trim_end_matches('.').to_string()
}

/// An origin as compared: lower case, without a final slash.
fn normal_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

fn is_loopback_name(host: &str) -> bool {
    host == "localhost" || host.ends_with(".localhost")
}

/// `http(s)://` and a loopback name or address, with any port: a page this machine serves.
fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    if rest.contains('/') || rest.contains('@') {
        return false;
    }
    let host = normal_host(rest);
    is_loopback_name(&host) || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn machine_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = normal_host(std::str::from_utf8(&buf[..end]).ok()?);
    (!name.is_empty()).then_some(name)
}

fn forbidden(code: ErrorCode, message: String) -> Response {
    let error = Error::new(ErrorKind::InvalidRequest, message).with_code(code);
    error_response(StatusCode::FORBIDDEN, &error)
}

/// The request's `Host`, or its URI's authority (absolute-form requests).
fn host_of(request: &Request) -> Option<String> {
    request
        .headers()
        .get(header::HOST)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .or_else(|| request.uri().authority().map(|a| a.to_string()))
}

/// Middleware over every route: the `Host` allow-list, the origin policy, CORS preflights,
/// and the CORS headers of an allowed origin's answers.
pub(crate) async fn check(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let policy = &state.policy;
    if let Some(host) = host_of(&request) {
        if !policy.host_allowed(&host) {
            return forbidden(
                ErrorCode::HostNotAllowed,
                format!(
                    "This server does not answer to the host name `{}`: a web page may be \
                     reaching it by DNS rebinding. If you named it so on purpose, start it with \
                     `--allowed-hosts {}` (`*` allows any)",
                    shown(&host),
                    shown(&normal_host(&host))
                ),
            );
        }
    }
    let origin = match request.headers().get(header::ORIGIN) {
        None if from_another_site(request.headers()) => {
            return forbidden(
                ErrorCode::OriginNotAllowed,
                "Requests from web pages of other sites are not allowed (this one came with \
                 `Sec-Fetch-Site` and no allowed `Origin`)"
                    .into(),
            );
        }
        None => return next.run(request).await,
        Some(origin) => String::from_utf8_lossy(origin.as_bytes()).into_owned(),
    };
    if !policy.origin_allowed(&origin) {
        return forbidden(
            ErrorCode::OriginNotAllowed,
            format!(
                "Requests from web pages of `{}` are not allowed: a page can send requests to \
                 a local server it was never meant to drive. To let a web app of yours call \
                 this server, start it with `--cors-origin {}`",
                shown(&origin),
                shown(&normal_origin(&origin))
            ),
        );
    }
    if request.uri().path() == "/drain" {
        return forbidden(
            ErrorCode::OriginNotAllowed,
            "POST /drain stops the server and is not taken from web pages (it carried an \
             `Origin` header); call it from the operator's side (curl, a script)"
                .into(),
        );
    }
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = if preflight {
        let mut response = StatusCode::NO_CONTENT.into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
        );
        if let Some(asked) = request
            .headers()
            .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        {
            headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
        }
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        response
    } else {
        next.run(request).await
    };
    allow_origin(response.headers_mut(), &origin);
    response
}

/// Whether a browser says the request comes from a page of another site (Fetch Metadata):
/// `cross-site` or `same-site`; `same-origin` and `none` (typed in, a bookmark) are not.
fn from_another_site(headers: &HeaderMap) -> bool {
    headers.get("sec-fetch-site").is_some_and(|v| {
        v.as_bytes().eq_ignore_ascii_case(b"cross-site")
            || v.as_bytes().eq_ignore_ascii_case(b"same-site")
    })
}

fn allow_origin(headers: &mut HeaderMap, origin: &str) {
    if let Ok(value) = HeaderValue::from_str(origin) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
        headers.append(header::VARY, HeaderValue::from_static("Origin"));
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("x-request-id, retry-after"),
        );
    }
}

/// `POST /drain` without an API key: only from this machine (a loopback peer).
pub(crate) async fn drain_from_loopback(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if state.api_key.is_some() {
        return next.run(request).await; // behind the key (auth::authorize)
    }
    // A proxy on this machine makes every peer loopback: what it forwards came from elsewhere.
    let forwarded = ["forwarded", "x-forwarded-for", "x-real-ip"]
        .iter()
        .any(|h| request.headers().contains_key(*h));
    if forwarded {
        return forbidden(
            ErrorCode::DrainNotAllowed,
            "POST /drain through a proxy (it carried a `Forwarded` or `X-Forwarded-For` header) \
             needs the server to have an API key: start it with `--api-key`"
                .into(),
        );
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    if peer.is_some_and(|ip| ip.is_loopback() || ip.to_canonical().is_loopback()) {
        return next.run(request).await;
    }
    forbidden(
        ErrorCode::DrainNotAllowed,
        format!(
            "POST /drain is taken only from this machine when the server has no API key (this \
             one came from {}); start it with `--api-key` to drain it from elsewhere",
            peer.map_or("an unknown address".into(), |ip| ip.to_string())
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let policy = Policy::new(
            &["models.example.com".into(), ".corp.internal".into()],
            &[],
            true,
        );
        for host in [
            "localhost",
            "LOCALHOST:8080",
            "app.localhost",
            "127.0.0.1",
            "127.0.0.1:8080",
            "127.5.6.7:1",
            "[::1]:8080",
            "[::1]",
            "::1",
            "10.0.0.5:8080",
            "[fe80::1]:80",
            "localhost.",
            "models.example.com:443",
            "corp.internal",
            "a.b.corp.internal",
            "",
        ] {
            assert!(policy.host_allowed(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "example.com",
            "notcorp.internal",
            "models.example.com.evil",
        ] {
            assert!(!policy.host_allowed(host), "{host}");
        }
        assert!(Policy::new(&["*".into()], &[], true).host_allowed("anything.example"));
        // Behind a key, any name: a page cannot know the key.
        assert!(Policy::new(&[], &[], false).host_allowed("evil.example"));
    }

    #[test]
    fn what_can_be_allowed() {
        for origin in [
            "*",
            "https://app.example.com",
            "http://localhost:3000/",
            "HTTP://[::1]:80",
        ] {
            assert!(check_cors_origin(origin).is_ok(), "{origin}");
        }
        for origin in [
            "",
            "app.example.com",
            "https://",
            "https://a.com/path",
            "null",
            "file://",
        ] {
            assert!(check_cors_origin(origin).is_err(), "{origin}");
        }
        for host in [
            "*",
            "models.example.com",
            ".example.com",
            "ingle",
            "10.0.0.1",
        ] {
            assert!(check_allowed_host(host).is_ok(), "{host}");
        }
        for host in [
            "",
            ".",
            "a b",
            "https://x.com",
            "a/b",
            "*.example.com",
            "host:8080",
        ] {
            assert!(check_allowed_host(host).is_err(), "{host}");
        }
    }

    #[test]
    fn origins() {
        let policy = Policy::new(&[], &["https://app.example.com/".into()], true);
        for origin in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:8443",
            "http://dev.localhost:5173",
            "https://app.example.com",
            "HTTPS://APP.EXAMPLE.COM",
        ] {
            assert!(policy.origin_allowed(origin), "{origin}");
        }
        for origin in [
            "null",
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "file://",
            "http://10.0.0.5:3000",
            "https://app.example.com:8443",
            "http://localhost@evil.example",
            "",
        ] {
            assert!(!policy.origin_allowed(origin), "{origin}");
        }
        assert!(Policy::new(&[], &["*".into()], true).origin_allowed("https://evil.example"));
    }
}
