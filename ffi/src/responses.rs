//! OpenAI's Responses API at the C ABI: a whole response, its events by callback, and the
//! stored responses (retrieve, delete, input items).

use crate::call::{
    client_arg, deliver, ffi_call, give_string, out_arg, str_arg, to_json_string, Failure,
};
use crate::methods::{by_name, call_whole, whole};
use crate::{IngleChunkCallback, IngleClient, IngleStatus};
use ingle_core::openai::ResponseRequest;
use std::ffi::{c_char, c_void};

/// A whole response: `request_json` is an OpenAI Responses request (`{"model": ...,
/// "input": ...}`, without `"stream": true`); `*out_json` receives the `response` object
/// (`status` `completed`, or `incomplete` when `max_output_tokens` cut it), to free with
/// `ingle_string_free` (NULL on failure). Stored unless `"store": false`, so a next request's
/// `"previous_response_id"` continues it, in this process or another sharing the store.
#[no_mangle]
pub unsafe extern "C" fn ingle_responses_create(
    client: *mut IngleClient,
    request_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    whole(client, "responses.create", request_json, out_json)
}

/// Streams a response: `on_event` receives each event as JSON, in OpenAI's order, each with
/// its `type` and `sequence_number` (`response.created`, `response.in_progress`,
/// `response.output_item.added`, ..., `response.output_text.delta`, ..., last
/// `response.completed` or `response.incomplete`). A failure once events have been delivered
/// is delivered as a last `response.failed` event (its `response.error` says why), and the
/// function then returns the failure's status with `ingle_last_error()` set. Returns when the
/// stream ends, fails, or `on_event` returns non-zero (`INGLE_ERROR_CANCELLED`, generation
/// stopped). `user_data` is passed to `on_event` untouched.
#[no_mangle]
pub unsafe extern "C" fn ingle_responses_stream(
    client: *mut IngleClient,
    request_json: *const c_char,
    on_event: IngleChunkCallback,
    user_data: *mut c_void,
) -> IngleStatus {
    ffi_call(|| {
        let client = client_arg(client)?;
        let on_event = on_event.ok_or_else(|| Failure::null_argument("on_event"))?;
        let request = ResponseRequest::from_json(str_arg(request_json, "request_json")?)?;
        let mut events = client.responses.stream(&request)?;
        for event in events.by_ref() {
            deliver(to_json_string(&event?)?, on_event, user_data)?;
        }
        match events.failure() {
            Some(failure) => Err(failure.clone().into()),
            None => Ok(()),
        }
    })
}

/// A stored response, by id (`resp_...`): `*out_json` receives the `response` object, to free
/// with `ingle_string_free`. `INGLE_ERROR_NOT_FOUND` if it was never stored, was deleted, or
/// is past the store's bounds.
#[no_mangle]
pub unsafe extern "C" fn ingle_responses_retrieve(
    client: *mut IngleClient,
    response_id: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    by_name(
        client,
        "responses.retrieve",
        "response_id",
        response_id,
        out_json,
    )
}

/// Forgets a stored response. `out_json` may be NULL; if not, `*out_json` receives
/// `{"id": ..., "object": "response.deleted", "deleted": true}`, to free with
/// `ingle_string_free`. `INGLE_ERROR_NOT_FOUND` if there is no such response.
#[no_mangle]
pub unsafe extern "C" fn ingle_responses_delete(
    client: *mut IngleClient,
    response_id: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        // NULL on failure, as every out_json.
        let out = (!out_json.is_null())
            .then(|| out_arg(out_json, "out_json"))
            .transpose()?;
        let client = client_arg(client)?;
        let deleted = client
            .responses
            .delete(str_arg(response_id, "response_id")?)?;
        match out {
            Some(out) => give_string(out, to_json_string(&deleted)?),
            None => Ok(()),
        }
    })
}

/// The input items of a stored response, a page at a time as OpenAI lists them: `query_json`
/// is NULL or `{"after": "<item id>", "limit": 1..100 (default 20), "order": "desc" (default)
/// or "asc"}`; `*out_json` receives `{"object": "list", "data": [...], "first_id", "last_id",
/// "has_more"}`, to free with `ingle_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ingle_responses_input_items(
    client: *mut IngleClient,
    response_id: *const c_char,
    query_json: *const c_char,
    out_json: *mut *mut c_char,
) -> IngleStatus {
    ffi_call(|| {
        let out = out_arg(out_json, "out_json")?;
        let client = client_arg(client)?;
        let id = str_arg(response_id, "response_id")?;
        let query = if query_json.is_null() {
            InputItemsQuery::default()
        } else {
            serde_json::from_str(str_arg(query_json, "query_json")?).map_err(|e| {
                ingle_core::Error::invalid("query_json", format!("Invalid query_json: {e}"))
            })?
        };
        let request = serde_json::json!({
            "response_id": id,
            "after": query.after,
            "limit": query.limit,
            "order": query.order,
        });
        give_string(
            out,
            call_whole(client, "responses.input_items.list", &request.to_string())?,
        )
    })
}

/// The query of `ingle_responses_input_items`.
#[derive(Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct InputItemsQuery {
    after: Option<String>,
    limit: Option<i64>,
    order: Option<String>,
}
