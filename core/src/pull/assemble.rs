//! Files from their downloaded parts: assembled (zip members inflated), sized and hashed against
//! the catalog before anything is renamed into place.

use super::download::{read_some, Located};
use super::http::download_error;
use super::{
    catalog, local_error, Emit, Error, Mismatch, PullStatus, Result, VERIFY_PROGRESS_EVERY,
};
use crate::error::ErrorCode;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// The sha256 of a file, as lowercase hex, reporting `(hashed, total)` as it goes.
pub(super) fn sha256_file(
    path: &Path,
    progress: &mut dyn FnMut(u64, u64) -> Result<()>,
) -> Result<String> {
    let file = File::open(path).map_err(|e| local_error("read", path, e))?;
    let total = file.metadata().map_or(0, |m| m.len());
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let (mut done, mut since) = (0u64, 0u64);
    progress(0, total)?;
    loop {
        let n = read_some(&mut reader, &mut buffer).map_err(|e| local_error("read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        done += n as u64;
        since += n as u64;
        if since >= VERIFY_PROGRESS_EVERY {
            since = 0;
            progress(done, total)?;
        }
    }
    progress(done, total)?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// Writes the file from its downloaded parts into `tmp` (inflating zip members), checking
/// each member's CRC-32 and size and the whole file's size and sha256. The outer error is a
/// failure on this machine (the parts are good and kept), the inner one a download that did
/// not give the catalog's bytes. Reports `verifying` as it goes (a cancel is an outer error).
pub(super) fn assemble(
    file: &catalog::File,
    located: &[Located],
    parts: &[PathBuf],
    tmp: &Path,
    emit: &mut Emit,
) -> Result<std::result::Result<(), Mismatch>> {
    let mut out = File::create(tmp).map_err(|e| local_error("create", tmp, e))?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut since_report = 0u64;
    emit(PullStatus::Verifying, Some(&file.path), 0, file.size)?;
    let mut buffer = vec![0u8; 1 << 20];
    for (part, path) in located.iter().zip(parts) {
        let input = File::open(path).map_err(|e| local_error("read", path, e))?;
        let input = BufReader::with_capacity(1 << 20, input);
        // One byte past what the part should give shows it is wrong without inflating a
        // hostile stream to its end.
        let (reader, limit): (Box<dyn Read>, u64) = match &part.member {
            Some(m) if m.method == 8 => (
                Box::new(flate2::read::DeflateDecoder::new(input)),
                m.size.saturating_add(1),
            ),
            Some(m) => (Box::new(input), m.size.saturating_add(1)),
            None => (Box::new(input), file.size.saturating_add(1)),
        };
        let mut reader = reader.take(limit);
        let mut crc = flate2::Crc::new();
        let mut part_size = 0u64;
        loop {
            let n = match read_some(&mut reader, &mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                // Inflating fails on bad data (these kinds); reading a file, on this machine.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::InvalidInput
                            | std::io::ErrorKind::InvalidData
                            | std::io::ErrorKind::UnexpectedEof
                    ) =>
                {
                    return Ok(Err(Mismatch(
                        download_error(
                            &part.url,
                            format!("the downloaded data does not inflate ({e}); it was discarded"),
                        )
                        .with_code(ErrorCode::ChecksumMismatch),
                    )))
                }
                Err(e) => return Err(local_error("read", path, e)),
            };
            crc.update(&buffer[..n]);
            hasher.update(&buffer[..n]);
            out.write_all(&buffer[..n])
                .map_err(|e| local_error("write", tmp, e))?;
            part_size += n as u64;
            since_report += n as u64;
            if since_report >= VERIFY_PROGRESS_EVERY {
                since_report = 0;
                let done = (size + part_size).min(file.size);
                emit(PullStatus::Verifying, Some(&file.path), done, file.size)?;
            }
        }
        if let Some(member) = &part.member {
            if crc.sum() != member.crc32 || part_size != member.size {
                return Ok(Err(Mismatch(
                    download_error(
                        &part.url,
                        format!(
                            "`{}` came out with CRC-32 {:08x} and {}{part_size} bytes, not \
                             {:08x} and {}; the download was discarded",
                            member.name,
                            crc.sum(),
                            if part_size > member.size { "over " } else { "" },
                            member.crc32,
                            member.size
                        ),
                    )
                    .with_code(ErrorCode::ChecksumMismatch),
                )));
            }
        }
        size += part_size;
    }
    let sha = format!("{:x}", hasher.finalize());
    if sha != file.sha256 || size != file.size {
        return Ok(Err(Mismatch(
            Error::model(format!(
                "The downloaded {} has sha256 {sha} ({size} bytes), not the catalog's {} ({} \
                 bytes); the download was discarded",
                file.path, file.sha256, file.size
            ))
            .with_code(ErrorCode::ChecksumMismatch),
        )));
    }
    out.sync_all().map_err(|e| local_error("write", tmp, e))?;
    Ok(Ok(()))
}
