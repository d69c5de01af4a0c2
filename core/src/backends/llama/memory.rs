//! Checks at load: a GGUF file that is one, and a KV cache that fits in the memory there is.

use crate::config::PredictorConfig;
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use llama_cpp_2::model::LlamaModel;
use std::path::Path;

/// An error unless `path` starts like a GGUF file (its magic bytes), so a wrong file gets an
/// error that says so rather than llama.cpp's "failed to load model".
pub(super) fn check_gguf(path: &Path, tag: &str) -> Result<()> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic));
    match read {
        Ok(()) if &magic == b"GGUF" => Ok(()),
        Ok(()) | Err(_) => Err(Error::model(format!(
            "The model file {} of `{}` is not a GGUF file (llama.cpp reads GGUF models)",
            path.display(),
            crate::error::shown(tag)
        ))
        .with_param("model")
        .with_code(ErrorCode::ModelFileInvalid)),
    }
}

/// Bytes of the f16 KV cache of `parallel` sequences of `n_ctx` tokens.
pub(super) fn kv_bytes(model: &LlamaModel, n_ctx: u32, parallel: u32) -> u64 {
    let head_dim = model.n_embd().max(1) as u64 / model.n_head().max(1) as u64;
    let per_token = model.n_layer() as u64 * model.n_head_kv() as u64 * head_dim * 2 * 2;
    per_token * n_ctx as u64 * parallel as u64
}

/// The KV cache of `parallel` sequences of `n_ctx` tokens (f16 keys and values) must fit in
/// the memory the machine has available; otherwise llama.cpp fails deep inside with no word
/// of which setting was too large.
pub(super) fn check_kv_memory(
    model: &LlamaModel,
    n_ctx: u32,
    parallel: u32,
    tag: &str,
) -> Result<()> {
    let needed = kv_bytes(model, n_ctx, parallel);
    let Some(available) = available_memory() else {
        return Ok(());
    };
    if needed > available {
        let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
        return Err(Error::invalid(
            "n_ctx",
            format!(
                "The KV cache of `{}` (`n_ctx` {n_ctx} × `parallel` {parallel} tokens) would \
                 need {:.1} GiB, more than the {:.1} GiB of memory available; lower `n_ctx` or \
                 `parallel`",
                crate::error::shown(tag),
                gib(needed),
                gib(available)
            ),
        ));
    }
    Ok(())
}

/// `MemAvailable` of /proc/meminfo, in bytes (None where there is no such file).
pub(super) fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The context per sequence and the sequences of `config`'s model: what the config leaves out
/// shrinks until the KV cache takes at most half the memory available (what it sets is checked
/// as given, by `check_kv_memory`).
pub(super) fn context_size(
    config: &PredictorConfig,
    model: &LlamaModel,
    parallel: u32,
) -> (u32, u32) {
    let mut parallel = parallel;
    let mut n_ctx = super::options_of(config)
        .n_ctx
        .unwrap_or(super::DEFAULT_N_CTX)
        .min(model.n_ctx_train())
        .max(crate::config::MIN_N_CTX);
    if let Some(available) = available_memory() {
        let budget = available / 2;
        while kv_bytes(model, n_ctx, parallel) > budget {
            if super::options_of(config).parallel.is_none() && parallel > 1 {
                parallel /= 2;
            } else if super::options_of(config).n_ctx.is_none()
                && n_ctx / 2 >= crate::config::MIN_N_CTX
            {
                n_ctx /= 2;
            } else {
                break;
            }
        }
    }
    (n_ctx, parallel)
}
