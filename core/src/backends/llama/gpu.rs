//! GPU backends: llama.cpp's Vulkan and CUDA kernels as modules, loaded at start like the CPU
//! kernels (`cpu.rs`), so one package runs on the GPU when the machine has one and on the CPU
//! when not, with nothing to choose at install time.
//!
//! `scripts/build-gpu-modules` builds `libggml-vulkan.so` and `libggml-cuda.so` from the same
//! llama.cpp source and puts them next to the CPU modules. At start ingle loads each module
//! that is there; one whose driver or runtime is missing (no `libvulkan.so.1`, no CUDA) is
//! skipped with one log line, never an error. A loaded module reports its devices; models offload
//! their layers to them ([`Offload`]).
//!
//! `INGLE_DEVICE` forces a choice: `cpu` loads no GPU module; `vulkan` or `cuda` loads only that
//! one and is an error where it has no device. ggml's Vulkan backend leaves out CPU-type devices
//! (Mesa's software lavapipe) unless asked; with `INGLE_DEVICE=vulkan` and no Vulkan GPU, ingle
//! asks for them (GGML_VK_VISIBLE_DEVICES), which is how the tests run Vulkan on any machine.
use crate::devices::{dl_error, preload, requested, Requested};
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;
use std::sync::OnceLock;

/// A device a GPU module reported.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GpuDevice {
    /// ggml's index of the device (across all backends), which llama.cpp's model params take.
    #[serde(skip)]
    pub ggml_index: usize,
    /// ggml's name: `Vulkan0`, `CUDA0`.
    pub name: String,
    /// The device's own name: `NVIDIA H100 80GB HBM3`, `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub description: String,
    /// `Vulkan` or `CUDA`.
    pub backend: String,
    pub memory_total: u64,
    /// Free when `system_info()` was called.
    pub memory_free: u64,
}

/// What GPU modules ingle loaded, skipped, and the devices they gave.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GpuBackends {
    /// `INGLE_DEVICE` (`auto` when unset).
    pub requested: String,
    /// Modules loaded: (backend, path).
    pub loaded: Vec<(String, String)>,
    /// Modules not loaded, and why (not built into this package, no driver, no device).
    pub skipped: Vec<(String, String)>,
    pub devices: Vec<GpuDevice>,
}

/// A GPU module ingle knows.
struct Module {
    /// `INGLE_DEVICE`'s name for it.
    backend: &'static str,
    file: &'static str,
    /// The driver and runtime libraries it calls, loaded (RTLD_GLOBAL) before it (`a|b`: the
    /// first of them found). The modules
    /// do not name them as dependencies (`scripts/build-gpu-modules` removes them), so that the
    /// packages carry no link to a library a machine may not have, and so that ingle can look
    /// for them where NVIDIA's wheels put them (`INGLE_CUDA_PATH`).
    libraries: &'static [&'static str],
}

const MODULES: &[Module] = &[
    Module {
        backend: "cuda",
        file: "libggml-cuda.so",
        // CUDA 13 (what scripts/build-gpu-modules builds with from NVIDIA's wheels), else 12
        // (a module built against a system CUDA 12).
        libraries: &[
            "libcuda.so.1",
            "libcudart.so.13|libcudart.so.12",
            "libcublasLt.so.13|libcublasLt.so.12",
            "libcublas.so.13|libcublas.so.12",
        ],
    },
    Module {
        backend: "vulkan",
        file: "libggml-vulkan.so",
        libraries: &["libvulkan.so.1"],
    },
];

static LOADED: OnceLock<Result<GpuBackends, String>> = OnceLock::new();

/// Loads the GPU modules once per process (after the CPU module); later calls return the
/// first outcome. An error only where `INGLE_DEVICE` asked for a backend that has no device.
pub fn load(modules_dir: &Path) -> Result<&'static GpuBackends, String> {
    LOADED
        .get_or_init(|| load_all(modules_dir))
        .as_ref()
        .map_err(Clone::clone)
}

/// The outcome of [`load`], once it has run.
pub fn loaded() -> Option<&'static GpuBackends> {
    LOADED.get().and_then(|r| r.as_ref().ok())
}

fn load_all(dir: &Path) -> Result<GpuBackends, String> {
    let requested = requested()?;
    let mut out = GpuBackends {
        requested: requested.name().into(),
        loaded: Vec::new(),
        skipped: Vec::new(),
        devices: Vec::new(),
    };
    for module in MODULES {
        let backend = &module.backend;
        let path = dir.join(module.file);
        if !requested.allows(backend) {
            out.skipped.push((
                backend.to_string(),
                format!("INGLE_DEVICE={}", out.requested),
            ));
            continue;
        }
        if !path.is_file() {
            let why = format!("not in this build ({} is not there)", path.display());
            if requested == Requested::Only(backend) {
                return Err(format!(
                    "INGLE_DEVICE={backend}: {why}; scripts/build-gpu-modules {backend} builds it"
                ));
            }
            out.skipped.push((backend.to_string(), why));
            continue;
        }
        if *backend == "vulkan" && requested == Requested::Only("vulkan") {
            include_software_vulkan();
        }
        match preload(module.libraries).and_then(|()| load_module(&path)) {
            Err(why) => {
                // The one line a machine without the driver gets.
                log_skip(backend, &why);
                if requested == Requested::Only(backend) {
                    return Err(format!("INGLE_DEVICE={backend}: {why}"));
                }
                out.skipped.push((backend.to_string(), why));
            }
            Ok(mut devices) => {
                // An NVIDIA GPU is seen by both modules (CUDA is loaded first): it is CUDA's.
                let seen = |d: &GpuDevice| {
                    out.devices
                        .iter()
                        .any(|c| c.description.eq_ignore_ascii_case(&d.description))
                };
                let found = devices.len();
                devices.retain(|d| !seen(d));
                let why = if found > 0 {
                    format!("its {found} device(s) are the CUDA backend's")
                } else {
                    "no device".to_string()
                };
                if devices.is_empty() {
                    log_skip(backend, &why);
                    if requested == Requested::Only(backend) {
                        return Err(format!(
                            "INGLE_DEVICE={backend}: the module loaded but found no device"
                        ));
                    }
                    out.skipped.push((backend.to_string(), why));
                    continue;
                }
                out.loaded
                    .push((backend.to_string(), path.display().to_string()));
                out.devices.extend(devices);
            }
        }
    }
    Ok(out)
}

/// Loads one module into ggml's registry and returns its GPU devices. The module is opened
/// first on its own, so that a missing driver library is reported in the dynamic loader's
/// words rather than failing inside ggml.
fn load_module(path: &Path) -> Result<Vec<GpuDevice>, String> {
    let c_path = CString::new(path.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: dlopen/dlclose of a ggml module; loading runs only its static initialisers.
    unsafe {
        let handle = libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if handle.is_null() {
            return Err(dl_error());
        }
        libc::dlclose(handle);
    }
    // SAFETY: a NUL-terminated path; ggml keeps the registration for the process's life.
    let reg = unsafe { llama_cpp_sys_2::ggml_backend_load(c_path.as_ptr()) };
    if reg.is_null() {
        return Err(format!("llama.cpp could not load {}", path.display()));
    }
    let mut devices = Vec::new();
    // SAFETY: `reg` is a live registration; device pointers and their strings are static.
    unsafe {
        let backend = c_string(llama_cpp_sys_2::ggml_backend_reg_name(reg));
        for i in 0..llama_cpp_sys_2::ggml_backend_reg_dev_count(reg) {
            let dev = llama_cpp_sys_2::ggml_backend_reg_dev_get(reg, i);
            let kind = llama_cpp_sys_2::ggml_backend_dev_type(dev);
            if kind != llama_cpp_sys_2::GGML_BACKEND_DEVICE_TYPE_GPU
                && kind != llama_cpp_sys_2::GGML_BACKEND_DEVICE_TYPE_IGPU
            {
                continue;
            }
            let ggml_index = (0..llama_cpp_sys_2::ggml_backend_dev_count())
                .find(|&j| llama_cpp_sys_2::ggml_backend_dev_get(j) == dev)
                .ok_or("a device ggml registered is not in its device list")?;
            devices.push(GpuDevice {
                ggml_index,
                name: c_string(llama_cpp_sys_2::ggml_backend_dev_name(dev)),
                description: c_string(llama_cpp_sys_2::ggml_backend_dev_description(dev)),
                backend: backend.clone(),
                // Asked when needed (`memory`): CUDA makes a context on the GPU to answer.
                memory_total: 0,
                memory_free: 0,
            });
        }
    }
    Ok(devices)
}

/// With `INGLE_DEVICE=vulkan` on a machine whose only Vulkan devices are CPU-type (Mesa's
/// lavapipe), names them in GGML_VK_VISIBLE_DEVICES, which ggml's Vulkan backend otherwise
/// leaves out. A GGML_VK_VISIBLE_DEVICES the user set is kept.
fn include_software_vulkan() {
    if std::env::var_os("GGML_VK_VISIBLE_DEVICES").is_some() {
        return;
    }
    let Ok(kinds) = vulkan_device_types() else {
        return; // the module's load reports what is wrong
    };
    const CPU_TYPE: u32 = 4; // VK_PHYSICAL_DEVICE_TYPE_CPU
    if kinds.is_empty() || kinds.iter().any(|&k| k != CPU_TYPE) {
        return; // ggml's own choice (its GPUs) stands
    }
    let all: Vec<String> = (0..kinds.len()).map(|i| i.to_string()).collect();
    // SAFETY (set_var): once, under the OnceLock of `load`, before the module reads it; the
    // variable is read by nothing else in the process.
    std::env::set_var("GGML_VK_VISIBLE_DEVICES", all.join(","));
}

/// The `VkPhysicalDeviceType` of each Vulkan device, asked of the Vulkan loader directly.
fn vulkan_device_types() -> Result<Vec<u32>, String> {
    #[repr(C)]
    struct InstanceCreateInfo {
        s_type: u32,
        p_next: *const c_void,
        flags: u32,
        p_application_info: *const c_void,
        enabled_layer_count: u32,
        pp_enabled_layer_names: *const *const c_char,
        enabled_extension_count: u32,
        pp_enabled_extension_names: *const *const c_char,
    }
    type CreateInstance =
        unsafe extern "C" fn(*const InstanceCreateInfo, *const c_void, *mut *mut c_void) -> i32;
    type DestroyInstance = unsafe extern "C" fn(*mut c_void, *const c_void);
    type EnumerateDevices = unsafe extern "C" fn(*mut c_void, *mut u32, *mut *mut c_void) -> i32;
    type DeviceProperties = unsafe extern "C" fn(*mut c_void, *mut u8);
    // SAFETY: the Vulkan 1.0 entry points with their C signatures; the properties struct
    // (824 bytes on x86-64) is written into a larger, 8-aligned buffer, and only its
    // `deviceType` (a u32 at offset 16) is read.
    unsafe {
        let lib = libloading::Library::new("libvulkan.so.1").map_err(|e| e.to_string())?;
        let create: libloading::Symbol<CreateInstance> =
            lib.get(b"vkCreateInstance\0").map_err(|e| e.to_string())?;
        let destroy: libloading::Symbol<DestroyInstance> =
            lib.get(b"vkDestroyInstance\0").map_err(|e| e.to_string())?;
        let enumerate: libloading::Symbol<EnumerateDevices> = lib
            .get(b"vkEnumeratePhysicalDevices\0")
            .map_err(|e| e.to_string())?;
        let properties: libloading::Symbol<DeviceProperties> = lib
            .get(b"vkGetPhysicalDeviceProperties\0")
            .map_err(|e| e.to_string())?;
        let info = InstanceCreateInfo {
            s_type: 1, // VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO
            p_next: std::ptr::null(),
            flags: 0,
            p_application_info: std::ptr::null(),
            enabled_layer_count: 0,
            pp_enabled_layer_names: std::ptr::null(),
            enabled_extension_count: 0,
            pp_enabled_extension_names: std::ptr::null(),
        };
        let mut instance = std::ptr::null_mut();
        if create(&info, std::ptr::null(), &mut instance) != 0 {
            return Err("vkCreateInstance failed".into());
        }
        let mut count = 0u32;
        let mut devices = Vec::new();
        if enumerate(instance, &mut count, std::ptr::null_mut()) == 0 && count > 0 {
            devices = vec![std::ptr::null_mut(); count as usize];
            if enumerate(instance, &mut count, devices.as_mut_ptr()) != 0 {
                devices.clear();
            }
            devices.truncate(count as usize);
        }
        let mut kinds = Vec::new();
        for device in devices {
            let mut buffer = [0u64; 256];
            properties(device, buffer.as_mut_ptr().cast());
            let bytes = std::slice::from_raw_parts(buffer.as_ptr().cast::<u8>(), 20);
            kinds.push(u32::from_ne_bytes(bytes[16..20].try_into().unwrap()));
        }
        destroy(instance, std::ptr::null());
        Ok(kinds)
    }
}

/// The one line a skipped module gets, among ingle's logs (`INGLE_LOG`); `system_info()` says
/// it too.
fn log_skip(backend: &str, why: &str) {
    if std::env::var_os("INGLE_LOG").is_some_and(|v| !v.is_empty()) {
        eprintln!("ingle: the {backend} backend is skipped: {why}");
    }
}

/// SAFETY: `p` is null or a NUL-terminated string.
unsafe fn c_string(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Where a chat model's layers go: how many to which GPU (none: all on the CPU).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Offload {
    /// The model's tag.
    pub model: String,
    /// The GPU's ggml name (`Vulkan0`), or None on the CPU.
    pub device: Option<String>,
    /// Layers on the GPU, of `layers_total` (the output layer counts as one more).
    pub layers: u32,
    pub layers_total: u32,
    /// `n_gpu_layers` (the config's number), `fit` (all that fit), `no GPU`.
    pub chosen_by: String,
}

static OFFLOADS: std::sync::Mutex<Vec<Offload>> = std::sync::Mutex::new(Vec::new());

/// The offload of every chat model loaded so far in this process, the latest per tag.
pub fn offloads() -> Vec<Offload> {
    OFFLOADS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn record(offload: &Offload) {
    let mut all = OFFLOADS.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|o| o.model != offload.model);
    all.push(offload.clone());
}

/// A device's free and total memory now (models loaded hold some).
pub fn memory(device: &GpuDevice) -> (u64, u64) {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: `ggml_index` is a registered device; the call fills two integers.
    unsafe {
        let dev = llama_cpp_sys_2::ggml_backend_dev_get(device.ggml_index);
        llama_cpp_sys_2::ggml_backend_dev_memory(dev, &mut free, &mut total);
    }
    (free as u64, total as u64)
}

fn free_now(device: &GpuDevice) -> u64 {
    memory(device).0
}

/// The outcome of [`load`] with each device's memory as it is now.
pub fn with_memory() -> Option<GpuBackends> {
    let mut backends = loaded()?.clone();
    for device in &mut backends.devices {
        (device.memory_free, device.memory_total) = memory(device);
    }
    Some(backends)
}

/// The sizes that decide an offload, in bytes: the weights and the KV cache of all sequences.
pub struct ModelSize {
    pub n_layer: u32,
    pub weights: u64,
    pub kv_cache: u64,
}

/// Kept free on the device for llama.cpp's compute buffers and the driver: 256 MiB, or 1/20 of
/// the device where that is more.
fn reserve(device: &GpuDevice) -> u64 {
    (256u64 << 20).max(memory(device).1 / 20)
}

/// The GPU `device` option names (by index, ggml name or a part of its description), else
/// the one with the most free memory; None without a GPU.
fn chosen_device<'a>(
    config: &crate::config::PredictorConfig,
    devices: &'a [GpuDevice],
) -> crate::Result<Option<&'a GpuDevice>> {
    use crate::error::{shown, Error};
    let tag = shown(&config.tag);
    let device = match &super::options_of(config).device {
        Some(wanted) => {
            let wanted_lower = wanted.trim().to_lowercase();
            if wanted_lower == "cpu" {
                return Ok(None);
            }
            // An index (digits only), else a ggml name, else a part of a description: in
            // that order over all GPUs, so `1` is the second GPU, not the first whose name
            // has a 1 in it.
            let found = if wanted_lower.chars().all(|c| c.is_ascii_digit()) {
                wanted_lower
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| devices.get(i))
            } else {
                devices
                    .iter()
                    .find(|d| d.name.to_lowercase() == wanted_lower)
                    .or_else(|| {
                        devices.iter().find(|d| {
                            !wanted_lower.is_empty()
                                && d.description.to_lowercase().contains(&wanted_lower)
                        })
                    })
            };
            match found {
                Some(d) => Some(d),
                None if devices.is_empty() => {
                    return Err(Error::invalid(
                        "device",
                        format!(
                            "`device` of `{tag}` is `{}`, but this process has no GPU ({})",
                            shown(wanted),
                            why_no_gpu()
                        ),
                    ))
                }
                None => {
                    let names: Vec<String> = devices
                        .iter()
                        .enumerate()
                        .map(|(i, d)| format!("{i}: {} ({})", d.name, d.description))
                        .collect();
                    return Err(Error::invalid(
                        "device",
                        format!(
                            "`device` of `{tag}` is `{}`, which names none of the GPUs: {}",
                            shown(wanted),
                            names.join(", ")
                        ),
                    ));
                }
            }
        }
        None => devices.iter().max_by_key(|d| free_now(d)),
    };
    Ok(device)
}

/// An error unless the `device` option names a GPU of this process (loading the GPU modules if
/// they are not yet): the config is checked before its model loads.
pub fn check_device(config: &crate::config::PredictorConfig) -> crate::Result<()> {
    match super::options_of(config).device.as_deref().map(str::trim) {
        None => return Ok(()),
        Some(d) if d.eq_ignore_ascii_case("cpu") => return Ok(()),
        Some(_) => {}
    }
    super::backend()?;
    let devices = loaded().map(|g| g.devices.as_slice()).unwrap_or_default();
    chosen_device(config, devices).map(|_| ())
}

fn why_no_gpu() -> String {
    match loaded() {
        Some(g) if g.requested == "cpu" => "INGLE_DEVICE=cpu".to_string(),
        Some(g) if !g.skipped.is_empty() => g
            .skipped
            .iter()
            .map(|(b, why)| format!("{b}: {why}"))
            .collect::<Vec<_>>()
            .join("; "),
        _ => "no GPU module is loaded".to_string(),
    }
}

/// Decides where `config`'s model runs: the GPU `device` names (default: the one with the
/// most free memory), with `n_gpu_layers` of its layers (default: all that fit with their
/// share of the KV cache, after [`reserve`]). Errors name the option.
pub fn plan(config: &crate::config::PredictorConfig, size: &ModelSize) -> crate::Result<Offload> {
    use crate::error::{shown, Error};
    let tag = shown(&config.tag);
    let devices = loaded().map(|g| g.devices.as_slice()).unwrap_or_default();
    let layers_total = size.n_layer + 1;
    let on_cpu = |chosen_by: &str| Offload {
        model: config.tag.clone(),
        device: None,
        layers: 0,
        layers_total,
        chosen_by: chosen_by.to_string(),
    };
    let device = chosen_device(config, devices)?;
    let Some(device) = device else {
        let offload = on_cpu(if super::options_of(config).device.is_some() {
            "device"
        } else {
            "no GPU"
        });
        record(&offload);
        return Ok(offload);
    };
    if super::options_of(config).n_gpu_layers == Some(0) {
        let offload = on_cpu("n_gpu_layers");
        record(&offload);
        return Ok(offload);
    }
    let free = free_now(device);
    let usable = free.saturating_sub(reserve(device));
    let (fitting, per_layer) = layers_that_fit(usable, size, layers_total);
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let (layers, chosen_by) = match super::options_of(config).n_gpu_layers {
        Some(n) => {
            let n = n.min(layers_total);
            if n > fitting {
                return Err(Error::invalid(
                    "n_gpu_layers",
                    format!(
                        "`n_gpu_layers` of `{tag}` is {n}: those layers and their KV cache need \
                         {:.2} GiB on {} ({}), which has {:.2} GiB free ({:.2} GiB kept for \
                         llama.cpp's buffers); {fitting} layers fit. Lower `n_gpu_layers`, \
                         `n_ctx` or `parallel`, or leave `n_gpu_layers` out to put on the GPU \
                         what fits",
                        gib(per_layer * n as u64),
                        device.name,
                        device.description,
                        gib(free),
                        gib(reserve(device)),
                    ),
                ));
            }
            (n, "n_gpu_layers")
        }
        None => {
            if fitting < layers_total {
                eprintln!(
                    "ingle: warning: `{tag}` puts {fitting} of its {layers_total} layers on {} ({:.2} GiB \
                     free); the rest run on the CPU",
                    device.name,
                    gib(free)
                );
            }
            (fitting, "fit")
        }
    };
    let offload = Offload {
        model: config.tag.clone(),
        device: (layers > 0).then(|| device.name.clone()),
        layers,
        layers_total,
        chosen_by: chosen_by.to_string(),
    };
    record(&offload);
    Ok(offload)
}

/// How many of `layers_total` layers (the output layer counts as one) fit in `usable` bytes,
/// each taking its share of the weights and of the KV cache; and that share.
fn layers_that_fit(usable: u64, size: &ModelSize, layers_total: u32) -> (u32, u64) {
    let per_layer = (size.weights + size.kv_cache)
        .div_ceil(layers_total.max(1) as u64)
        .max(1);
    (
        (usable / per_layer).min(layers_total as u64) as u32,
        per_layer,
    )
}

/// llama.cpp's model parameters for `offload`: its GPU alone, or no GPU at all.
pub fn model_params(
    offload: &Offload,
) -> crate::Result<llama_cpp_2::model::params::LlamaModelParams> {
    use llama_cpp_2::model::params::LlamaModelParams;
    let device = offload
        .device
        .as_ref()
        .and_then(|name| loaded().and_then(|g| g.devices.iter().find(|d| &d.name == name)));
    let params = LlamaModelParams::default();
    let params = match device {
        Some(d) => params
            .with_devices(&[d.ggml_index])
            .map_err(|e| crate::Error::model(format!("Cannot use GPU {}: {e}", d.name)))?
            .with_n_gpu_layers(offload.layers),
        // An empty device list keeps llama.cpp off every GPU (not even single operations).
        None => params
            .with_devices(&[])
            .map_err(|e| crate::Error::model(e.to_string()))?
            .with_n_gpu_layers(0),
    };
    Ok(params)
}

/// Where the model's layers go. With a GPU, the model's shape is read first (its
/// hyperparameters and tensor list, not its weights) to size its layers and KV cache.
pub(super) fn offload(
    backend: &llama_cpp_2::llama_backend::LlamaBackend,
    config: &crate::config::PredictorConfig,
    model_path: &Path,
    parallel: u32,
) -> crate::Result<Offload> {
    let no_gpu = loaded().is_none_or(|g| g.devices.is_empty());
    let cpu_asked = super::options_of(config).n_gpu_layers == Some(0)
        || super::options_of(config)
            .device
            .as_deref()
            .is_some_and(|d| d.trim().eq_ignore_ascii_case("cpu"));
    if no_gpu || cpu_asked {
        return plan(
            config,
            &ModelSize {
                n_layer: 0,
                weights: 0,
                kv_cache: 0,
            },
        );
    }
    // Its hyperparameters and tensor list, without the tensors' data.
    let params = llama_cpp_2::model::params::LlamaModelParams::default()
        .with_devices(&[])
        .map_err(|e| crate::Error::model(e.to_string()))?
        .with_no_alloc(true);
    let shape = llama_cpp_2::model::LlamaModel::load_from_file(backend, model_path, &params)
        .map_err(|e| {
            crate::Error::model(format!(
                "Cannot read {} for `{}`: {e}",
                model_path.display(),
                config.tag
            ))
        })?;
    let (n_ctx, parallel) = super::memory::context_size(config, &shape, parallel);
    let weights = std::fs::metadata(model_path).map(|m| m.len()).unwrap_or(0);
    plan(
        config,
        &ModelSize {
            // llama.cpp counts the multi-token-prediction layers (GLM-4.5, DeepSeek-V3) among
            // those `n_gpu_layers` offloads; `n_layer()` leaves them out.
            n_layer: shape.n_layer() + nextn_layers(&shape),
            weights,
            kv_cache: super::memory::kv_bytes(&shape, n_ctx, parallel),
        },
    )
}

/// The model's multi-token-prediction layers (`ARCH.nextn_predict_layers`), 0 for most.
fn nextn_layers(model: &llama_cpp_2::model::LlamaModel) -> u32 {
    let Ok(arch) = model.meta_val_str("general.architecture") else {
        return 0;
    };
    model
        .meta_val_str(&format!("{arch}.nextn_predict_layers"))
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_fit_by_their_share_of_weights_and_kv_cache() {
        let size = ModelSize {
            n_layer: 24,
            weights: 500 << 20,
            kv_cache: 1500 << 20,
        };
        // 25 layers (24 + output) of 80 MiB each.
        assert_eq!(layers_that_fit(4 << 30, &size, 25), (25, 80 << 20));
        assert_eq!(layers_that_fit(1 << 30, &size, 25).0, 12);
        assert_eq!(layers_that_fit(79 << 20, &size, 25).0, 0);
        assert_eq!(layers_that_fit(0, &size, 25).0, 0);
        let empty = ModelSize {
            n_layer: 0,
            weights: 0,
            kv_cache: 0,
        };
        assert_eq!(layers_that_fit(1 << 30, &empty, 1).0, 1);
    }
}
