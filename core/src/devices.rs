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
        // The loader's words for the bare name ("cannot open shared object file"), unless a
        // copy found on disk failed for a reason of its own (a dependency of it missing).
        let (mut by_name, mut on_disk) = (None, None);
        let loaded = candidates.iter().any(|candidate| {
            let Ok(c) = CString::new(candidate.as_bytes()) else {
                return false;
            };
            // SAFETY: dlopen of a driver or runtime library; it stays loaded for the process's life.
            let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if handle.is_null() {
                let slot = if candidate.contains('/') {
                    &mut on_disk
                } else {
                    &mut by_name
                };
                slot.get_or_insert_with(dl_error);
            }
            !handle.is_null()
        });
        if !loaded {
            return Err((on_disk.or(by_name))
                .unwrap_or_else(|| format!("{} is not found", names.join(" or "))));
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

/// Whether CUDA may be used by default here: `INGLE_DEVICE` allows it and NVIDIA's driver is on
/// the machine. What picks ONNX Runtime's GPU build and pulls it along.
pub fn cuda_allowed_and_driver() -> bool {
    requested().is_ok_and(|r| r.allows("cuda")) && cuda_driver().is_ok()
}

/// The oldest NVIDIA GPU generation CUDA 13 builds for (Turing, compute capability 7.5): on an
/// older GPU a CUDA 13 library loads, makes its session, and fails at its first run.
pub const CUDA_13_MIN_COMPUTE: (i32, i32) = (7, 5);

/// Asks NVIDIA's driver for its GPUs: `Ok` when GPU 0 is of compute capability
/// [`CUDA_13_MIN_COMPUTE`] or newer, else why not. Initialises the driver (`cuInit`), which
/// makes no context on a GPU. Needs [`cuda_driver`] to have found the library.
pub fn cuda_device() -> Result<(), String> {
    type CuInit = unsafe extern "C" fn(u32) -> i32;
    type CuDeviceGetCount = unsafe extern "C" fn(*mut i32) -> i32;
    type CuDeviceGetAttribute = unsafe extern "C" fn(*mut i32, i32, i32) -> i32;
    const MAJOR: i32 = 75; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    const MINOR: i32 = 76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
    static DEVICE: OnceLock<Result<(), String>> = OnceLock::new();
    DEVICE
        .get_or_init(|| {
            cuda_driver()?;
            let name = CString::new("libcuda.so.1").expect("no NUL");
            // SAFETY: the driver library is open (cuda_driver); the symbols are CUDA's driver
            // API, whose signatures are stable since CUDA 2, called with valid pointers.
            unsafe {
                let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
                let symbol = |s: &str| {
                    let c = CString::new(s).expect("no NUL");
                    let p = libc::dlsym(handle, c.as_ptr());
                    (!p.is_null())
                        .then_some(p)
                        .ok_or_else(|| format!("libcuda.so.1 has no {s}: not NVIDIA's driver"))
                };
                let init: CuInit = std::mem::transmute(symbol("cuInit")?);
                let count: CuDeviceGetCount = std::mem::transmute(symbol("cuDeviceGetCount")?);
                let attribute: CuDeviceGetAttribute =
                    std::mem::transmute(symbol("cuDeviceGetAttribute")?);
                let status = init(0);
                if status != 0 {
                    return Err(format!(
                        "NVIDIA's driver did not start (cuInit: CUDA error {status})"
                    ));
                }
                let mut devices = 0;
                if count(&mut devices) != 0 || devices == 0 {
                    return Err("NVIDIA's driver reports no GPU".into());
                }
                // GPU 0: the one ONNX Runtime's CUDA provider runs on by default.
                let (mut major, mut minor) = (0, 0);
                attribute(&mut major, MAJOR, 0);
                attribute(&mut minor, MINOR, 0);
                if (major, minor) < CUDA_13_MIN_COMPUTE {
                    return Err(format!(
                        "NVIDIA GPU 0 has compute capability {major}.{minor}; CUDA 13 needs {}.{} \
                         (Turing) or newer",
                        CUDA_13_MIN_COMPUTE.0, CUDA_13_MIN_COMPUTE.1
                    ));
                }
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
