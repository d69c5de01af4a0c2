//! A wheel (ZIP) as `ingle pull` reads one by range requests: the end record, the central
//! directory, each member's local header. What it accepts lies inside the file.
#![no_main]
use ingle::parsers::zip;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|file: &[u8]| {
    let total = file.len() as u64;
    let tail = &file[file.len().saturating_sub(zip::TAIL_BYTES as usize)..];
    let Ok((offset, size)) = zip::central_directory(tail, total) else {
        return;
    };
    assert!(offset + size <= total && size <= zip::MAX_DIRECTORY_BYTES);
    let directory = &file[offset as usize..(offset + size) as usize];
    let Ok(members) = zip::members(directory) else {
        return;
    };
    for member in &members {
        if zip::check_inside(member, None, total).is_err() {
            continue;
        }
        let at = member.local_header_offset as usize;
        let header = &file[at..at + zip::LOCAL_HEADER_BYTES as usize];
        let Ok(start) = zip::data_start(header, member.local_header_offset) else {
            continue;
        };
        if zip::check_inside(member, Some(start), total).is_ok() {
            assert!(start + member.compressed_size <= total);
        }
    }
});
