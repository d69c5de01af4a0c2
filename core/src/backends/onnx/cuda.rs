//! ONNX Runtime's CUDA execution provider: embeddings, speech and transcription on an NVIDIA
//! GPU where the machine has one and the ONNX Runtime in use can (`ingle pull onnxruntime-gpu`),
//! else on the CPU, with nothing to choose.
//!
//! The GPU build of ONNX Runtime keeps its CUDA code in `libonnxruntime_providers_cuda.so`
//! beside `libonnxruntime.so`, loaded when a session asks for the provider. That library
//! names the driver, CUDA 13's runtime, cuBLAS and cuRAND, and opens cuFFT, NVRTC and cuDNN 9
//! by name when it runs; ingle loads them first from wherever they are
//! (`crate::devices::preload`: a system CUDA, or NVIDIA's wheels, which `pip install
//! ingle[cuda]` brings), so that a machine without them skips the provider with one reason
//! instead of a loader error deep in a session.
use crate::devices::{self, Requested};
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use std::path::Path;
use std::sync::Mutex;

/// The provider library of ONNX Runtime's GPU build, beside `libonnxruntime.so`.
pub const CUDA_PROVIDER_FILE: &str = "libonnxruntime_providers_cuda.so";

/// What `libonnxruntime_providers_cuda.so` 1.31 calls (NEEDED: the driver, cudart, cuBLAS,
/// cuRAND; opened by name at run time: cuFFT, NVRTC, cuDNN), in an order where each one's own
/// dependencies come first.
pub const CUDA_LIBRARIES: &[&str] = &[
    "libcuda.so.1",
    "libcudart.so.13",
    "libcublasLt.so.13",
    "libcublas.so.13",
    "libcurand.so.10",
    "libcufft.so.12",
    "libnvrtc.so.13",
    "libcudnn_graph.so.9",
    "libcudnn_engines_precompiled.so.9",
    "libcudnn_engines_runtime_compiled.so.9",
    "libcudnn_heuristic.so.9",
    "libcudnn_ops.so.9",
    "libcudnn_cnn.so.9",
    "libcudnn_adv.so.9",
    "libcudnn.so.9",
];

/// Where ONNX models of this process run: the last session loaded says.
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub struct OnnxDevice {
    /// The ONNX Runtime library loaded.
    pub library: String,
    /// `cuda` or `cpu` (`none`: `INGLE_DEVICE=cuda` and CUDA cannot be used).
    pub execution_provider: String,
    /// Why not CUDA (empty when CUDA).
    pub why: String,
}

impl OnnxDevice {
    /// `cuda`: `Ok`; `cpu`, or `none` where `INGLE_DEVICE=cuda` cannot be met: `Err(why)`.
    fn new(library: &Path, cuda: std::result::Result<(), String>, forced: bool) -> OnnxDevice {
        let (execution_provider, why) = match cuda {
            Ok(()) => ("cuda", String::new()),
            Err(why) => (if forced { "none" } else { "cpu" }, why),
        };
        OnnxDevice {
            library: library.display().to_string(),
            execution_provider: execution_provider.into(),
            why,
        }
    }
}

static LAST: Mutex<Option<OnnxDevice>> = Mutex::new(None);

/// Where the last ONNX session went, or `None` before any was loaded.
pub fn device() -> Option<OnnxDevice> {
    LAST.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Where ONNX models would run with the ONNX Runtime at `library`, before any is loaded (a
/// session may still fall back to the CPU: [`device`] then says why).
pub fn planned(library: &Path) -> OnnxDevice {
    match plan(library) {
        Ok(cuda) => OnnxDevice::new(library, cuda, false),
        Err(e) => OnnxDevice::new(library, Err(e.message), true),
    }
}

pub(super) fn record(library: &Path, cuda: std::result::Result<(), String>) {
    let device = OnnxDevice::new(library, cuda, false);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if last.as_ref() != Some(&device)
        && std::env::var_os("INGLE_LOG").is_some_and(|v| !v.is_empty())
    {
        // The one line a machine without CUDA gets, once, and again only if it changes.
        match &device.why[..] {
            "" => eprintln!("ingle: ONNX models run on CUDA ({})", device.library),
            why => eprintln!("ingle: ONNX models run on the CPU: {why}"),
        }
    }
    *last = Some(device);
}

/// Whether sessions of the ONNX Runtime at `library` should ask for CUDA: `Ok(Ok(()))` yes,
/// `Ok(Err(why))` no (the CPU), `Err` when `INGLE_DEVICE=cuda` asked for it and it cannot be.
pub(super) fn plan(library: &Path) -> Result<std::result::Result<(), String>> {
    let requested = devices::requested().map_err(Error::model)?;
    let provider = library.parent().map(|d| d.join(CUDA_PROVIDER_FILE));
    let why = decide(requested, provider.as_deref(), devices::cuda_driver, || {
        devices::preload(CUDA_LIBRARIES).and_then(|()| devices::cuda_device())
    });
    match why {
        Err(why) if requested == Requested::Only("cuda") => Err(forced_error(&why)),
        other => Ok(other),
    }
}

/// The error `INGLE_DEVICE=cuda` gets where ONNX models cannot run on CUDA.
pub(super) fn forced_error(why: &str) -> Error {
    Error::model(format!(
        "INGLE_DEVICE=cuda, but ONNX models cannot run on CUDA here: {why}"
    ))
    .with_code(ErrorCode::DeviceUnavailable)
}

/// The choice, given what is asked, where the provider library would be, and checks of the
/// driver and of CUDA's libraries and GPU, each run only when what comes before allows CUDA. The driver
/// comes first: on a machine without NVIDIA's driver that is the reason, whatever the build.
fn decide(
    requested: Requested,
    provider: Option<&Path>,
    driver: impl FnOnce() -> std::result::Result<(), String>,
    cuda_libraries: impl FnOnce() -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    if !requested.allows("cuda") {
        return Err(format!("INGLE_DEVICE={}", requested.name()));
    }
    driver()?;
    match provider {
        Some(p) if p.is_file() => cuda_libraries(),
        _ => Err(format!(
            "this ONNX Runtime has no CUDA provider ({CUDA_PROVIDER_FILE} is not beside it; \
             {} gives one)",
            crate::pull::pull_hint("onnxruntime-gpu")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_is_asked_for_only_when_allowed_and_the_provider_is_there() {
        let dir = std::env::temp_dir().join(format!("ingle-ort-cuda-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let provider = dir.join(CUDA_PROVIDER_FILE);
        let absent = dir.join("nothing-here.so");
        std::fs::write(&provider, b"").unwrap();
        let never = || -> std::result::Result<(), String> { panic!("checked CUDA") };
        let ok = || Ok(());
        let no_driver = || Err("libcuda.so.1: nope".to_string());

        assert_eq!(
            decide(Requested::Cpu, Some(&provider), never, never).unwrap_err(),
            "INGLE_DEVICE=cpu"
        );
        assert_eq!(
            decide(Requested::Only("vulkan"), Some(&provider), never, never).unwrap_err(),
            "INGLE_DEVICE=vulkan"
        );
        // No driver: that is the reason, provider or not.
        for provider in [&provider, &absent] {
            let e = decide(Requested::Auto, Some(provider), no_driver, never).unwrap_err();
            assert_eq!(e, "libcuda.so.1: nope");
        }
        let e = decide(Requested::Auto, Some(&absent), ok, never).unwrap_err();
        assert!(
            e.contains("no CUDA provider") && e.contains("onnxruntime-gpu"),
            "{e}"
        );
        let missing = || Err("libcudnn.so.9: nope".to_string());
        let e = decide(Requested::Auto, Some(&provider), ok, missing).unwrap_err();
        assert_eq!(e, "libcudnn.so.9: nope");
        assert!(decide(Requested::Only("cuda"), Some(&provider), ok, ok).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
