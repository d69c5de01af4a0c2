//! What the Hub's API answers, read: a revision's commit, a page of a repo's tree and the link
//! to the next. Each answer comes from the network, so each is checked here (hashes, safe paths)
//! before the puller acts on it; the fuzz target `hub_answers` feeds them anything.

use super::super::http;

/// One file of a repo, as the tree API lists it: checked (a safe relative path, a 40-hex git
/// blob sha1, a 64-hex sha256 when large), hashes in lower case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    pub path: String,
    pub size: u64,
    /// The git blob sha1.
    pub oid: String,
    /// A large (LFS) file's sha256.
    pub lfs: Option<String>,
}

impl TreeFile {
    /// Its blob's name in the cache, as huggingface_hub names it (the ETag the Hub gives).
    pub fn etag(&self) -> &str {
        self.lfs.as_deref().unwrap_or(&self.oid)
    }
}

/// The commit a `revision` answer names (its `sha`), if it names one.
pub fn revision_commit(answer: &serde_json::Value) -> Option<String> {
    answer
        .get("sha")
        .and_then(|s| s.as_str())
        .filter(|s| super::is_commit(s))
        .map(str::to_string)
}

/// The files of one page of a tree answer (folders and other entries skipped), or what is
/// wrong with it.
pub fn tree_page(page: &serde_json::Value) -> Result<Vec<TreeFile>, String> {
    let entries = page
        .as_array()
        .ok_or("the Hub's tree answer is not a list")?;
    let mut files = Vec::new();
    for entry in entries {
        if entry.get("type").and_then(|t| t.as_str()) != Some("file") {
            continue;
        }
        let text = |key: &str| entry.get(key).and_then(|v| v.as_str()).map(str::to_string);
        let (Some(path), Some(oid), Some(size)) = (
            text("path"),
            text("oid"),
            entry.get("size").and_then(|s| s.as_u64()),
        ) else {
            return Err("a file of the tree lacks its path, oid or size".into());
        };
        let lfs = entry
            .get("lfs")
            .and_then(|l| l.get("oid"))
            .and_then(|o| o.as_str())
            .map(str::to_ascii_lowercase);
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex(&oid, 40) || lfs.as_deref().is_some_and(|l| !hex(l, 64)) {
            return Err(format!(
                "the tree gives {} a malformed hash",
                crate::error::shown(&path)
            ));
        }
        if !is_safe_path(&path) {
            return Err(format!(
                "the tree lists an unsafe path `{}`",
                crate::error::shown(&path)
            ));
        }
        files.push(TreeFile {
            path,
            size,
            oid: oid.to_ascii_lowercase(),
            lfs,
        });
    }
    Ok(files)
}

/// Whether `path` stays in the folder it is joined to: `/`-separated, no empty, `.` or `..`
/// part (so not absolute), no `\`.
pub fn is_safe_path(path: &str) -> bool {
    !path
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
        && !path.contains('\\')
}

/// The next page of a paginated answer (`Link: <URL>; rel="next"`), resolved against `url`, the
/// page that gave it.
pub fn next_page(url: &str, link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        params.contains("rel=\"next\"").then(|| {
            let target = target.trim().trim_start_matches('<').trim_end_matches('>');
            http::join_url(url, target)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tree_page_is_read_and_checked() {
        let sha1 = "A".repeat(40);
        let page = json!([
            {"type": "directory", "path": "onnx", "oid": sha1, "size": 0},
            {"type": "file", "path": "onnx/model.onnx", "oid": sha1, "size": 5,
             "lfs": {"oid": "B".repeat(64), "size": 5}},
        ]);
        let files = tree_page(&page).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].oid, "a".repeat(40));
        assert_eq!(files[0].etag(), "b".repeat(64));
        for path in ["../x", "a//b", "/abs", "a/./b", "a\\b", ""] {
            let page = json!([{"type": "file", "path": path, "oid": sha1, "size": 1}]);
            assert!(
                tree_page(&page).unwrap_err().contains("unsafe path"),
                "{path}"
            );
        }
        let short = json!([{"type": "file", "path": "a", "oid": "abc", "size": 1}]);
        assert!(tree_page(&short).unwrap_err().contains("malformed hash"));
        assert!(tree_page(&json!({"a": 1})).is_err());
    }

    #[test]
    fn the_next_page_comes_from_the_link_header() {
        let url = "https://hub.test/api/models/o/r/tree/c?recursive=true";
        let link = r#"<https://hub.test/api/models/o/r/tree/c?cursor=2>; rel="next""#;
        assert_eq!(
            next_page(url, link).as_deref(),
            Some("https://hub.test/api/models/o/r/tree/c?cursor=2")
        );
        assert_eq!(
            next_page(url, r#"</page/3>; rel="next", </page/1>; rel="prev""#).as_deref(),
            Some("https://hub.test/page/3")
        );
        assert_eq!(next_page(url, r#"</page/1>; rel="prev""#), None);
        assert_eq!(next_page(url, "garbage"), None);
    }
}
