//! A model catalog (`$INGLE_CATALOG`): loaded and ordered, or refused with the reason, in time
//! linear in its requirements, never a panic or a stack overflow.
#![no_main]
use ingle::pull::catalog::Catalog;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(catalog) = Catalog::from_toml(text) {
        for tag in catalog.tags() {
            let ordered = catalog
                .with_requirements(tag)
                .expect("a loaded catalog has no circle");
            assert_eq!(ordered.last().map(|e| e.tag.as_str()), Some(tag));
        }
    }
});
