//! ONNX Runtime (via `ort`, loaded at run time from a `libonnxruntime.so`): embeddings and
//! speech (Piper voices).
//!
//! The library is loaded once per process, and one ONNX Runtime environment serves every
//! session (ONNX Runtime allows one). A failed load is not remembered: fetching the library
//! and retrying works without a restart. Sessions are loaded once per model file and shared by
//! every client of the process.

pub mod cuda;
pub(crate) mod embedding;
pub(crate) mod speech;
pub mod whisper;

pub use embedding::{EmbeddingPredictor, DEFAULT_MAX_LENGTH, MAX_INPUTS};
pub use speech::{voice_config_path, SpeechPredictor, MAX_INPUT_CHARS, MAX_SPEED, MIN_SPEED};

pub use whisper::{whisper_files, TranscriptionPredictor};

use crate::error::ErrorCode;
use crate::error::{Error, Result};
use ort::environment::Environment;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The ONNX Runtime of this process: where it was loaded from, and its environment.
struct Runtime {
    library: PathBuf,
    environment: Environment,
}

static RUNTIME: Mutex<Option<Runtime>> = Mutex::new(None);

/// How to get a working library, for error messages.
fn how_to_get(library: &Path) -> String {
    format!(
        "{} (ONNX Runtime 1.31.1), or point the environment variable ORT_DYLIB_PATH or the \
         config's `onnxruntime` at a libonnxruntime.so of version 1.31 or later (tried {})",
        crate::pull::pull_hint("onnxruntime"),
        library.display()
    )
}

/// The process's ONNX Runtime environment, loading the library at `library` on first use.
/// Asking for another library once one is loaded is an error: a process holds one.
pub fn environment(library: &Path) -> Result<Environment> {
    let mut runtime = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(loaded) = runtime.as_ref() {
        if same_file(&loaded.library, library) {
            return Ok(loaded.environment.clone());
        }
        return Err(Error::model(format!(
            "ONNX Runtime is already loaded from {} in this process; it cannot also load {} \
             (one library per process: give every client the same `onnxruntime`)",
            loaded.library.display(),
            library.display()
        ))
        .with_code(ErrorCode::OnnxruntimeConflict));
    }
    if !library.is_file() {
        return Err(Error::model(format!(
            "The ONNX Runtime library {} does not exist; {}",
            library.display(),
            how_to_get(library)
        ))
        .with_code(ErrorCode::OnnxruntimeMissing));
    }
    // ort resolves relative paths against the executable's directory; users mean the cwd.
    let absolute = std::path::absolute(library).unwrap_or_else(|_| library.to_path_buf());
    let builder = ort::init_from(&absolute).map_err(|e| {
        Error::model(format!(
            "Cannot load ONNX Runtime from {}: {e}; {}",
            absolute.display(),
            how_to_get(&absolute)
        ))
        .with_code(ErrorCode::OnnxruntimeInvalid)
    })?;
    let environment = builder
        .with_name("ingle")
        .build()
        .map_err(|e| Error::model(format!("Cannot start ONNX Runtime: {e}")))?;
    *runtime = Some(Runtime {
        library: absolute,
        environment: environment.clone(),
    });
    Ok(environment)
}

/// The ONNX Runtime library `config`'s models load: [`Config::onnxruntime_path`], except that
/// where the config and `$ORT_DYLIB_PATH` name none and the process already runs one of the two
/// builds the models directory holds, that one. Which build is the default can change while a
/// process runs (`ingle pull` brings the GPU build along on a machine with NVIDIA's driver), and
/// a process holds one library: a model loaded later must not ask for the other.
pub(crate) fn runtime_library(config: &crate::config::Config) -> PathBuf {
    let chosen = config.onnxruntime_path();
    let named = config.onnxruntime.is_some()
        || std::env::var_os("ORT_DYLIB_PATH").is_some_and(|p| !p.is_empty());
    if named {
        return chosen;
    }
    let runtime = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(loaded) = runtime.as_ref().map(|r| &r.library) else {
        return chosen;
    };
    let builds = [
        crate::config::DEFAULT_ONNXRUNTIME_FILE,
        crate::config::DEFAULT_ONNXRUNTIME_GPU_FILE,
    ];
    if builds
        .iter()
        .any(|b| same_file(&config.resolve(Path::new(b)), loaded))
    {
        return loaded.clone();
    }
    chosen
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// An ONNX model's graph: a file, or bytes in memory.
pub(crate) enum Graph<'a> {
    File(&'a Path),
    Memory(&'a [u8]),
}

/// Loads a session as ingle runs every ONNX model: on CUDA where the loaded ONNX Runtime has
/// its CUDA provider and the machine has CUDA ([`cuda`]), else on the CPU; `threads` intra-op
/// threads and one inter-op thread. Without `spinning`, idle threads sleep instead of
/// spinning: as fast on a quiet machine (1.58 vs 1.61 s for a Piper paragraph), 18% faster
/// when another process or model wants the cores. `loading` says what an error was loading.
pub(crate) fn load_session(
    environment: &Environment,
    threads: usize,
    spinning: bool,
    loading: &str,
    graph: Graph,
) -> Result<ort::session::Session> {
    let library = RUNTIME
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .map(|r| r.library.clone())
        .unwrap_or_default();
    let commit = |mut builder: ort::session::builder::SessionBuilder| match graph {
        Graph::File(path) => builder.commit_from_file(path),
        Graph::Memory(bytes) => builder.commit_from_memory(bytes),
    };
    let mut planned = cuda::plan(&library)?;
    let forced = crate::devices::requested() == Ok(crate::devices::Requested::Only("cuda"));
    if planned.is_ok() {
        // TF32 off: full float32 matrix products, so that CUDA gives the CPU's numbers to
        // rounding (TF32 keeps 10 bits of mantissa). Heuristic cuDNN convolution search: the
        // exhaustive one benchmarks again for every new input shape (each Piper sentence).
        let provider = ort::ep::CUDA::default()
            .with_tf32(false)
            .with_conv_algorithm_search(ort::ep::cuda::ConvAlgorithmSearch::Heuristic)
            .build()
            .error_on_failure();
        let registered = session_builder(environment, threads, spinning, loading)?
            .with_execution_providers([provider])
            .map_err(|e| format!("ONNX Runtime's CUDA provider did not register: {e}"));
        let why = match registered.map(commit) {
            Ok(Ok(session)) => {
                cuda::record(&library, Ok(()));
                return Ok(session);
            }
            Err(why) => why,
            // The provider registered, the session did not build: the model's fault (the CPU
            // says so below) or CUDA's.
            Ok(Err(e)) => format!("ONNX Runtime's CUDA provider failed: {e}"),
        };
        planned = Err(why);
    }
    let session = commit(session_builder(environment, threads, spinning, loading)?)
        .map_err(ort_error(loading))?;
    match planned {
        Err(why) if forced => Err(cuda::forced_error(&why)),
        planned => {
            cuda::record(&library, planned);
            Ok(session)
        }
    }
}

fn session_builder(
    environment: &Environment,
    threads: usize,
    spinning: bool,
    loading: &str,
) -> Result<ort::session::builder::SessionBuilder> {
    let builder = ort::session::Session::builder(environment)
        .map_err(ort_error(loading))?
        .with_intra_threads(threads)
        .map_err(ort_error(loading))?
        .with_inter_threads(1)
        .map_err(ort_error(loading))?;
    if spinning {
        return Ok(builder);
    }
    builder
        .with_intra_op_spinning(false)
        .map_err(ort_error(loading))
}

/// An `ort` error as a model error that says what was being done.
pub(crate) fn ort_error<E: std::fmt::Display>(
    doing: impl std::fmt::Display,
) -> impl FnOnce(E) -> Error {
    move |e| Error::model(format!("{doing}: {e}"))
}

/// A file's size in bytes (0 when it cannot be read): a loaded model's weights, for metrics.
pub(crate) fn file_bytes(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// A model file `tag` needs: an error naming it when it is missing or a directory.
pub(crate) fn check_file(what: &str, path: &Path, tag: &str) -> Result<()> {
    if path.is_dir() {
        return Err(Error::model(format!(
            "The {what} {} of `{}` is a directory, not a file",
            path.display(),
            crate::error::shown(tag)
        ))
        .with_code(ErrorCode::ModelFileInvalid));
    }
    if !path.is_file() {
        return Err(Error::model(format!(
            "The {what} {} for `{}` does not exist; {}",
            path.display(),
            crate::error::shown(tag),
            crate::pull::missing_file_hint(path)
        ))
        .with_code(ErrorCode::ModelFileMissing));
    }
    Ok(())
}
