// Gives libingle.so its soname (libingle.so.MAJOR), so programs linked against it load a
// compatible version; scripts/install-c lays out the matching symlinks.
fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    if let Ok("linux" | "freebsd") = std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libingle.so.{major}");
        // Dependencies are static archives (rlibs); none of their symbols is API. llguidance's
        // C FFI (`llg_*`, `#[no_mangle]`) would otherwise be exported next to `ingle_*`.
        println!("cargo:rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
        // llama.cpp's shared libraries and CPU modules lie next to libingle.so (scripts/install-c).
        // DT_RPATH, not RUNPATH: it also finds libggml.so.0 when libllama.so.0 asks for it.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
        println!("cargo:rustc-cdylib-link-arg=-Wl,--disable-new-dtags");
    }
}
