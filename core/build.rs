//! Lays out llama.cpp's runtime next to the binaries of this build.
//!
//! With `dynamic-backends`, llama.cpp and ggml are shared libraries (libllama.so.0,
//! libggml.so.0, libggml-base.so.0) and ggml's CPU kernels are modules, one per CPU generation
//! (libggml-cpu-haswell.so, libggml-cpu-zen4.so, ...), loaded at run time. This copies all of
//! them into the profile directory (target/release), where the CLI, libingle.so and the
//! bindings are built: those link with RUNPATH `$ORIGIN`, and their installers copy the same
//! files next to what they install. The modules' directory is also baked in, as a last resort
//! for binaries run from elsewhere in the build tree (tests under target/release/deps).
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let Ok(backends) = std::env::var("DEP_LLAMA_BACKENDS_DIR") else {
        return; // built without dynamic backends
    };
    println!("cargo:rerun-if-env-changed=DEP_LLAMA_BACKENDS_DIR");
    println!("cargo:rustc-env=INGLE_BUILD_BACKENDS_DIR={backends}");
    let backends = PathBuf::from(backends);
    let lib = backends
        .parent()
        .expect("backends dir has a parent")
        .join("lib");
    // OUT_DIR is <target>/<profile>/build/<crate>-<hash>/out.
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let Some(profile_dir) = out.ancestors().nth(3) else {
        return;
    };
    let mut copied = 0;
    for dir in [&lib, &backends] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(target) = runtime_name(dir == &backends, &path, &name) {
                println!("cargo:rerun-if-changed={}", path.display());
                copy_fresh(&path, &profile_dir.join(target));
                copied += 1;
            }
        }
    }
    assert!(
        copied > 0,
        "no llama.cpp runtime found in {}",
        lib.display()
    );
}

/// The name a runtime file is installed under, or None if it is not one. Shared libraries
/// are found by their soname (`libllama.so.0`), which is what the binaries ask for.
fn runtime_name(is_module: bool, path: &Path, name: &str) -> Option<String> {
    if is_module {
        return (name.starts_with("libggml-cpu-") && name.ends_with(".so")).then(|| name.into());
    }
    // libllama.so -> libllama.so.0 -> libllama.so.0.0.1234: keep the real file, named by soname.
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() || !name.starts_with("lib") {
        return None;
    }
    let (stem, version) = name.split_once(".so.")?;
    let major = version.split('.').next()?;
    Some(format!("{stem}.so.{major}"))
}

/// Copies to a new inode, so a process that has the old file mapped keeps it intact.
fn copy_fresh(from: &Path, to: &Path) {
    let _ = std::fs::remove_file(to);
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("copy {} -> {}: {e}", from.display(), to.display()));
}
