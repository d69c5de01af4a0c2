// llama.cpp's shared libraries and CPU modules lie next to the `ingle` binary (core/build.rs
// puts them in target/<profile>). DT_RPATH, not RUNPATH: it also finds libggml.so.0 when
// libllama.so.0 asks for it.
fn main() {
    if let Ok("linux" | "freebsd") = std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN");
        println!("cargo:rustc-link-arg-bins=-Wl,--disable-new-dtags");
    }
}
