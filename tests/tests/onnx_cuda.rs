//! ONNX Runtime's GPU build (`ingle pull onnxruntime-gpu`, which `ingle pull --all` brings
//! only where NVIDIA's driver is): its CUDA provider where the machine has CUDA, else the CPU,
//! with the reason said; the CPU build's numbers either way (within a tolerance on a GPU).
//!
//! A process loads one ONNX Runtime, so each run is a copy of this test binary with its own
//! library and `INGLE_DEVICE`. On a machine without NVIDIA's driver the GPU build's sessions ask
//! for CUDA, are told why not, and run on its CPU provider; on a GPU machine the same tests
//! check that they run on CUDA and agree with the CPU build. The extended tier
//! (`scripts/test --extended rust`) pulls the GPU build and runs them; CI's tier, which does
//! not download its 313 MB, leaves them out.

use ingle::openai::{EmbeddingRequest, EmbeddingVector, TranscriptionAudio, TranscriptionRequest};
use ingle::{Client, Config};
use ingle_tests::{EMBEDDING_MODEL, TRANSCRIPTION_MODEL};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set in the copies of this binary: `cpu` or `gpu`, the ONNX Runtime build to load.
const CHILD: &str = "INGLE_ONNX_TEST_BUILD";

const TEXTS: &[&str] = &[
    "The cat sat on the mat.",
    "A quarterly report on the sales of umbrellas in rainy cities.",
    "Rust is a systems programming language.",
];

fn library(build: &str) -> PathBuf {
    let file = match build {
        "gpu" => ingle::config::DEFAULT_ONNXRUNTIME_GPU_FILE,
        _ => ingle::config::DEFAULT_ONNXRUNTIME_FILE,
    };
    let path = Config::default().resolve(Path::new(file));
    assert!(
        path.is_file(),
        "{} is missing: run scripts/fetch-models (`ingle pull --all`) first",
        path.display()
    );
    path
}

/// Runs this binary's `child_runs_the_onnx_models` with the `build` library and `device` as
/// `INGLE_DEVICE`, and returns what it printed, as JSON.
fn child(build: &str, device: &str) -> Json {
    child_with(build, device, &[])
}

/// [`child`] with more environment.
fn child_with(build: &str, device: &str, env: &[(&str, &Path)]) -> Json {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_runs_the_onnx_models",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, build)
        .env("INGLE_DEVICE", device)
        .env("INGLE_LOG", "1")
        .env_remove("ORT_DYLIB_PATH")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("RESULT ").map(|(_, result)| result))
        .unwrap_or_else(|| panic!("no result: {stdout}\n{stderr}"));
    let mut result: Json = serde_json::from_str(line).unwrap();
    result["stderr"] = stderr.into_owned().into();
    result
}

/// Not a test on its own: what `child` runs (`--ignored`), in a process of its own.
#[test]
#[ignore = "run by the tests, in a process of its own"]
fn child_runs_the_onnx_models() {
    // Run by `--ignored` (the extended tier) outside a copy: nothing to do.
    let Ok(build) = std::env::var(CHILD) else {
        return;
    };
    let all = ingle_tests::config();
    let mut config = Config::empty();
    for predictor in all.predictors {
        if [EMBEDDING_MODEL, TRANSCRIPTION_MODEL].contains(&predictor.tag.as_str()) {
            config = config.predictor(predictor);
        }
    }
    config.models_dir = Some(ingle::config::default_models_dir());
    // `switch`: a models directory of the test's, without the GPU build until the embedding
    // model has loaded (as when `ingle pull` brings it while a server runs), and no library named.
    let switch = std::env::var_os("INGLE_ONNX_TEST_MODELS").map(PathBuf::from);
    let config = match &switch {
        Some(dir) => config.models_dir(dir),
        None => config.onnxruntime(library(&build)),
    };
    let mut default_after_pull = None;
    let mut run = || -> ingle::Result<Json> {
        let client = Client::from_config(&config)?;
        let request = EmbeddingRequest::new(EMBEDDING_MODEL, TEXTS.to_vec());
        let embeddings: Vec<Vec<f32>> = (client.embeddings.create(&request)?.data)
            .into_iter()
            .map(|d| match d.embedding {
                EmbeddingVector::Float(v) => v,
                EmbeddingVector::Base64(_) => panic!("asked for floats"),
            })
            .collect();
        if let Some(dir) = &switch {
            let gpu_build = library("gpu");
            std::os::unix::fs::symlink(gpu_build.parent().unwrap(), dir.join("onnxruntime-gpu"))
                .unwrap();
            default_after_pull = Some(config.onnxruntime_path());
        }
        let beckett = Config::default().resolve(Path::new("recordings/beckett.wav"));
        let audio = TranscriptionAudio::file(std::fs::read(beckett).unwrap(), Some("beckett.wav"));
        let transcription = (client.audio.transcriptions)
            .create(&TranscriptionRequest::new(TRANSCRIPTION_MODEL), audio)?
            .json()
            .expect("a JSON transcription");
        Ok(json!({
            "embeddings": embeddings,
            "text": transcription["text"],
            "onnx": ingle::backends::onnx::cuda::device(),
        }))
    };
    let mut result = run().unwrap_or_else(|e| json!({ "error": e.message, "code": e.code }));
    result["default_after_pull"] = json!(default_after_pull);
    println!("RESULT {result}");
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

fn floats(v: &Json) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// Whether NVIDIA's driver is on this machine.
fn has_driver() -> bool {
    ingle::devices::cuda_driver().is_ok()
}

/// Whether the GPU build can run on CUDA here: the driver, CUDA's libraries (found as ingle
/// finds them) and a GPU that CUDA 13 runs on.
fn has_cuda() -> bool {
    has_driver()
        && ingle::devices::preload(ingle::backends::onnx::cuda::CUDA_LIBRARIES).is_ok()
        && ingle::devices::cuda_device().is_ok()
}

#[test]
#[ignore = "extended: needs ONNX Runtime's GPU build (`ingle pull onnxruntime-gpu`; `pull --all` brings it only where NVIDIA's driver is)"]
fn the_gpu_build_runs_on_cuda_where_there_is_cuda_else_on_the_cpu_with_the_cpu_builds_numbers() {
    let reference = child("cpu", "cpu");
    let onnx = &reference["onnx"];
    assert_eq!(onnx["execution_provider"], "cpu", "{onnx}");
    assert_eq!(onnx["why"], "INGLE_DEVICE=cpu", "{onnx}");

    let gpu = child("gpu", "auto");
    assert!(gpu.get("error").is_none(), "{}", gpu["error"]);
    let (onnx, stderr) = (&gpu["onnx"], gpu["stderr"].as_str().unwrap());
    let library = onnx["library"].as_str().unwrap();
    assert!(
        library.ends_with(ingle::config::DEFAULT_ONNXRUNTIME_GPU_FILE),
        "{library}"
    );
    if has_cuda() {
        assert_eq!(onnx["execution_provider"], "cuda", "{onnx}");
        assert!(stderr.contains("run on CUDA"), "{stderr}");
    } else {
        // One reason (without a driver, in the dynamic loader's words), and one line on stderr
        // under INGLE_LOG.
        assert_eq!(onnx["execution_provider"], "cpu", "{onnx}");
        let why = onnx["why"].as_str().unwrap();
        assert!(
            !why.is_empty() && (has_driver() || why.contains("libcuda.so.1")),
            "{why}"
        );
        let lines = stderr.matches("ONNX models run on the CPU").count();
        assert_eq!(lines, 1, "{stderr}");
    }

    // The same embeddings: on the CPU the two builds agree to float rounding; on CUDA (float32,
    // TF32 off) to a cosine of 0.9999.
    let (mut worst_cosine, mut worst_diff) = (1.0f64, 0.0f64);
    let pairs = (reference["embeddings"].as_array().unwrap().iter())
        .zip(gpu["embeddings"].as_array().unwrap());
    for (a, b) in pairs {
        let (a, b) = (floats(a), floats(b));
        assert_eq!(a.len(), b.len());
        worst_cosine = worst_cosine.min(cosine(&a, &b));
        let diff = a.iter().zip(&b).map(|(x, y)| (x - y).abs());
        worst_diff = worst_diff.max(diff.fold(0.0, f64::max));
    }
    eprintln!(
        "embeddings, CPU build against GPU build ({}): worst cosine {worst_cosine}, largest \
         difference {worst_diff}",
        onnx["execution_provider"]
    );
    let (cosine_floor, diff_ceiling) = if has_cuda() {
        (0.9999, 1e-3)
    } else {
        (0.999_999, 1e-5)
    };
    assert!(worst_cosine >= cosine_floor, "cosine {worst_cosine}");
    assert!(worst_diff <= diff_ceiling, "difference {worst_diff}");
    // Greedy Whisper hears the same words.
    assert_eq!(gpu["text"], reference["text"]);
}

#[test]
#[ignore = "extended: needs ONNX Runtime's GPU build (`ingle pull onnxruntime-gpu`; `pull --all` brings it only where NVIDIA's driver is)"]
fn ingle_device_cuda_runs_the_onnx_models_on_cuda_or_refuses_saying_why() {
    let forced = child("gpu", "cuda");
    if has_cuda() {
        assert_eq!(
            forced["onnx"]["execution_provider"], "cuda",
            "{}",
            forced["onnx"]
        );
    } else {
        assert_eq!(forced["code"], "device_unavailable", "{forced}");
        let message = forced["error"].as_str().unwrap();
        assert!(message.contains("INGLE_DEVICE=cuda"), "{message}");
        assert!(
            has_driver() || message.contains("libcuda.so.1"),
            "{message}"
        );
    }
    // The CPU build has no CUDA provider: forcing CUDA on it says how to get one (where there
    // is a driver; where there is none, that comes first).
    let cpu_build = child("cpu", "cuda");
    assert_eq!(cpu_build["code"], "device_unavailable", "{cpu_build}");
    let message = cpu_build["error"].as_str().unwrap();
    if has_driver() {
        assert!(message.contains("no CUDA provider"), "{message}");
        assert!(message.contains("ingle pull onnxruntime-gpu"), "{message}");
    } else {
        assert!(message.contains("libcuda.so.1"), "{message}");
    }
}

#[test]
#[ignore = "extended: needs ONNX Runtime's GPU build (`ingle pull onnxruntime-gpu`; `pull --all` brings it only where NVIDIA's driver is)"]
fn the_default_runtime_is_the_gpu_build_only_where_cuda_can_use_it() {
    library("gpu"); // pulled, so only the driver and INGLE_DEVICE decide
    let default = Config::default().onnxruntime_path();
    let cuda_allowed = ingle::devices::requested().is_ok_and(|r| r.allows("cuda"));
    let want = if has_driver() && cuda_allowed {
        ingle::config::DEFAULT_ONNXRUNTIME_GPU_FILE
    } else {
        ingle::config::DEFAULT_ONNXRUNTIME_FILE
    };
    assert!(default.ends_with(want), "{}", default.display());

    // Before any ONNX model is loaded, system_info() says where they would run (this process
    // loads none: the children do).
    let onnx = ingle::system_info().unwrap().onnx;
    assert_eq!(Path::new(&onnx.library), default);
    if has_cuda() && cuda_allowed {
        assert_eq!(onnx.execution_provider, "cuda", "{onnx:?}");
    } else {
        // `none` where INGLE_DEVICE=cuda asks for what cannot be.
        assert_ne!(onnx.execution_provider, "cuda", "{onnx:?}");
        assert!(!onnx.why.is_empty(), "{onnx:?}");
    }
}

/// Builds a stand-in libcuda.so.1 (an empty library) in `dir` and returns an LD_LIBRARY_PATH
/// that finds it first, then what cargo gives the test (where llama.cpp's libraries are).
fn stand_in_driver(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("empty.c"), "").unwrap();
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o", "libcuda.so.1", "empty.c"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(built.success());
    let mut path = vec![dir.to_path_buf()];
    let given = std::env::var_os("LD_LIBRARY_PATH");
    path.extend(given.iter().flat_map(std::env::split_paths));
    PathBuf::from(std::env::join_paths(path).unwrap())
}

#[test]
#[ignore = "extended: needs ONNX Runtime's GPU build (`ingle pull onnxruntime-gpu`; `pull --all` brings it only where NVIDIA's driver is)"]
fn with_a_driver_but_not_cudas_libraries_the_onnx_models_run_on_the_cpu_naming_the_missing_one() {
    if has_driver() {
        return; // a real driver: the tests above check CUDA itself
    }
    let dir = std::env::temp_dir().join(format!("ingle-fake-driver-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = stand_in_driver(&dir);
    let nothing = dir.join("no-cuda-here");
    let env: &[(&str, &Path)] = &[("LD_LIBRARY_PATH", &path), ("INGLE_CUDA_PATH", &nothing)];

    let gpu = child_with("gpu", "auto", env);
    assert!(gpu.get("error").is_none(), "{}", gpu["error"]);
    assert_eq!(gpu["onnx"]["execution_provider"], "cpu", "{}", gpu["onnx"]);
    let why = gpu["onnx"]["why"].as_str().unwrap();
    assert!(why.contains("libcudart.so.13"), "{why}");
    assert_eq!(gpu["text"], child("cpu", "cpu")["text"]);

    let forced = child_with("gpu", "cuda", env);
    assert_eq!(forced["code"], "device_unavailable", "{forced}");
    assert!(
        forced["error"]
            .as_str()
            .unwrap()
            .contains("libcudart.so.13"),
        "{forced}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "extended: needs ONNX Runtime's GPU build (`ingle pull onnxruntime-gpu`; `pull --all` brings it only where NVIDIA's driver is)"]
fn a_process_keeps_the_onnx_runtime_it_loaded_when_the_gpu_build_arrives() {
    if has_driver() {
        return; // the stand-in driver below would hide the real one
    }
    let dir = std::env::temp_dir().join(format!("ingle-runtime-switch-{}", std::process::id()));
    let models = dir.join("models");
    std::fs::create_dir_all(&models).unwrap();
    let real = ingle::config::default_models_dir();
    for entry in ["onnxruntime", "all-minilm-l6-v2", "whisper-tiny-en"] {
        std::os::unix::fs::symlink(real.join(entry), models.join(entry)).unwrap();
    }
    let path = stand_in_driver(&dir);
    let env: &[(&str, &Path)] = &[
        ("LD_LIBRARY_PATH", &path),
        ("INGLE_ONNX_TEST_MODELS", &models),
    ];

    // The embedding model loads the CPU build (no GPU build yet); the GPU build arrives and is
    // now the default (a driver is there); Whisper, loaded after, uses the CPU build still
    // rather than failing with onnxruntime_conflict.
    let result = child_with("cpu", "auto", env);
    assert!(result.get("error").is_none(), "{}", result["error"]);
    let default = result["default_after_pull"].as_str().unwrap();
    assert!(
        default.ends_with(ingle::config::DEFAULT_ONNXRUNTIME_GPU_FILE),
        "{default}"
    );
    let library = result["onnx"]["library"].as_str().unwrap();
    assert!(
        library.ends_with(ingle::config::DEFAULT_ONNXRUNTIME_FILE),
        "{library}"
    );
    assert!(!result["text"].as_str().unwrap().is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
