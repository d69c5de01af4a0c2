// llama.cpp's shared libraries and CPU modules lie next to the extension module in the
// package (scripts/test-python copies them there before maturin builds the wheel). DT_RPATH,
// not RUNPATH: it also finds libggml.so.0 when libllama.so.0 asks for it.
fn main() {
    if let Ok("linux" | "freebsd") = std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
        println!("cargo:rustc-cdylib-link-arg=-Wl,--disable-new-dtags");
    }
}
