// Gives libingle.so its soname (libingle.so.MAJOR), so programs linked against it load a
// compatible version; scripts/install-c lays out the matching symlinks.
fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    if let Ok("linux" | "freebsd") = std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libingle.so.{major}");
    }
}
