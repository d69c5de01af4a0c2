//! Just enough of the zip format to find one member of a wheel by HTTP range requests: the
//! end-of-central-directory record, the central directory, and a member's local header.

/// Bytes read from the end of a zip to find its end-of-central-directory record: the record
/// (22 bytes) plus the longest comment it may end with.
pub const TAIL_BYTES: u64 = 22 + 65535;
/// Bytes of a local file header before its name and extra field.
pub const LOCAL_HEADER_BYTES: u64 = 30;

/// A member of the central directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    /// 0 stored, 8 deflate.
    pub method: u16,
    pub crc32: u32,
    pub compressed_size: u64,
    pub size: u64,
    pub local_header_offset: u64,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Where the central directory is: `(offset, size)`, from the tail of a zip of `total` bytes
/// (`tail` holds its last `tail.len()` bytes).
pub fn central_directory(tail: &[u8], total: u64) -> Result<(u64, u64), String> {
    const EOCD: u32 = 0x0605_4b50;
    let at = (0..=tail.len().saturating_sub(22))
        .rev()
        .find(|&i| u32_at(tail, i) == Some(EOCD))
        .ok_or("no end-of-central-directory record: not a zip file")?;
    let size = u32_at(tail, at + 12).ok_or("truncated record")?;
    let offset = u32_at(tail, at + 16).ok_or("truncated record")?;
    if size == u32::MAX || offset == u32::MAX {
        // ZIP64: the locator sits just before the record; its target must be in the tail.
        const LOCATOR: u32 = 0x0706_4b50;
        let locator = at.checked_sub(20).ok_or("truncated ZIP64 locator")?;
        if u32_at(tail, locator) != Some(LOCATOR) {
            return Err("a ZIP64 archive without a ZIP64 locator".into());
        }
        let record = u64_at(tail, locator + 8).ok_or("truncated ZIP64 locator")?;
        let tail_start = total - tail.len() as u64;
        let record = record
            .checked_sub(tail_start)
            .ok_or("a ZIP64 record too far from the end of the archive")?
            as usize;
        if u32_at(tail, record) != Some(0x0606_4b50) {
            return Err("a bad ZIP64 end-of-central-directory record".into());
        }
        let size = u64_at(tail, record + 40).ok_or("truncated ZIP64 record")?;
        let offset = u64_at(tail, record + 48).ok_or("truncated ZIP64 record")?;
        return Ok((offset, size));
    }
    if u64::from(offset) + u64::from(size) > total {
        return Err("the central directory lies outside the file".into());
    }
    Ok((u64::from(offset), u64::from(size)))
}

/// The members listed in a central directory.
pub fn members(directory: &[u8]) -> Result<Vec<Member>, String> {
    const HEADER: u32 = 0x0201_4b50;
    let mut members = Vec::new();
    let mut at = 0;
    while at + 46 <= directory.len() {
        if u32_at(directory, at) != Some(HEADER) {
            return Err(format!("a bad central directory entry at byte {at}"));
        }
        let field16 = |o| u16_at(directory, at + o).unwrap_or(0);
        let field32 = |o| u32_at(directory, at + o).unwrap_or(0);
        let (name_len, extra_len, comment_len) = (
            field16(28) as usize,
            field16(30) as usize,
            field16(32) as usize,
        );
        let name = directory
            .get(at + 46..at + 46 + name_len)
            .ok_or("a truncated central directory")?;
        let extra = directory
            .get(at + 46 + name_len..at + 46 + name_len + extra_len)
            .ok_or("a truncated central directory")?;
        let mut member = Member {
            name: String::from_utf8_lossy(name).into_owned(),
            method: field16(10),
            crc32: field32(16),
            compressed_size: u64::from(field32(20)),
            size: u64::from(field32(24)),
            local_header_offset: u64::from(field32(42)),
        };
        zip64_extra(extra, &mut member);
        members.push(member);
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(members)
}

/// Reads the ZIP64 extended information of an entry whose 32-bit fields are saturated.
fn zip64_extra(extra: &[u8], member: &mut Member) {
    let mut at = 0;
    while at + 4 <= extra.len() {
        let (id, len) = (
            u16_at(extra, at).unwrap_or(0),
            u16_at(extra, at + 2).unwrap_or(0) as usize,
        );
        if id == 1 {
            let mut field = at + 4;
            for value in [
                &mut member.size,
                &mut member.compressed_size,
                &mut member.local_header_offset,
            ] {
                if *value == u64::from(u32::MAX) {
                    if let Some(v) = u64_at(extra, field) {
                        *value = v;
                        field += 8;
                    }
                }
            }
        }
        at += 4 + len;
    }
}

/// Where a member's data starts, from the first [`LOCAL_HEADER_BYTES`] of its local header
/// (at `offset`).
pub fn data_start(local_header: &[u8], offset: u64) -> Result<u64, String> {
    if u32_at(local_header, 0) != Some(0x0403_4b50) {
        return Err("a bad local file header".into());
    }
    let name_len = u64::from(u16_at(local_header, 26).unwrap_or(0));
    let extra_len = u64::from(u16_at(local_header, 28).unwrap_or(0));
    Ok(offset + LOCAL_HEADER_BYTES + name_len + extra_len)
}

#[cfg(test)]
mod tests {
    // Whole wheels are parsed in tests/tests/pull.rs, through a pull from a local server.
    #[test]
    fn refuses_what_is_not_a_zip() {
        let e = super::central_directory(b"not a zip at all, not at all", 28).unwrap_err();
        assert!(e.contains("not a zip"), "{e}");
        assert!(super::data_start(&[0; 30], 0).is_err());
    }
}
