//! The device choice of the process (`INGLE_DEVICE`) and NVIDIA's libraries, shared by the two
//! engines that can use a GPU: llama.cpp's GPU modules (`backends::llama::gpu`) and ONNX
//! Runtime's CUDA execution provider (`backends::onnx`).
//!
//! Neither engine links CUDA: the packages carry no link to a library a machine may not have.
//! Before one calls CUDA, ingle loads the libraries it needs into the process (RTLD_GLOBAL) from
//! the dynamic loader's path, `INGLE_CUDA_PATH` (the Python package fills it with NVIDIA's
//! wheels' directories), `CUDA_HOME`/`CUDA_PATH`, or /usr/local/cuda; a library loaded so is what
//! a later `NEEDED` entry of the same name resolves to.
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The device choice the process was started with (`INGLE_DEVICE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requested {
    /// Unset or `auto`: every GPU backend that finds a device.
    Auto,
    /// No GPU at all.
    Cpu,
    /// Only this backend (`vulkan`, `cuda`), and an error where it finds no device.
    Only(&'static str),
}

impl Requested {
    /// `INGLE_DEVICE`'s value for it.
    pub fn name(self) -> &'static str {
        match self {
            Requested::Auto => "auto",
            Requested::Cpu => "cpu",
            Requested::Only(backend) => backend,
        }
    }

    /// Whether `backend` may be used.
    pub fn allows(self, backend: &str) -> bool {
        match self {
            Requested::Auto => true,
            Requested::Cpu => false,
            Requested::Only(b) => b == backend,
        }
    }
}

/// `INGLE_DEVICE`, read now; an error names the variable and its values.
pub fn requested() -> Result<Requested, String> {
    parse_requested(&std::env::var("INGLE_DEVICE").unwrap_or_default())
}

fn parse_requested(value: &str) -> Result<Requested, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "auto" => Ok(Requested::Auto),
        "cpu" => Ok(Requested::Cpu),
        "vulkan" => Ok(Requested::Only("vulkan")),
        "cuda" => Ok(Requested::Only("cuda")),
        other => Err(format!(
            "INGLE_DEVICE={}: expected cpu, vulkan, cuda or auto",
            crate::error::shown(other)
        )),
    }
}

/// Where CUDA's libraries are looked for after the dynamic loader's own path: the directories of
/// `INGLE_CUDA_PATH` (colon-separated), `CUDA_HOME`/`CUDA_PATH`'s `lib64` and `lib`, and
/// /usr/local/cuda/lib64.
pub fn cuda_search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("INGLE_CUDA_PATH")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            dirs.push(Path::new(&home).join("lib64"));
            dirs.push(Path::new(&home).join("lib"));
        }
    }
    dirs.push("/usr/local/cuda/lib64".into());
    dirs
}

/// Loads `libraries` into the process's global scope, where later calls find them: each by its
/// name (the dynamic loader's search path), else from one of [`cuda_search_dirs`]. `a|b` takes
/// the first of them found. The error names the first one missing, in the loader's words.
pub fn preload(libraries: &[&str]) -> Result<(), String> {
    let dirs = cuda_search_dirs();
    for library in libraries {
        let names: Vec<&str> = library.split('|').collect();
        let mut candidates: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        for name in &names {
            candidates.extend(
                dirs.iter()
                    .map(|d| d.join(name))
                    .filter(|p| p.is_file())
                    .map(|p| p.display().to_string()),
            );
        }
        let mut first_error = None;
        let loaded = candidates.iter().any(|candidate| {
            let Ok(c) = CString::new(candidate.as_bytes()) else {
                return false;
            };
            // SAFETY: dlopen of a driver or runtime library; it stays loaded for the process's life.
            let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if handle.is_null() {
                first_error.get_or_insert_with(dl_error);
            }
            !handle.is_null()
        });
        if !loaded {
            return Err(
                first_error.unwrap_or_else(|| format!("{} is not found", names.join(" or ")))
            );
        }
    }
    Ok(())
}

/// Whether NVIDIA's driver library (`libcuda.so.1`) is on this machine: `Err` says why not. Only
/// opened, not initialised (no GPU context is made); asked once per process.
pub fn cuda_driver() -> Result<(), String> {
    static DRIVER: OnceLock<Result<(), String>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            let name = CString::new("libcuda.so.1").expect("no NUL");
            // SAFETY: dlopen of NVIDIA's driver library, kept open; its initialisers make no context.
            let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
            if handle.is_null() {
                Err(dl_error())
            } else {
                Ok(())
            }
        })
        .clone()
}

/// The dynamic loader's last error, or a stand-in when it has none.
pub fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl call.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "cannot be opened".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingle_device_takes_four_values() {
        for (value, want) in [
            ("", Requested::Auto),
            ("auto", Requested::Auto),
            ("CPU", Requested::Cpu),
            (" vulkan ", Requested::Only("vulkan")),
            ("cuda", Requested::Only("cuda")),
        ] {
            assert_eq!(parse_requested(value).unwrap(), want, "{value:?}");
        }
        let e = parse_requested("rocm").unwrap_err();
        assert!(
            e.contains("INGLE_DEVICE=rocm: expected cpu, vulkan, cuda or auto"),
            "{e}"
        );
        assert!(Requested::Auto.allows("cuda") && !Requested::Cpu.allows("cuda"));
        assert!(!Requested::Only("vulkan").allows("cuda"));
    }

    #[test]
    fn a_missing_library_is_named_in_the_loaders_words() {
        let e = preload(&["libingle-no-such-library.so.7|libingle-nor-this.so"]).unwrap_err();
        assert!(e.contains("libingle-no-such-library.so.7"), "{e}");
    }
}
