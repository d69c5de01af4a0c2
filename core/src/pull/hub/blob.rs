//! A file of the Hub's cache: its hashes (sha256, git blob sha1), its snapshot link, a ref.

use super::super::download::read_some;
use super::super::{local_error, Emit, PullStatus};
use crate::error::Result;
use sha1::Sha1;
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// The sha256 of `path` (for a large file) and its git blob sha1 (`blob {size}\0` + bytes),
/// reporting `verifying` as it goes for `name` (the file's path in its repo); the sha1 only of a
/// `small` (not LFS) file.
pub(super) fn hashes(
    path: &Path,
    name: &str,
    small: bool,
    emit: &mut Emit,
) -> Result<(Option<String>, String)> {
    let input = File::open(path).map_err(|e| local_error("read", path, e))?;
    let size = input.metadata().map_or(0, |m| m.len());
    let mut reader = BufReader::with_capacity(1 << 20, input);
    let mut sha256 = Sha256::new();
    let mut sha1 = Sha1::new();
    if small {
        sha1.update(format!("blob {size}\0").as_bytes());
    }
    let mut buffer = vec![0u8; 1 << 20];
    let (mut done, mut since) = (0u64, 0u64);
    emit(PullStatus::Verifying, Some(name), 0, size)?;
    loop {
        let n = read_some(&mut reader, &mut buffer).map_err(|e| local_error("read", path, e))?;
        if n == 0 {
            break;
        }
        sha256.update(&buffer[..n]);
        if small {
            sha1.update(&buffer[..n]);
        }
        done += n as u64;
        since += n as u64;
        if since >= super::super::VERIFY_PROGRESS_EVERY {
            since = 0;
            emit(PullStatus::Verifying, Some(name), done, size)?;
        }
    }
    emit(PullStatus::Verifying, Some(name), done, size)?;
    Ok((
        Some(format!("{:x}", sha256.finalize())),
        format!("{:x}", sha1.finalize()),
    ))
}

/// Links `pointer` (in `snapshot`) to `blob` by a relative path, as huggingface_hub does
/// (`../../blobs/ETAG`, one `../` more per folder of the file's path), replacing what was there.
pub(super) fn link(blob: &Path, pointer: &Path, snapshot: &Path) -> Result<()> {
    let depth = pointer
        .strip_prefix(snapshot)
        .map_or(1, |p| p.components().count());
    let mut target = PathBuf::new();
    for _ in 0..depth + 1 {
        target.push("..");
    }
    target.push("blobs");
    target.push(blob.file_name().unwrap_or_default());
    if let Some(dir) = pointer.parent() {
        fs::create_dir_all(dir).map_err(|e| local_error("create", dir, e))?;
    }
    if fs::read_link(pointer).is_ok_and(|t| t == target) {
        return Ok(());
    }
    let tmp = pointer.with_file_name(format!(
        ".{}.{}.ingle-link",
        pointer.file_name().unwrap_or_default().to_string_lossy(),
        unique()
    ));
    fs::remove_file(&tmp).ok();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&target, &tmp).map_err(|e| local_error("link", &tmp, e))?;
    #[cfg(not(unix))]
    fs::copy(blob, &tmp).map_err(|e| local_error("copy to", &tmp, e))?;
    if let Err(e) = fs::rename(&tmp, pointer) {
        fs::remove_file(&tmp).ok();
        // Another pull linked it the same way meanwhile.
        if fs::read_link(pointer).is_ok_and(|t| t == target) {
            return Ok(());
        }
        return Err(local_error("link", pointer, e));
    }
    Ok(())
}

/// Writes `bytes` to `path` by a rename: a reader sees the old contents or the new.
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| local_error("create", dir, e))?;
    }
    let tmp = path.with_file_name(format!(
        ".{}.{}.ingle-partial",
        path.file_name().unwrap_or_default().to_string_lossy(),
        unique()
    ));
    fs::write(&tmp, bytes).map_err(|e| local_error("write", &tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| {
        fs::remove_file(&tmp).ok();
        local_error("write", path, e)
    })?;
    Ok(())
}

/// A name part no other writer (thread or process) uses at the same time.
fn unique() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_links_its_blob_by_a_relative_path() {
        let dir = std::env::temp_dir().join(format!("ingle-hub-link-{}", std::process::id()));
        let snapshot = dir.join("snapshots/c");
        fs::create_dir_all(dir.join("blobs")).unwrap();
        fs::write(dir.join("blobs/e"), b"x").unwrap();
        let pointer = snapshot.join("onnx/model.onnx");
        link(&dir.join("blobs/e"), &pointer, &snapshot).unwrap();
        assert_eq!(
            fs::read_link(&pointer).unwrap(),
            Path::new("../../../blobs/e")
        );
        assert_eq!(fs::read(&pointer).unwrap(), b"x");
        link(&dir.join("blobs/e"), &snapshot.join("a.txt"), &snapshot).unwrap();
        assert_eq!(
            fs::read_link(snapshot.join("a.txt")).unwrap(),
            Path::new("../../blobs/e")
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
