fn main() {
    napi_build::setup();
    // llama.cpp's shared libraries and CPU modules lie next to ingle.node (build.js copies
    // them). DT_RPATH, not RUNPATH: it also finds libggml.so.0 when libllama.so.0 asks for it.
    if let Ok("linux" | "freebsd") = std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
        println!("cargo:rustc-cdylib-link-arg=-Wl,--disable-new-dtags");
    }
}
