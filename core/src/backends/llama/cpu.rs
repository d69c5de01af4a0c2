//! Runtime CPU dispatch: loads the build of ggml's CPU kernels that suits this machine.
//!
//! llama.cpp is built once with every x86 variant of its CPU backend (`GGML_CPU_ALL_VARIANTS`:
//! libggml-cpu-sse42.so, -haswell, -skylakex, -icelake, -zen4, -alderlake, ...), each
//! compiled for one CPU generation. Each module exports `ggml_backend_score`, which checks the
//! CPU (cpuid and the OS's saved state) and returns 0 when the machine cannot run it, else a
//! score that grows with the features it uses. ingle scores every module in the directory of
//! libggml.so.0 and loads the best, as ggml's own `ggml_backend_load_all` does, with two
//! differences: the AMX variant (sapphirerapids) is considered only on CPUs where ingle's
//! multi-token test has passed with it ([`AMX_PROVEN`]: Emerald Rapids), or with
//! `INGLE_CPU_AMX=1` (`INGLE_CPU_AMX=0` leaves it out everywhere), because llama.cpp's AMX path
//! has crashed on multi-token batches on other Xeons (ggml-org/llama.cpp#20824; docs/speed.md);
//! and `INGLE_CPU_VARIANT=haswell` (say) forces one variant, with an error if the CPU cannot
//! run it. `INGLE_BACKENDS_DIR` names another directory.
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The CPU backend ingle loaded, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CpuBackend {
    /// The variant's name: `zen4`, `haswell`, `skylakex`...
    pub variant: String,
    /// The module loaded.
    pub path: PathBuf,
    /// `best` (the highest score this CPU runs) or `INGLE_CPU_VARIANT`.
    pub chosen_by: String,
    /// Every variant found, with its score on this machine (0: this CPU cannot run it).
    pub scores: Vec<(String, i32)>,
    /// Variants found but not considered, with the reason.
    pub excluded: Vec<(String, String)>,
    /// What llama.cpp reports of the kernels it runs (`llama_print_system_info`).
    pub features: String,
}

const MODULE_PREFIX: &str = "libggml-cpu-";
const MODULE_SUFFIX: &str = ".so";
/// llama.cpp's AMX kernels are only in this variant.
const AMX_VARIANT: &str = "sapphirerapids";
/// Intel family-6 CPU models on which AMX was proven (tests/tests/cpu_dispatch.rs with
/// `INGLE_CPU_AMX=1`: a 647-token batch gives the logits of token-by-token decoding, with
/// llama.cpp's AMX kernels, on 2 and 16 cores): 207 is Emerald Rapids. Not Sapphire Rapids
/// (143), where llama.cpp#20824 crashed and Ollama measured AMX slower, nor Granite Rapids
/// (173, 174; llama.cpp#26954), until a test passes there.
const AMX_PROVEN: &[u32] = &[207];

/// Whether AMX may be used here: `INGLE_CPU_AMX=1`/`0` decide, else the CPU model.
fn amx_allowed() -> (bool, String) {
    match std::env::var("INGLE_CPU_AMX").as_deref() {
        Ok("1") => return (true, String::new()),
        Ok("0") => return (false, "AMX is off: INGLE_CPU_AMX=0".to_string()),
        _ => {}
    }
    let model = intel_family6_model();
    if model.is_some_and(|m| AMX_PROVEN.contains(&m)) {
        return (true, String::new());
    }
    let cpu = model.map_or("this CPU".to_string(), |m| {
        format!("Intel family 6 model {m}")
    });
    (
        false,
        format!(
            "AMX is proven only on Intel family 6 models {AMX_PROVEN:?} (Emerald Rapids), not \
             on {cpu} (llama.cpp#20824); INGLE_CPU_AMX=1 turns it on"
        ),
    )
}

/// The model number of an Intel family-6 CPU, from /proc/cpuinfo (None on other CPUs).
pub fn intel_family6_model() -> Option<u32> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split(':').nth(1))
            .map(str::trim)
    };
    if field("vendor_id")? != "GenuineIntel" || field("cpu family")? != "6" {
        return None;
    }
    field("model")?.parse().ok()
}

/// Loads the CPU backend once per process; later calls return the first outcome.
pub fn load() -> Result<&'static CpuBackend, String> {
    static LOADED: OnceLock<Result<CpuBackend, String>> = OnceLock::new();
    LOADED.get_or_init(load_best).as_ref().map_err(Clone::clone)
}

fn load_best() -> Result<CpuBackend, String> {
    let dir = modules_dir()?;
    let mut modules = modules_in(&dir);
    modules.sort();
    let (allow_amx, amx_off) = amx_allowed();
    let forced = std::env::var("INGLE_CPU_VARIANT")
        .ok()
        .filter(|v| !v.is_empty());
    let mut scores = Vec::new();
    let mut excluded = Vec::new();
    for (name, path) in &modules {
        if name == AMX_VARIANT && !allow_amx && forced.as_deref() != Some(name) {
            excluded.push((name.clone(), amx_off.clone()));
            continue;
        }
        scores.push((name.clone(), score(path)?));
    }
    let (variant, chosen_by) = match &forced {
        Some(want) => {
            let Some((_, s)) = scores.iter().find(|(n, _)| n == want) else {
                let names: Vec<&str> = modules.iter().map(|(n, _)| n.as_str()).collect();
                return Err(format!(
                    "INGLE_CPU_VARIANT={want}: no such CPU variant in {} (there are: {})",
                    dir.display(),
                    names.join(", ")
                ));
            };
            if *s == 0 {
                return Err(format!(
                    "INGLE_CPU_VARIANT={want}: this CPU cannot run that variant (it lacks \
                     instructions the variant uses)"
                ));
            }
            (want.clone(), "INGLE_CPU_VARIANT".to_string())
        }
        None => {
            // The first of the highest: modules are sorted, so the choice is stable.
            let best = scores.iter().filter(|(_, s)| *s > 0).fold(
                None,
                |best: Option<&(String, i32)>, c| match best {
                    Some(b) if b.1 >= c.1 => Some(b),
                    _ => Some(c),
                },
            );
            let Some((name, _)) = best else {
                return Err(format!(
                    "none of llama.cpp's CPU variants in {} runs on this CPU (scores: {scores:?})",
                    dir.display()
                ));
            };
            (name.clone(), "best".to_string())
        }
    };
    let path = modules
        .iter()
        .find(|(n, _)| *n == variant)
        .map(|(_, p)| p.clone())
        .unwrap();
    let c_path = CString::new(path.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path; ggml registers the backend in its process-wide registry.
    let reg = unsafe { llama_cpp_sys_2::ggml_backend_load(c_path.as_ptr()) };
    if reg.is_null() {
        return Err(format!(
            "llama.cpp could not load its CPU backend {}",
            path.display()
        ));
    }
    // SAFETY: returns a static NUL-terminated string.
    let features = unsafe { CStr::from_ptr(llama_cpp_sys_2::llama_print_system_info()) }
        .to_string_lossy()
        .trim()
        .to_string();
    Ok(CpuBackend {
        variant,
        path,
        chosen_by,
        scores,
        excluded,
        features,
    })
}

/// Where the modules are: `INGLE_BACKENDS_DIR`, else next to the libggml.so.0 this process
/// loaded (installed layouts), else where the build put them (binaries in the build tree).
fn modules_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("INGLE_BACKENDS_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if modules_in(&dir).is_empty() {
            return Err(format!(
                "INGLE_BACKENDS_DIR={}: no llama.cpp CPU module ({MODULE_PREFIX}*{MODULE_SUFFIX}) there",
                dir.display()
            ));
        }
        return Ok(dir);
    }
    let mut looked = Vec::new();
    let candidates = [
        loaded_ggml_dir(),
        option_env!("INGLE_BUILD_BACKENDS_DIR").map(PathBuf::from),
    ];
    for dir in candidates.into_iter().flatten() {
        if !modules_in(&dir).is_empty() {
            return Ok(dir);
        }
        looked.push(dir.display().to_string());
    }
    Err(format!(
        "no llama.cpp CPU module ({MODULE_PREFIX}*{MODULE_SUFFIX}) found (looked in: {}); they are \
         installed next to libggml.so.0, or set INGLE_BACKENDS_DIR",
        if looked.is_empty() { "nowhere".to_string() } else { looked.join(", ") }
    ))
}

/// The CPU modules in `dir`: (variant name, path).
fn modules_in(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let variant = name
                .strip_prefix(MODULE_PREFIX)?
                .strip_suffix(MODULE_SUFFIX)?;
            Some((variant.to_string(), e.path()))
        })
        .collect()
}

/// The directory of the libggml.so.0 this process uses, found by soname (it is loaded
/// already: ingle links it), then by the address of one of its functions.
fn loaded_ggml_dir() -> Option<PathBuf> {
    let soname = CString::new("libggml.so.0").ok()?;
    let symbol = CString::new("ggml_backend_load").ok()?;
    // SAFETY: RTLD_NOLOAD only returns a handle to a library already loaded, and takes a
    // reference that dlclose gives back; dladdr fills `info` with static strings.
    unsafe {
        let handle = libc::dlopen(soname.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if handle.is_null() {
            return None;
        }
        let address = libc::dlsym(handle, symbol.as_ptr());
        let mut info: libc::Dl_info = std::mem::zeroed();
        let found = !address.is_null()
            && libc::dladdr(address, &mut info) != 0
            && !info.dli_fname.is_null();
        let path = found.then(|| {
            PathBuf::from(
                CStr::from_ptr(info.dli_fname)
                    .to_string_lossy()
                    .into_owned(),
            )
        });
        libc::dlclose(handle);
        let path = path?;
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        path.parent().map(Path::to_path_buf)
    }
}

/// The module's own verdict on this CPU (0: cannot run here). Loading a module runs none of
/// its kernels, so every variant can be asked, as ggml's loader does.
fn score(path: &Path) -> Result<i32, String> {
    let c_path = CString::new(path.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
    let symbol = CString::new("ggml_backend_score").unwrap();
    // SAFETY: dlopen/dlsym/dlclose on a ggml module; `ggml_backend_score` is `int (void)`.
    unsafe {
        let handle = libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if handle.is_null() {
            let reason = libc::dlerror();
            let reason = if reason.is_null() {
                String::new()
            } else {
                CStr::from_ptr(reason as *const c_char)
                    .to_string_lossy()
                    .into_owned()
            };
            return Err(format!(
                "cannot open llama.cpp CPU module {}: {reason}",
                path.display()
            ));
        }
        let f = libc::dlsym(handle, symbol.as_ptr());
        let s = if f.is_null() {
            0
        } else {
            let f: extern "C" fn() -> c_int = std::mem::transmute::<*mut c_void, _>(f);
            f()
        };
        libc::dlclose(handle);
        Ok(s)
    }
}
