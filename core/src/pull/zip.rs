//! Just enough of the zip format to find one member of a wheel by HTTP range requests: the
//! end-of-central-directory record, the central directory, and a member's local header.

/// Bytes read from the end of a zip to find its end-of-central-directory record: the record
/// (22 bytes) plus the longest comment it may end with.
pub const TAIL_BYTES: u64 = 22 + 65535;
/// Bytes of a local file header before its name and extra field.
pub const LOCAL_HEADER_BYTES: u64 = 30;
/// The largest central directory read: a wheel's lists a few hundred files in a few tens of
/// kilobytes; a bigger one is not a catalog's wheel, and is not held in memory.
pub const MAX_DIRECTORY_BYTES: u64 = 16 << 20;

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
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// Where the central directory is: `(offset, size)`, from the tail of a zip of `total` bytes
/// (`tail` holds its last `tail.len()` bytes). The directory lies inside the file and is at
/// most [`MAX_DIRECTORY_BYTES`] long.
pub fn central_directory(tail: &[u8], total: u64) -> Result<(u64, u64), String> {
    const EOCD: u32 = 0x0605_4b50;
    let tail_start = total
        .checked_sub(tail.len() as u64)
        .ok_or("a tail longer than the file")?;
    let at = (0..=tail.len().saturating_sub(22))
        .rev()
        .find(|&i| u32_at(tail, i) == Some(EOCD))
        .ok_or("no end-of-central-directory record: not a zip file")?;
    let size = u32_at(tail, at + 12).ok_or("truncated record")?;
    let offset = u32_at(tail, at + 16).ok_or("truncated record")?;
    let (offset, size) = if size == u32::MAX || offset == u32::MAX {
        // ZIP64: the locator sits just before the record; its target must be in the tail.
        const LOCATOR: u32 = 0x0706_4b50;
        let locator = at.checked_sub(20).ok_or("truncated ZIP64 locator")?;
        if u32_at(tail, locator) != Some(LOCATOR) {
            return Err("a ZIP64 archive without a ZIP64 locator".into());
        }
        let record = u64_at(tail, locator + 8).ok_or("truncated ZIP64 locator")?;
        let record = record
            .checked_sub(tail_start)
            .and_then(|r| usize::try_from(r).ok())
            .filter(|&r| r < tail.len())
            .ok_or("a ZIP64 record outside the end of the archive")?;
        if u32_at(tail, record) != Some(0x0606_4b50) {
            return Err("a bad ZIP64 end-of-central-directory record".into());
        }
        let size = u64_at(tail, record + 40).ok_or("truncated ZIP64 record")?;
        let offset = u64_at(tail, record + 48).ok_or("truncated ZIP64 record")?;
        (offset, size)
    } else {
        (u64::from(offset), u64::from(size))
    };
    if offset.checked_add(size).is_none_or(|end| end > total) {
        return Err("the central directory lies outside the file".into());
    }
    if size > MAX_DIRECTORY_BYTES {
        return Err(format!(
            "a central directory of {size} bytes (ingle reads at most {MAX_DIRECTORY_BYTES})"
        ));
    }
    Ok((offset, size))
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
    offset
        .checked_add(LOCAL_HEADER_BYTES + name_len + extra_len)
        .ok_or_else(|| "a local file header past any file".into())
}

/// Checks that `member`'s local header and (from `data_start`, once known) its data lie
/// inside an archive of `total` bytes.
pub fn check_inside(member: &Member, data_start: Option<u64>, total: u64) -> Result<(), String> {
    let header_end = member.local_header_offset.checked_add(LOCAL_HEADER_BYTES);
    let data_end = data_start.map(|start| start.checked_add(member.compressed_size));
    if header_end.is_none_or(|end| end > total)
        || data_end.is_some_and(|end| end.is_none_or(|end| end > total))
    {
        return Err(format!(
            "`{}` lies outside the archive ({total} bytes)",
            member.name
        ));
    }
    Ok(())
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

    /// An end-of-central-directory record saying the directory is `size` bytes at `offset`,
    /// or with `zip64`, a ZIP64 record and locator saying so (the tail of a file of `total`
    /// bytes, which places the record).
    fn tail(offset: u64, size: u64, zip64: bool, total: u64) -> Vec<u8> {
        const ZIP64_TAIL_BYTES: u64 = 56 + 20 + 22;
        let mut t = Vec::new();
        if zip64 {
            t.extend(0x0606_4b50u32.to_le_bytes());
            t.extend([0; 36]);
            t.extend(size.to_le_bytes());
            t.extend(offset.to_le_bytes());
            t.extend(0x0706_4b50u32.to_le_bytes());
            t.extend(0u32.to_le_bytes());
            t.extend((total - ZIP64_TAIL_BYTES).to_le_bytes()); // the tail's first byte
            t.extend(1u32.to_le_bytes());
        }
        t.extend(0x0605_4b50u32.to_le_bytes());
        t.extend([0; 8]);
        let (size, offset) = if zip64 {
            (u32::MAX, u32::MAX)
        } else {
            (size as u32, offset as u32)
        };
        t.extend(size.to_le_bytes());
        t.extend(offset.to_le_bytes());
        t.extend([0; 2]);
        t
    }

    #[test]
    fn a_directory_outside_the_file_or_too_big_is_refused() {
        use super::central_directory as cd;
        let t = tail(0, 0, false, 22);
        assert_eq!(cd(&t, 22), Ok((0, 0)));
        let e = cd(&tail(10, 1000, false, 500), 500).unwrap_err();
        assert!(e.contains("outside the file"), "{e}");
        // ZIP64 values are 64 bits: near u64::MAX they must not overflow.
        let e = cd(&tail(u64::MAX - 1, 16, true, 98), 98).unwrap_err();
        assert!(e.contains("outside the file"), "{e}");
        assert_eq!(
            cd(&tail(0, 1 << 20, true, 2 << 20), 2 << 20),
            Ok((0, 1 << 20))
        );
        let total = 100 << 20;
        let e = cd(&tail(0, 32 << 20, true, total), total).unwrap_err();
        assert!(e.contains("at most"), "{e}");
        // A ZIP64 locator pointing outside the tail.
        let e = cd(&tail(0, 0, true, 1000), 2000).unwrap_err();
        assert!(e.contains("ZIP64"), "{e}");
        // A tail claiming more bytes than the file has.
        assert!(cd(&tail(0, 0, false, 22), 3).is_err());
        // A member whose data runs past the end.
        let member = super::Member {
            name: "m".into(),
            method: 8,
            crc32: 0,
            compressed_size: u64::MAX,
            size: 1,
            local_header_offset: 0,
        };
        assert!(super::check_inside(&member, None, 100).is_ok());
        assert!(super::check_inside(&member, Some(40), 100).is_err());
    }
}
