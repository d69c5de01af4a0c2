//! Text generation and embeddings at the C ABI: chat completions, text completions, embeddings
//! (as JSON or a float32 matrix), rerank, and predictions of any predictor.

use crate::call::{client_arg, ffi_call, give_slice, out_arg, str_arg, take_slice};
use crate::methods::{streamed, unexpected, whole};
use crate::{IngleChunkCallback, IngleClient, IngleStatus};
use ingle_core::methods::{method, Answer};
use std::ffi::{c_char, c_void};

/// Embeddings as numbers: a `rows × dims` float32 matrix, row-major, row `i` the embedding of
/// input `i` (each a unit vector). From `ingle_embeddings_create_matrix`; free it, `data`
/// included, with one call to `ingle_embedding_matrix_free`.
#[repr(C)]
pub struct IngleEmbeddingMatrix {
    /// `rows * dims` floats (native float32), owned by the matrix.
    pub data: *const f32,
    /// One per input.
    pub rows: usize,
    /// The length of each vector (the request's `dimensions`, or the model's).
    pub dims: usize,
    /// Tokens the model read (`usage.prompt_tokens` of the JSON response).
    pub prompt_tokens: usize,
}

/// A whole chat completion: `request_json` is an OpenAI chat completion request
/// (`{"model": ..., "messages": [...], ...}`, without `"stream": true`); `*out_json` receives the
/// `chat.completion` object, to free with `ingle_string_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_chat_completions_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    whole(client, "chat.completions.create", request_json, out_json)
}

/// Streams a chat completion: `on_chunk` receives each `chat.completion.chunk` object as JSON
/// (and, with `"stream_options": {"include_usage": true}`, a last chunk with `usage`). Returns
/// when the stream ends, fails, or `on_chunk` returns non-zero (`INGLE_ERROR_CANCELLED`).
/// `user_data` is passed to `on_chunk` untouched.
#[no_mangle]
pub unsafe extern "C" fn ingle_chat_completions_stream(
    client: *mut IngleClient,
    request_json: *const c_char,
    on_chunk: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    streamed(
        client,
        "chat.completions.stream",
        request_json,
        on_chunk,
        user_data,
    )
}

/// A whole text completion (`{"model": ..., "prompt": ..., ...}`); `*out_json` receives the
/// `text_completion` object, to free with `ingle_string_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_completions_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    whole(client, "completions.create", request_json, out_json)
}

/// Streams a text completion: `on_chunk` receives each `text_completion` chunk as JSON.
/// Same rules as `ingle_chat_completions_stream`.
#[no_mangle]
pub unsafe extern "C" fn ingle_completions_stream(
    client: *mut IngleClient,
    request_json: *const c_char,
    on_chunk: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    streamed(
        client,
        "completions.stream",
        request_json,
        on_chunk,
        user_data,
    )
}

/// Embeddings: `request_json` is an OpenAI embeddings request (`{"model": ..., "input": "text"
/// or ["text", ...], "dimensions": ..., "encoding_format": "float" or "base64"}`); `*out_json`
/// receives the response `{"object": "list", "data": [{"object": "embedding", "index",
/// "embedding"}], "model", "usage"}`, to free with `ingle_string_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_embeddings_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    whole(client, "embeddings.create", request_json, out_json)
}

/// Rerank: `request_json` is `{"model", "query", "documents": ["text" or {"text"}, ...],
/// "top_n", "return_documents"}` (Jina's and Cohere's shape); `*out_json` receives `{"id",
/// "model", "results": [{"index", "relevance_score", "document": {"text"}}], "usage"}`, most
/// relevant first, to free with `ingle_string_free` (NULL on failure). With `"texts"` instead of
/// `"documents"` (text-embeddings-inference's shape) the answer is `[{"index", "score", "text"}]`.
/// An embedding model scores by cosine similarity; a predictor annotated `rerank_query`,
/// `rerank_documents` and `rerank_scores` scores itself.
#[no_mangle]
pub unsafe extern "C" fn ingle_rerank_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    whole(client, "rerank.create", request_json, out_json)
}

/// The same request as `ingle_embeddings_create`, answered with the vectors as one float32
/// matrix instead of JSON (no numbers are printed or parsed; `encoding_format` is checked but
/// has nothing to choose). `*out` receives the matrix, to free with
/// `ingle_embedding_matrix_free` (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn ingle_embeddings_create_matrix(
    client: *mut IngleClient,
    request_json: *const c_char,
    out: *mut *mut IngleEmbeddingMatrix,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out, "out")?;
        let client = client_arg(client)?;
        let request = str_arg(request_json, "request_json")?;
        let matrix = match method("embeddings.create")?.call(client, request, None)? {
            Answer::Matrix { matrix, .. } => matrix,
            other => return Err(unexpected("embeddings.create", &other)),
        };
        let (data, _) = give_slice(matrix.data);
        *out = Box::into_raw(Box::new(IngleEmbeddingMatrix {
            data,
            rows: matrix.rows,
            dims: matrix.dims,
            prompt_tokens: matrix.prompt_tokens as usize,
        }));
        Ok(())
    })
}

/// Frees a matrix from `ingle_embeddings_create_matrix` and its data. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ingle_embedding_matrix_free(matrix: *mut IngleEmbeddingMatrix) {
    if !matrix.is_null() {
        let matrix = Box::from_raw(matrix);
        take_slice(matrix.data, matrix.rows * matrix.dims);
    }
}
