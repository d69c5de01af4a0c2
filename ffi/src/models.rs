//! The client's models and predictors by tag at the C ABI: list, retrieve, pull and unload
//! models, the system's facts, and predictions of any predictor.

use crate::call::{
    c_string_lossy, callback_arg, client_arg, deliver, ffi_call, give_string, out_arg,
    prediction_json, str_arg, to_json_string, Failure,
};
use crate::methods::{by_name, whole};
use crate::{IngleChunkCallback, IngleClient, IngleStatus};
use ingle_core::inputs_from_json;
use std::ffi::{c_char, c_int, c_void};

/// The models of the client's configuration: `*out_json` receives
/// `{"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}, ...]}`,
/// to free with `ingle_string_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_models_list(
    client: *mut IngleClient,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    whole(client, "models.list", c"{}".as_ptr(), out_json)
}

/// One model: `*out_json` receives its `model` object (`INGLE_ERROR_NOT_FOUND` when the client
/// has no such model), to free with `ingle_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ingle_models_retrieve(
    client: *mut IngleClient,
    model: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    by_name(client, "models.retrieve", "model", model, out_json)
}

/// Downloads `model`, a tag of ingle's model catalog (`ingle models` lists them), and what it
/// needs (ONNX Runtime for the ONNX models) into the client's models directory, or a Hugging Face
/// reference (`hf.co/ORG/REPO[:QUANT][@REVISION]`) into the Hub's shared cache: each file
/// verified (sha256), written atomically, an interrupted download resumed by the next call.
/// Files already there are re-hashed; a corrupted one is fetched again. A model the client's
/// config registers only when its files exist is served by this client afterwards.
/// `on_progress` (NULL: none) receives each progress event as JSON,
/// `{"status": "waiting"|"verifying"|"downloading"|"success", "tag", "file", "completed",
/// "total"}` (bytes); a non-zero return stops the pull with `INGLE_ERROR_CANCELLED`, keeping
/// what was downloaded (on `success` it changes nothing: the pull is done), as does the
/// client's cancel (`ingle_client_with_cancel`) at the next chunk. `*out_json` (NULL: not wanted) receives the report,
/// `{"tag", "status": "success", "models_dir", "files": [{"tag", "path", "size", "sha256",
/// "fetched"}], "downloaded_bytes", "notes": [...]}`, to free with `ingle_string_free`.
/// `INGLE_ERROR_NOT_FOUND` for a tag the catalog does not have (or a Hub repo, revision or
/// file that does not exist); `INGLE_ERROR_INVALID_REQUEST` for a gated repo without access
/// (`code` `gated_repo`) or files ingle cannot serve; network and checksum
/// failures are `INGLE_ERROR_MODEL` (`code` `download_unreachable` / `download_interrupted` /
/// `download_server_error` / `download_failed` / `checksum_mismatch`), after the pull's own
/// retries of a dropped connection or an HTTP 5xx.
#[no_mangle]
pub unsafe extern "C" fn ingle_models_pull(
    client: *mut IngleClient,
    model: *const c_char,
    on_progress: IngleChunkCallback,
    user_data: *mut c_void,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = match out_json.is_null() {
            true => None,
            false => Some(out_arg(out_json, "out_json")?),
        };
        let client = client_arg(client)?;
        let model = str_arg(model, "model")?;
        let mut stopped = None;
        let result = client.models.pull(model, &mut |event| {
            let Some(callback) = on_progress else {
                return true;
            };
            let Ok(json) = to_json_string(event) else {
                return true;
            };
            let chunk = c_string_lossy(json);
            match callback(chunk.as_ptr(), chunk.as_bytes().len(), user_data) {
                0 => true,
                returned => {
                    stopped = Some(returned);
                    false
                }
            }
        });
        let report = match (result, stopped) {
            (Err(_), Some(returned)) => {
                let mut failure = Failure::cancelled(returned);
                failure.error.param = Some("on_progress".into());
                failure.error.message = format!(
                    "Cancelled: the progress callback returned {returned}; pulling again \
                     resumes where it stopped"
                );
                return Err(failure);
            }
            (result, _) => result?,
        };
        if let Some(out) = out {
            give_string(out, to_json_string(&report)?)?;
        }
        Ok(())
    })
}

/// Frees a model's memory (weights, KV cache, threads); the next request loads it again.
/// Requests running on it finish first, and its memory goes when the last one ends.
/// `*out_was_loaded` (NULL: not wanted) receives 1 if it was loaded, else 0.
/// `INGLE_ERROR_NOT_FOUND` when the client has no such model.
#[no_mangle]
pub unsafe extern "C" fn ingle_models_unload(
    client: *mut IngleClient,
    model: *const c_char,
    out_was_loaded: *mut c_int,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let was_loaded = client.models.unload(str_arg(model, "model")?)?;
        if !out_was_loaded.is_null() {
            *out_was_loaded = c_int::from(was_loaded);
        }
        Ok(())
    })
}

/// What ingle runs with here, as JSON: its version and the CPU variant of llama.cpp's kernels
/// loaded for this machine (`{"version", "cpu_variant", "cpu_variant_chosen_by",
/// "cpu_variants": [[name, score]...], "cpu_features", ...}`), the GPU modules and devices
/// (`"gpu": {"requested", "loaded", "skipped", "devices"}`) and where each chat model runs
/// (`"offloads"`); loads that variant if no model has yet. `*out_json` is freed with
/// `ingle_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ingle_system_info(out_json: *mut *mut c_char) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        give_string(out, to_json_string(&ingle_core::system_info()?)?)
    })
}

/// Runs the predictor `tag` on `inputs_json` (a JSON object of parameter names to values) to
/// the end. `*out_json` receives the prediction
/// `{"id", "tag", "created", "results": [...], "latency", "error": null, "logs"}`, to free with
/// `ingle_string_free`. A prediction that fails while running returns its error's status and
/// still gives `*out_json`: the prediction with `error` set and the `logs` it wrote before
/// failing (free it too). A call that fails before the predictor runs (a bad argument, an
/// unknown tag) leaves `*out_json` NULL. So: free `*out_json` whenever it is not NULL.
#[no_mangle]
pub unsafe extern "C" fn ingle_predictions_create(
    client: *mut IngleClient,
    tag: *const c_char,
    inputs_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        let client = client_arg(client)?;
        let tag = str_arg(tag, "tag")?;
        let inputs = inputs_from_json(str_arg(inputs_json, "inputs_json")?)?;
        let (json, error) = prediction_json(&client.predictions.create(tag, inputs)?)?;
        give_string(out, json)?;
        match error {
            // The prediction (its logs above all) is the caller's to read and free.
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    })
}

/// Streams the predictor `tag`: `on_chunk` receives one prediction JSON per partial result
/// (once for an eager predictor). A prediction that fails while running is delivered with its
/// `error` set, and then the call returns that error's status. Same rules as
/// `ingle_chat_completions_stream`.
#[no_mangle]
pub unsafe extern "C" fn ingle_predictions_stream(
    client: *mut IngleClient,
    tag: *const c_char,
    inputs_json: *const c_char,
    on_chunk: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let tag = str_arg(tag, "tag")?;
        let on_chunk = callback_arg(on_chunk)?;
        let inputs = inputs_from_json(str_arg(inputs_json, "inputs_json")?)?;
        for prediction in client.predictions.stream(tag, inputs)? {
            let (json, error) = prediction_json(&prediction)?;
            deliver(json, on_chunk, user_data)?;
            if let Some(error) = error {
                return Err(error.into());
            }
        }
        Ok(())
    })
}
