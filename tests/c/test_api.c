/* End-to-end tests of the C API on the real default model. Run under valgrind by tests/c/run:
 * any invalid read or write, or a definitely lost block, fails the run.
 *
 * Usage: test_api [TEST...]   (no argument: every test) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "check.h"

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#define MODEL "@local/smollm2-135m-instruct"
#define EMBEDDING_MODEL "@local/all-minilm-l6-v2"
/* A short system message keeps the prompt short (the model's default one is long): under
 * valgrind every prompt token costs over a second, and so does every generated token. */
#define FRANCE_REQUEST(extra)                                                                 \
    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"  \
    "{\"role\":\"user\",\"content\":\"Name the capital of France.\"}],\"temperature\":0" extra "}"

/* One client shared by the tests, made from a JSON config (the config path is tested too). */
static IngleClient *client;

static void test_version(void) {
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", INGLE_VERSION_MAJOR, INGLE_VERSION_MINOR,
             INGLE_VERSION_PATCH);
    CHECK(strcmp(ingle_version(), expected) == 0, "version %s, header %s", ingle_version(), expected);
}

static void test_default_client(void) {
    /* NULL config: $INGLE_CONFIG, or the default model. Creating loads nothing. */
    IngleClient *defaults = NULL;
    CHECK_STATUS(ingle_client_create(NULL, &defaults), INGLE_OK);
    CHECK(defaults != NULL, "no client");
    char *models = NULL;
    CHECK_STATUS(ingle_models_list(defaults, &models), INGLE_OK);
    CHECK(models && strstr(models, "\"id\":\"" MODEL "\""), "models: %s", models);
    CHECK(models && strstr(models, "\"object\":\"list\""), "models: %s", models);
    ingle_string_free(models);
    ingle_client_free(defaults);
    ingle_client_free(NULL); /* a no-op */
    ingle_string_free(NULL); /* a no-op */
}

static void test_system_info(void) {
    char *info = NULL;
    CHECK_STATUS(ingle_system_info(&info), INGLE_OK);
    CHECK(info && strstr(info, "\"cpu_variant\":\""), "%s", info ? info : "(none)");
    CHECK(info && strstr(info, "\"cpu_features\":\"CPU : "), "%s", info ? info : "(none)");
    /* Under valgrind the variant is one valgrind runs (its CPUID hides AVX-512). */
    fprintf(stderr, "system_info: %s\n", info ? info : "(none)");
    ingle_string_free(info);
    CHECK_STATUS(ingle_system_info(NULL), INGLE_ERROR_NULL_ARGUMENT);
}

/* unload frees the model; the next request loads it again and answers the same. */
static void test_unload(void) {
    char *first = NULL, *again = NULL;
    int was_loaded = -1;
    CHECK_STATUS(ingle_chat_completions_create(client, FRANCE_REQUEST(",\"max_tokens\":4"), &first), INGLE_OK);
    CHECK_STATUS(ingle_models_unload(client, MODEL, &was_loaded), INGLE_OK);
    CHECK(was_loaded == 1, "was_loaded: %d", was_loaded);
    CHECK_STATUS(ingle_models_unload(client, MODEL, &was_loaded), INGLE_OK);
    CHECK(was_loaded == 0, "unloaded twice: %d", was_loaded);
    CHECK_STATUS(ingle_models_unload(client, MODEL, NULL), INGLE_OK);
    CHECK_STATUS(ingle_models_unload(client, "@nobody/nothing", NULL), INGLE_ERROR_NOT_FOUND);
    CHECK_STATUS(ingle_models_unload(client, NULL, NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_chat_completions_create(client, FRANCE_REQUEST(",\"max_tokens\":4"), &again), INGLE_OK);
    char *a = first ? json_string(first, "content") : NULL, *b = again ? json_string(again, "content") : NULL;
    CHECK(a && b && strcmp(a, b) == 0, "before unload '%s', after '%s'", a ? a : "", b ? b : "");
    free(a);
    free(b);
    ingle_string_free(first);
    ingle_string_free(again);
}

static void test_models_retrieve(void) {
    char *model = NULL;
    CHECK_STATUS(ingle_models_retrieve(client, MODEL, &model), INGLE_OK);
    CHECK(model && strstr(model, "\"object\":\"model\""), "model: %s", model);
    ingle_string_free(model);
    model = (char *)"not touched";
    CHECK_STATUS(ingle_models_retrieve(client, "@nobody/nothing", &model), INGLE_ERROR_NOT_FOUND);
    CHECK(model == NULL, "out_json must be NULL on failure");
    CHECK(strstr(ingle_last_error(), "@nobody/nothing"), "message names the model");
}

static void test_chat_create_and_stream(void) {
    char *out = NULL;
    CHECK_STATUS(ingle_chat_completions_create(client, FRANCE_REQUEST(",\"max_tokens\":7"), &out),
                 INGLE_OK);
    CHECK(out && strstr(out, "\"object\":\"chat.completion\""), "%s", out);
    CHECK(out && strstr(out, "\"usage\":{\"prompt_tokens\":"), "%s", out);
    char *content = out ? json_string(out, "content") : NULL;
    CHECK(content && strstr(content, "Paris"), "content: %s", content ? content : "(none)");

    /* The same request streamed gives the same text, in chunks, and usage when asked. */
    Collector c = {0};
    CHECK_STATUS(ingle_chat_completions_stream(
                     client, FRANCE_REQUEST(",\"max_tokens\":7,\"stream_options\":{\"include_usage\":true}"),
                     collect_chunk, &c),
                 INGLE_OK);
    CHECK(c.chunks >= 4, "chunks: %d", c.chunks); /* role, content..., finish, usage */
    CHECK(c.bad_chunks == 0, "bad chunks: %d", c.bad_chunks);
    CHECK(c.usage_chunks == 1, "usage chunks: %d", c.usage_chunks);
    CHECK(strcmp(c.finish_reason, "length") == 0 || strcmp(c.finish_reason, "stop") == 0,
          "finish_reason: %s", c.finish_reason);
    CHECK(content && strcmp(content, c.content) == 0, "stream '%s' vs create '%s'", c.content,
          content ? content : "(none)");
    free(content);
    ingle_string_free(out);
}

static void test_cancel_after_three_chunks(void) {
    Collector c = {0};
    c.stop_after = 3;
    /* A text completion: its prompt is two tokens, where a chat prompt is twenty (valgrind). */
    CHECK_STATUS(ingle_completions_stream(client, "{\"model\":\"" MODEL "\",\"prompt\":\"Once upon\","
                                                  "\"max_tokens\":100}", collect_chunk, &c),
                 INGLE_ERROR_CANCELLED);
    CHECK(c.chunks == 3, "the callback ran %d times, expected 3", c.chunks);
    CHECK(strstr(ingle_last_error(), "returned 1"), "message: %s", ingle_last_error());
    CHECK(strstr(ingle_last_error_json(), "\"type\":\"cancelled\""), "%s", ingle_last_error_json());

    /* The client goes on working. */
    char *out = NULL;
    CHECK_STATUS(ingle_completions_create(client, "{\"model\":\"" MODEL "\",\"prompt\":\"Hi\","
                                                  "\"max_tokens\":2}", &out),
                 INGLE_OK);
    CHECK(out && strstr(out, "\"completion_tokens\":2"), "after cancel: %s", out);
    ingle_string_free(out);
}

typedef struct {
    IngleClient *client;
    const char *request;
    IngleStatus status;
    char *out;
    char error_json[1024]; /* the worker thread's last error */
} CreateWorker;

static void *create_worker(void *arg) {
    CreateWorker *w = (CreateWorker *)arg;
    w->status = ingle_completions_create(w->client, w->request, &w->out);
    snprintf(w->error_json, sizeof w->error_json, "%s", ingle_last_error_json());
    return NULL;
}

/* ingle_cancel_set from another thread stops a whole completion of a client made with it; a
 * cancel set before a call stops it at once; the client it was made from is not touched. */
static void test_cancel_from_another_thread(void) {
    IngleCancel *cancel = NULL;
    IngleClient *cancellable = NULL;
    CHECK_STATUS(ingle_cancel_create(&cancel), INGLE_OK);
    CHECK_STATUS(ingle_client_with_cancel(client, cancel, &cancellable), INGLE_OK);
    if (!cancellable) return;
    /* max_tokens far more than the test waits for, and the end tokens (<|endoftext|>, <|im_end|>)
     * barred: only the cancel can end it early. */
    CreateWorker w = {cancellable,
                      "{\"model\":\"" MODEL "\",\"prompt\":\"Once upon\",\"max_tokens\":1000,"
                      "\"logit_bias\":{\"0\":-100,\"2\":-100}}",
                      INGLE_OK, NULL, ""};
    pthread_t thread;
    if (pthread_create(&thread, NULL, create_worker, &w) != 0) {
        CHECK(0, "pthread_create");
        return;
    }
    struct timespec wait = {0, 300 * 1000 * 1000};
    nanosleep(&wait, NULL);
    ingle_cancel_set(cancel);
    ingle_cancel_set(cancel); /* setting twice is harmless */
    pthread_join(thread, NULL);
    CHECK_STATUS(w.status, INGLE_ERROR_CANCELLED);
    CHECK(w.out == NULL, "*out must be NULL on failure");
    CHECK(strstr(w.error_json, "\"type\":\"cancelled\""), "%s", w.error_json);

    /* Set, it stops each later call of that client before it starts. */
    char *out = NULL;
    CHECK_STATUS(ingle_completions_create(cancellable, "{\"model\":\"" MODEL "\",\"prompt\":\"Hi\",\"max_tokens\":2}",
                                          &out),
                 INGLE_ERROR_CANCELLED);
    /* The client it came from, and a client made with a new cancel, work. */
    ingle_client_free(cancellable);
    ingle_cancel_free(cancel);
    CHECK_STATUS(ingle_completions_create(client, "{\"model\":\"" MODEL "\",\"prompt\":\"Hi\",\"max_tokens\":2}", &out),
                 INGLE_OK);
    CHECK(out && strstr(out, "\"completion_tokens\":2"), "after cancel: %s", out);
    ingle_string_free(out);
    out = NULL;
    CHECK_STATUS(ingle_cancel_create(&cancel), INGLE_OK);
    CHECK_STATUS(ingle_client_with_cancel(client, cancel, &cancellable), INGLE_OK);
    ingle_cancel_free(cancel); /* the client made with it outlives it */
    CHECK_STATUS(ingle_completions_create(cancellable, "{\"model\":\"" MODEL "\",\"prompt\":\"Hi\",\"max_tokens\":2}",
                                          &out),
                 INGLE_OK);
    ingle_string_free(out);
    ingle_client_free(cancellable);

    /* NULL arguments. */
    IngleClient *none = (IngleClient *)1;
    CHECK_STATUS(ingle_cancel_create(NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_client_with_cancel(client, NULL, &none), INGLE_ERROR_NULL_ARGUMENT);
    CHECK(none == NULL && strstr(ingle_last_error(), "cancel"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_cancel_create(&cancel), INGLE_OK);
    CHECK_STATUS(ingle_client_with_cancel(NULL, cancel, &none), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_client_with_cancel(client, cancel, NULL), INGLE_ERROR_NULL_ARGUMENT);
    ingle_cancel_free(cancel);
    ingle_cancel_set(NULL);  /* no-ops */
    ingle_cancel_free(NULL);
}

static void test_responses(void) {
    char *out = NULL;
    CHECK_STATUS(ingle_responses_create(client, "{\"model\":\"" MODEL "\",\"input\":\"My name is Ada.\","
                                                "\"temperature\":0,\"max_output_tokens\":4}", &out),
                 INGLE_OK);
    CHECK(out && strstr(out, "\"object\":\"response\"") && strstr(out, "\"output_tokens\":4"), "%s", out);
    char *id = out ? json_string(out, "id") : NULL;
    CHECK(id && strncmp(id, "resp_", 5) == 0, "id: %s", id ? id : "(none)");
    ingle_string_free(out);
    if (!id) return;

    /* Continued by id, streamed: every event in order, the last `response.incomplete`. */
    char request[256];
    snprintf(request, sizeof request, "{\"model\":\"" MODEL "\",\"input\":\"And yours?\",\"temperature\":0,"
             "\"max_output_tokens\":3,\"previous_response_id\":\"%s\"}", id);
    ResponseEvents e = {0};
    CHECK_STATUS(ingle_responses_stream(client, request, collect_response_event, &e), INGLE_OK);
    CHECK(e.events >= 8 && e.out_of_order == 0, "%d events, %d out of order", e.events, e.out_of_order);
    CHECK(strcmp(e.last_type, "response.incomplete") == 0, "last event: %s", e.last_type);
    CHECK(strlen(e.text) > 0, "no text");
    /* An event callback that returns non-zero stops it. */
    ResponseEvents stopped = {0};
    stopped.stop_after = 3;
    CHECK_STATUS(ingle_responses_stream(client, request, collect_response_event, &stopped), INGLE_ERROR_CANCELLED);
    CHECK(stopped.events == 3, "the callback ran %d times", stopped.events);

    /* Stored: retrieved, its input items paged, deleted. */
    CHECK_STATUS(ingle_responses_retrieve(client, id, &out), INGLE_OK);
    CHECK(out && strstr(out, id), "%s", out);
    ingle_string_free(out);
    CHECK_STATUS(ingle_responses_input_items(client, id, "{\"limit\":1,\"order\":\"asc\"}", &out), INGLE_OK);
    CHECK(out && strstr(out, "My name is Ada.") && strstr(out, "\"has_more\":false"), "%s", out);
    ingle_string_free(out);
    CHECK_STATUS(ingle_responses_input_items(client, id, NULL, &out), INGLE_OK);
    ingle_string_free(out);
    out = (char *)"not touched";
    CHECK_STATUS(ingle_responses_input_items(client, id, "{\"limit\":\"ten\"}", &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(out == NULL && strstr(ingle_last_error_json(), "\"param\":\"query_json\""), "%s", ingle_last_error_json());
    CHECK_STATUS(ingle_responses_delete(client, id, &out), INGLE_OK);
    CHECK(out && strstr(out, "\"deleted\":true"), "%s", out);
    ingle_string_free(out);
    CHECK_STATUS(ingle_responses_delete(client, id, NULL), INGLE_ERROR_NOT_FOUND);
    CHECK_STATUS(ingle_responses_retrieve(client, id, &out), INGLE_ERROR_NOT_FOUND);
    CHECK_STATUS(ingle_responses_stream(client, request, collect_response_event, &e), INGLE_ERROR_NOT_FOUND);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"previous_response_id\""), "%s", ingle_last_error_json());
    free(id);

    /* What ingle cannot do is refused naming the field; NULLs are refused. */
    CHECK_STATUS(ingle_responses_create(client, "{\"model\":\"" MODEL "\",\"input\":\"Hi\","
                                                "\"tools\":[{\"type\":\"web_search\"}]}", &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"tools[0].type\""), "%s", ingle_last_error_json());
    CHECK_STATUS(ingle_responses_create(client, NULL, &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_responses_stream(client, "{}", NULL, NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_responses_retrieve(client, NULL, &out), INGLE_ERROR_NULL_ARGUMENT);
}

static void test_completions(void) {
    char *out = NULL;
    const char *request = "{\"model\":\"" MODEL "\",\"prompt\":\"Once upon a time\","
                          "\"max_tokens\":3,\"temperature\":0}";
    CHECK_STATUS(ingle_completions_create(client, request, &out), INGLE_OK);
    CHECK(out && strstr(out, "\"object\":\"text_completion\""), "%s", out);
    char *text = out ? json_string(out, "text") : NULL;
    Collector c = {0};
    CHECK_STATUS(ingle_completions_stream(client, request, collect_chunk, &c), INGLE_OK);
    CHECK(text && strcmp(text, c.content) == 0, "stream '%s' vs create '%s'", c.content,
          text ? text : "(none)");
    CHECK(strcmp(c.finish_reason, "length") == 0, "finish_reason: %s", c.finish_reason);
    free(text);
    ingle_string_free(out);
}

/* Any method of the table by its name: the ones without a typed function of their own too. */
static void test_call_by_method_name(void) {
    char *out = NULL;
    const char *input = "{\"model\":\"" MODEL "\",\"input\":\"Count these words.\"}";
    CHECK_STATUS(ingle_call(client, "responses.input_tokens", input, &out), INGLE_OK);
    CHECK(out && strstr(out, "\"object\":\"response.input_tokens\"") && strstr(out, "\"input_tokens\":"),
          "%s", out);
    ingle_string_free(out);
    CHECK_STATUS(ingle_call(client, "models.retrieve", "{\"model\":\"" MODEL "\"}", &out), INGLE_OK);
    CHECK(out && strstr(out, "\"id\":\"" MODEL "\""), "%s", out);
    ingle_string_free(out);

    const char *request = "{\"model\":\"" MODEL "\",\"prompt\":\"Once upon a time\","
                          "\"max_tokens\":3,\"temperature\":0}";
    Collector c = {0};
    CHECK_STATUS(ingle_call_stream(client, "completions.stream", request, collect_chunk, &c), INGLE_OK);
    CHECK(strcmp(c.finish_reason, "length") == 0, "finish_reason: %s", c.finish_reason);

    out = (char *)"not touched";
    CHECK_STATUS(ingle_call(client, "chat.complete", "{}", &out), INGLE_ERROR_INVALID_REQUEST);
    CHECK(out == NULL, "out_json must be NULL on failure");
    CHECK(strstr(ingle_last_error_json(), "\"code\":\"unknown_method\"") &&
              strstr(ingle_last_error(), "chat.completions.create"),
          "%s", ingle_last_error_json());
    /* Whole and streamed methods are each their function's; audio is its own functions'. */
    CHECK_STATUS(ingle_call(client, "completions.stream", request, &out), INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error(), "ingle_call_stream"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_call_stream(client, "completions.create", request, collect_chunk, &c),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error(), "ingle_call`"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_call(client, "audio.transcriptions.create", "{}", &out), INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error(), "ingle_audio_transcriptions_create"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_call(client, "audio.translations.create", "{}", &out), INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error(), "ingle_audio_translations_create"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_call(client, NULL, "{}", &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"method\""), "%s", ingle_last_error_json());
}

/* tokenize and detokenize: methods of the table with no C function of their own, reached by
 * name as every door reaches them. */
static void test_tokenize(void) {
    char *out = NULL;
    CHECK_STATUS(ingle_call(client, "tokenize",
                            "{\"model\":\"" MODEL "\",\"content\":\"<|im_start|>Hello world\"}", &out),
                 INGLE_OK);
    /* SmolLM2's <|im_start|> is token 1, read as one token (parse_special defaults to true). */
    CHECK(out && strncmp(out, "{\"tokens\":[1,", 13) == 0, "%s", out);
    char request[256];
    const char *ids = strchr(out, '[');
    snprintf(request, sizeof request, "{\"model\":\"" MODEL "\",\"tokens\":%.*s}",
             (int)(strchr(ids, ']') - ids + 1), ids);
    ingle_string_free(out);
    CHECK_STATUS(ingle_call(client, "detokenize", request, &out), INGLE_OK);
    CHECK(out && strcmp(out, "{\"content\":\"<|im_start|>Hello world\"}") == 0, "%s", out);
    ingle_string_free(out);

    out = (char *)"not touched";
    CHECK_STATUS(ingle_call(client, "detokenize", "{\"model\":\"" MODEL "\",\"tokens\":[1,-5]}", &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(out == NULL, "out_json must be NULL on failure");
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"tokens[1]\""), "%s", ingle_last_error_json());
    CHECK_STATUS(ingle_call(client, "tokenize", "{\"model\":\"" EMBEDDING_MODEL "\",\"content\":\"x\"}", &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"model\""), "%s", ingle_last_error_json());
}

static int32_t count_chunk(const char *chunk, size_t len, void *user_data) {
    (void)len;
    int *count = (int *)user_data;
    if (strstr(chunk, "\"results\":[")) (*count)++;
    return 0;
}

static void test_predictions(void) {
    const char *inputs = "{\"prompt\":\"The capital of France is\",\"max_tokens\":2,\"temperature\":0}";
    char *out = NULL;
    CHECK_STATUS(ingle_predictions_create(client, MODEL, inputs, &out), INGLE_OK);
    CHECK(out && strstr(out, "\"id\":\"pred_") && strstr(out, "\"tag\":\"" MODEL "\"") &&
              strstr(out, "\"latency\":") && strstr(out, "\"error\":null"),
          "%s", out);
    ingle_string_free(out);

    int partial = 0;
    CHECK_STATUS(ingle_predictions_stream(client, MODEL, inputs, count_chunk, &partial), INGLE_OK);
    CHECK(partial >= 2, "partial predictions: %d", partial);

    CHECK_STATUS(ingle_predictions_create(client, MODEL, "{\"max_tokens\":\"many\"}", &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"max_tokens\""), "%s", ingle_last_error_json());
    CHECK_STATUS(ingle_predictions_create(client, MODEL, "[1, 2]", &out), INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error(), "JSON object"), "%s", ingle_last_error());
}

static void test_bad_json(void) {
    char *out = (char *)"not touched";
    CHECK_STATUS(ingle_chat_completions_create(client, "{\"model\": ", &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(out == NULL, "out_json must be NULL on failure");
    CHECK(strstr(ingle_last_error(), "not valid JSON") && strstr(ingle_last_error(), "ends early"),
          "%s", ingle_last_error());
    CHECK(strstr(ingle_last_error_json(), "\"param\":null"), "%s", ingle_last_error_json());
    CHECK(strstr(ingle_last_error_json(), "\"type\":\"invalid_request_error\""), "%s",
          ingle_last_error_json());

    Collector c = {0};
    CHECK_STATUS(ingle_chat_completions_stream(client, "[]", collect_chunk, &c),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(c.chunks == 0, "no chunk for a bad request");

    /* A wrong type names the field. */
    CHECK_STATUS(ingle_chat_completions_create(
                     client, FRANCE_REQUEST(",\"max_tokens\":\"ten\""), &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"max_tokens\""), "%s", ingle_last_error_json());

    /* An unknown field is rejected by name. */
    CHECK_STATUS(ingle_chat_completions_create(client, FRANCE_REQUEST(",\"frobnicate\":1"), &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error(), "frobnicate"), "%s", ingle_last_error());

    /* Invalid UTF-8. */
    CHECK_STATUS(ingle_chat_completions_create(client, "{\"model\":\"\xff\xfe\"}", &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error(), "UTF-8"), "%s", ingle_last_error());

    /* stream: true belongs to the stream function. */
    CHECK_STATUS(ingle_chat_completions_create(client, FRANCE_REQUEST(",\"stream\":true"), &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"stream\""), "%s", ingle_last_error_json());
}

static void test_unknown_model(void) {
    char *out = NULL;
    const char *request = "{\"model\":\"@nobody/nothing\",\"messages\":[{\"role\":\"user\","
                          "\"content\":\"hi\"}]}";
    CHECK_STATUS(ingle_chat_completions_create(client, request, &out), INGLE_ERROR_NOT_FOUND);
    CHECK(strstr(ingle_last_error(), "@nobody/nothing"), "%s", ingle_last_error());
    CHECK(strstr(ingle_last_error_json(), "\"code\":\"model_not_found\""), "%s",
          ingle_last_error_json());
    Collector c = {0};
    CHECK_STATUS(ingle_chat_completions_stream(client, request, collect_chunk, &c),
                 INGLE_ERROR_NOT_FOUND);
    CHECK_STATUS(ingle_predictions_create(client, "@nobody/nothing", "{}", &out),
                 INGLE_ERROR_NOT_FOUND);
}

static void test_context_length(void) {
    char *out = NULL;
    CHECK_STATUS(ingle_chat_completions_create(client, FRANCE_REQUEST(",\"max_tokens\":100000"), &out),
                 INGLE_ERROR_CONTEXT_LENGTH_EXCEEDED);
    CHECK(strstr(ingle_last_error_json(), "\"code\":\"context_length_exceeded\""), "%s",
          ingle_last_error_json());
}

static void test_null_arguments(void) {
    char *out = (char *)"not touched";
    Collector c = {0};
    const char *request = FRANCE_REQUEST("");
    CHECK_STATUS(ingle_client_create(NULL, NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK(strstr(ingle_last_error(), "`out`"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_chat_completions_create(NULL, request, &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK(out == NULL, "out_json must be NULL on failure");
    CHECK(strstr(ingle_last_error(), "`client` must not be NULL"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_chat_completions_create(client, NULL, &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK(strstr(ingle_last_error(), "request_json"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_chat_completions_create(client, request, NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_chat_completions_stream(NULL, request, collect_chunk, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_chat_completions_stream(client, NULL, collect_chunk, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_chat_completions_stream(client, request, NULL, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK(strstr(ingle_last_error(), "on_chunk"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_completions_create(NULL, request, &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_completions_create(client, NULL, &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_completions_create(client, request, NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_completions_stream(NULL, request, collect_chunk, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_completions_stream(client, NULL, collect_chunk, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_completions_stream(client, request, NULL, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_models_list(NULL, &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_models_list(client, NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_models_retrieve(client, NULL, &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_predictions_create(client, NULL, "{}", &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_predictions_create(client, MODEL, NULL, &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_predictions_create(client, MODEL, "{}", NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_predictions_stream(client, NULL, "{}", count_chunk, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_predictions_stream(client, MODEL, NULL, count_chunk, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_predictions_stream(client, MODEL, "{}", NULL, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK(c.chunks == 0, "no callback for a NULL argument");
    CHECK(strstr(ingle_last_error_json(), "\"code\":\"null_argument\""), "%s", ingle_last_error_json());
}

static void test_bad_config(void) {
    IngleClient *other = (IngleClient *)&other;
    CHECK_STATUS(ingle_client_create("{\"predictors\": 3}", &other), INGLE_ERROR_INVALID_REQUEST);
    CHECK(other == NULL, "*out must be NULL on failure");
    CHECK(strstr(ingle_last_error(), "predictors"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_client_create("{\"modelz_dir\": \"/tmp\"}", &other), INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error(), "modelz_dir"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_client_create("not json", &other), INGLE_ERROR_INVALID_REQUEST);

    /* A model file that does not exist: the client is created (models load on first use), the
     * request fails with a message that says how to get the model, and the client stays usable. */
    const char *missing = "{\"models_dir\":\"/nonexistent\",\"predictors\":[{\"tag\":\"@me/gone\","
                          "\"backend\":\"llama\",\"model\":\"SmolLM2-135M-Instruct.Q4_1.gguf\"}]}";
    CHECK_STATUS(ingle_client_create(missing, &other), INGLE_OK);
    char *out = NULL;
    const char *request = "{\"model\":\"@me/gone\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    CHECK_STATUS(ingle_chat_completions_create(other, request, &out), INGLE_ERROR_NOT_FOUND);
    CHECK(strstr(ingle_last_error(), "/nonexistent/SmolLM2-135M-Instruct.Q4_1.gguf") &&
              strstr(ingle_last_error(), "ingle pull @local/smollm2-135m-instruct"),
          "%s", ingle_last_error());
    CHECK_STATUS(ingle_models_list(other, &out), INGLE_OK);
    ingle_string_free(out);
    ingle_client_free(other);
}

/* Hostile input: each is a clear error, and the client answers normally afterwards. */
static void test_hostile_input(void) {
    char *out = (char *)"not touched";
    /* A request is exactly one JSON document: trailing data is refused, with no param. */
    const char *trailing[] = {FRANCE_REQUEST("") " xyz", FRANCE_REQUEST("") FRANCE_REQUEST(""),
                              FRANCE_REQUEST("") "}]]"};
    for (size_t i = 0; i < sizeof trailing / sizeof *trailing; i++) {
        CHECK_STATUS(ingle_chat_completions_create(client, trailing[i], &out),
                     INGLE_ERROR_INVALID_REQUEST);
        CHECK(out == NULL, "out_json must be NULL on failure");
        CHECK(strstr(ingle_last_error(), "one JSON document"), "%s", ingle_last_error());
        CHECK(strstr(ingle_last_error_json(), "\"param\":null"), "%s", ingle_last_error_json());
    }
    CHECK_STATUS(ingle_completions_create(
                     client, "{\"model\":\"" MODEL "\",\"prompt\":\"x\"} 1", &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK_STATUS(ingle_predictions_create(client, MODEL, "{\"prompt\":\"x\"} {}", &out),
                 INGLE_ERROR_INVALID_REQUEST);
    IngleClient *other = NULL;
    CHECK_STATUS(ingle_client_create("{} {}", &other), INGLE_ERROR_INVALID_REQUEST);

    /* A syntax error names no param ("?" before) and says where. */
    CHECK_STATUS(ingle_chat_completions_create(client, "{model: 1}", &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":null") &&
              strstr(ingle_last_error(), "key must be a string at line 1 column 2"),
          "%s", ingle_last_error_json());

    /* A 1 MB model name is not echoed whole into ingle_last_error. */
    size_t huge_len = 1 << 20;
    char *request = (char *)malloc(huge_len + 128);
    strcpy(request, "{\"model\":\"");
    memset(request + strlen(request), 'm', huge_len);
    strcpy(request + 10 + huge_len,
           "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    CHECK_STATUS(ingle_chat_completions_create(client, request, &out), INGLE_ERROR_NOT_FOUND);
    CHECK(strlen(ingle_last_error()) < 1024, "a %zu byte error", strlen(ingle_last_error()));
    CHECK(strlen(ingle_last_error_json()) < 1024, "a %zu byte error",
          strlen(ingle_last_error_json()));
    free(request);

    /* Config values that would hang or crash llama.cpp are refused by field. */
    CHECK_STATUS(ingle_client_create("{\"predictors\":[{\"tag\":\"t\",\"backend\":\"llama\","
                                     "\"model\":\"m.gguf\",\"threads\":100000}]}",
                                     &other),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"predictors[0].threads\""), "%s",
          ingle_last_error_json());
    CHECK_STATUS(ingle_client_create("{\"predictors\":[{\"tag\":\"t\",\"backend\":\"llama\","
                                     "\"model\":\"m.gguf\",\"chat_template\":\"nope\"}]}",
                                     &other),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"predictors[0].chat_template\""), "%s",
          ingle_last_error_json());
    CHECK(other == NULL, "*out must be NULL on failure");

    /* Still answering (under valgrind a generation costs a minute: the tests after this one
     * generate on the same client). */
    CHECK_STATUS(ingle_models_retrieve(client, MODEL, &out), INGLE_OK);
    ingle_string_free(out);
}

static float dot(const float *a, const float *b, size_t n) {
    float sum = 0;
    for (size_t i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}

static int near(float x, float expected, float tolerance) {
    return x > expected - tolerance && x < expected + tolerance;
}

static void test_embeddings(void) {
    /* The matrix: the reference cosines of MODELS.md, unit rows, no JSON numbers. */
    IngleEmbeddingMatrix *m = NULL;
    const char *request = "{\"model\":\"" EMBEDDING_MODEL "\",\"input\":[\"The capital of France is "
                          "Paris.\",\"Paris is France's capital city.\",\"I like turtles.\"]}";
    CHECK_STATUS(ingle_embeddings_create_matrix(client, request, &m), INGLE_OK);
    CHECK(m && m->rows == 3 && m->dims == 384, "rows %zu, dims %zu", m ? m->rows : 0, m ? m->dims : 0);
    if (m && m->rows == 3 && m->dims == 384) {
        const float *v = m->data;
        float paraphrase = dot(v, v + 384, 384), unrelated = dot(v, v + 768, 384);
        CHECK(near(paraphrase, 0.966f, 0.01f), "paraphrase cosine %f", paraphrase);
        CHECK(near(unrelated, 0.010f, 0.03f), "unrelated cosine %f", unrelated);
        for (int i = 0; i < 3; i++) CHECK(near(dot(v + 384 * i, v + 384 * i, 384), 1, 1e-4f), "row %d", i);
        CHECK(m->prompt_tokens > 3, "prompt_tokens %zu", m->prompt_tokens);
    }
    ingle_embedding_matrix_free(m);
    ingle_embedding_matrix_free(NULL); /* a no-op */

    /* dimensions: shorter unit vectors. */
    m = NULL;
    CHECK_STATUS(ingle_embeddings_create_matrix(
                     client, "{\"model\":\"" EMBEDDING_MODEL "\",\"input\":\"Hi\",\"dimensions\":128}", &m),
                 INGLE_OK);
    CHECK(m && m->rows == 1 && m->dims == 128, "dims %zu", m ? m->dims : 0);
    if (m) CHECK(near(dot(m->data, m->data, m->dims), 1, 1e-4f), "not a unit vector");
    ingle_embedding_matrix_free(m);

    /* The OpenAI JSON, floats and base64. */
    char *out = NULL;
    CHECK_STATUS(ingle_embeddings_create(client, "{\"model\":\"" EMBEDDING_MODEL "\",\"input\":\"Hi\"}", &out),
                 INGLE_OK);
    CHECK(out && strstr(out, "\"object\":\"list\"") && strstr(out, "\"object\":\"embedding\"") &&
              strstr(out, "\"embedding\":[") && strstr(out, "\"usage\":{\"prompt_tokens\":3,\"total_tokens\":3}"),
          "%s", out ? out : "(null)");
    ingle_string_free(out);
    out = NULL;
    CHECK_STATUS(ingle_embeddings_create(client, "{\"model\":\"" EMBEDDING_MODEL "\",\"input\":[\"Hi\"],"
                                                 "\"encoding_format\":\"base64\"}", &out),
                 INGLE_OK);
    char *encoded = out ? json_string(out, "embedding") : NULL;
    CHECK(encoded && strlen(encoded) == 4 * ((384 * 4 + 2) / 3), "base64: %s", encoded ? encoded : "(none)");
    free(encoded);
    ingle_string_free(out);

    /* Errors name the parameter; out-pointers are NULL; the client stays usable. */
    static const struct {
        const char *request, *param;
    } bad[] = {
        {"{\"model\":\"" EMBEDDING_MODEL "\",\"input\":[]}", "\"param\":\"input\""},
        {"{\"model\":\"" EMBEDDING_MODEL "\",\"input\":[\"a\",\"\"]}", "\"param\":\"input[1]\""},
        {"{\"model\":\"" EMBEDDING_MODEL "\",\"input\":[1,2]}", "\"param\":\"input\""},
        {"{\"model\":\"" EMBEDDING_MODEL "\",\"input\":\"a\",\"dimensions\":999}", "\"param\":\"dimensions\""},
        {"{\"model\":\"" EMBEDDING_MODEL "\",\"input\":\"a\",\"encoding_format\":\"hex\"}", "\"param\":\"encoding_format\""},
        {"{\"model\":\"" MODEL "\",\"input\":\"a\"}", "annotated Embedding"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        out = (char *)"not touched";
        m = (IngleEmbeddingMatrix *)&m;
        CHECK_STATUS(ingle_embeddings_create(client, bad[i].request, &out), INGLE_ERROR_INVALID_REQUEST);
        CHECK(out == NULL, "out_json must be NULL on failure");
        CHECK(strstr(ingle_last_error_json(), bad[i].param), "%s: %s", bad[i].request, ingle_last_error_json());
        CHECK_STATUS(ingle_embeddings_create_matrix(client, bad[i].request, &m), INGLE_ERROR_INVALID_REQUEST);
        CHECK(m == NULL, "*out must be NULL on failure");
    }
    CHECK_STATUS(ingle_embeddings_create(NULL, request, &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_embeddings_create(client, NULL, &out), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_embeddings_create(client, request, NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_embeddings_create_matrix(NULL, request, &m), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_embeddings_create_matrix(client, NULL, &m), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_embeddings_create_matrix(client, request, NULL), INGLE_ERROR_NULL_ARGUMENT);
    m = NULL;
    CHECK_STATUS(ingle_embeddings_create_matrix(client, "{\"model\":\"" EMBEDDING_MODEL "\",\"input\":\"ok\"}", &m),
                 INGLE_OK);
    ingle_embedding_matrix_free(m);
}

/* Rerank: the embedding model ranks the Paris document first, by its function and by name
 * through ingle_call; TEI's shape with "texts"; errors name the field. */
static void test_rerank(void) {
    const char *request = "{\"model\":\"" EMBEDDING_MODEL "\",\"query\":\"What is the capital of France?\","
                          "\"documents\":[\"Berlin is the capital of Germany.\","
                          "\"Paris is the capital and largest city of France.\",\"Bananas are yellow.\"],"
                          "\"top_n\":2}";
    char *out = NULL;
    CHECK_STATUS(ingle_rerank_create(client, request, &out), INGLE_OK);
    CHECK(out && strstr(out, "\"results\":[{\"index\":1,") && strstr(out, "\"text\":\"Paris is the capital") &&
              !strstr(out, "\"index\":2"),
          "%s", out ? out : "(null)");
    ingle_string_free(out);
    out = NULL;
    CHECK_STATUS(ingle_call(client, "rerank.create", request, &out), INGLE_OK);
    CHECK(out && strstr(out, "\"results\":[{\"index\":1,"), "%s", out ? out : "(null)");
    ingle_string_free(out);
    out = NULL;
    CHECK_STATUS(ingle_rerank_create(client, "{\"model\":\"" EMBEDDING_MODEL "\",\"query\":\"France\","
                                             "\"texts\":[\"Bananas\",\"Paris, France\"]}", &out),
                 INGLE_OK);
    CHECK(out && out[0] == '[' && strstr(out, "{\"index\":1,\"score\":") && !strstr(out, "\"text\""),
          "TEI's shape: %s", out ? out : "(null)");
    ingle_string_free(out);
    out = (char *)"not touched";
    CHECK_STATUS(ingle_rerank_create(client, "{\"model\":\"" EMBEDDING_MODEL "\",\"query\":\"q\",\"documents\":[\"a\",7]}",
                                     &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(out == NULL, "out_json must be NULL on failure");
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"documents[1]\""), "%s", ingle_last_error_json());
    CHECK_STATUS(ingle_rerank_create(client, NULL, &out), INGLE_ERROR_NULL_ARGUMENT);
}

/* Four threads stream at once on the one client; the last error is per thread. */
typedef struct {
    int index;
    IngleStatus status;
    Collector collector;
    int own_error_kept;
} Worker;

static void *stream_worker(void *arg) {
    Worker *w = (Worker *)arg;
    char request[512];
    static const char *prompts[] = {"Once upon", "The sky is", "Hello", "1, 2, 3,"};
    snprintf(request, sizeof request,
             "{\"model\":\"" MODEL "\",\"prompt\":\"%s\",\"max_tokens\":3,\"seed\":%d,"
             "\"stream_options\":{\"include_usage\":true}}",
             prompts[w->index], w->index);
    char *out = NULL;
    char marker[32];
    snprintf(marker, sizeof marker, "@thread/%d", w->index);
    ingle_models_retrieve(client, marker, &out); /* fails: sets this thread's last error */
    w->status = ingle_completions_stream(client, request, collect_chunk, &w->collector);
    w->own_error_kept = strstr(ingle_last_error(), marker) != NULL;
    return NULL;
}

static void test_four_threads(void) {
    pthread_t threads[4];
    Worker workers[4];
    memset(workers, 0, sizeof workers);
    for (int i = 0; i < 4; i++) {
        workers[i].index = i;
        CHECK(pthread_create(&threads[i], NULL, stream_worker, &workers[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < 4; i++) {
        CHECK_STATUS(workers[i].status, INGLE_OK);
        CHECK(workers[i].collector.chunks >= 4, "thread %d: %d chunks", i, workers[i].collector.chunks);
        CHECK(workers[i].collector.bad_chunks == 0, "thread %d: bad chunks", i);
        CHECK(workers[i].collector.usage_chunks == 1, "thread %d: no usage chunk", i);
        CHECK(strlen(workers[i].collector.content) > 0, "thread %d: no content", i);
        CHECK(workers[i].own_error_kept, "thread %d: its last error was changed by another thread", i);
    }
}

typedef struct {
    int events;
    int stop_after; /* 0: never */
    IngleCancel *cancel_after_two; /* set at the second event, as another thread would */
    char last[512];
} PullProgress;

static int32_t on_pull_progress(const char *json, size_t len, void *user_data) {
    PullProgress *p = user_data;
    p->events++;
    snprintf(p->last, sizeof p->last, "%.*s", (int)len, json);
    if (p->cancel_after_two && p->events == 2) ingle_cancel_set(p->cancel_after_two);
    return p->stop_after > 0 && p->events >= p->stop_after;
}

/* ingle_models_pull from the mirror tests/c/run serves on 127.0.0.1 (INGLE_CATALOG names a
 * catalog with `@test/blob` there) into an empty models directory. */
static void test_models_pull(void) {
    const char *size = getenv("INGLE_TEST_PULL_SIZE");
    CHECK(getenv("INGLE_CATALOG") && size, "tests/c/run serves the file to pull: run the tests through it");
    char dir[] = "/tmp/ingle-c-pull-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char config[256], path[512];
    snprintf(config, sizeof config, "{\"models_dir\":\"%s\"}", dir);
    snprintf(path, sizeof path, "%s/test/blob.bin", dir);
    IngleClient *c = NULL;
    CHECK_STATUS(ingle_client_create(config, &c), INGLE_OK);

    PullProgress progress = {0};
    char *report = NULL;
    CHECK_STATUS(ingle_models_pull(c, "@test/blob", on_pull_progress, &progress, &report), INGLE_OK);
    CHECK(strstr(report, "\"tag\":\"@test/blob\"") && strstr(report, "\"fetched\":true"), "%s", report);
    ingle_string_free(report);
    CHECK(progress.events > 2 && strstr(progress.last, "\"status\":\"success\""), "%d events, last %s",
          progress.events, progress.last);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size == atol(size), "%s: not %s bytes", path, size);
    /* Again, with no callback and no report wanted: verified in place. */
    CHECK_STATUS(ingle_models_pull(c, "@test/blob", NULL, NULL, NULL), INGLE_OK);

    /* Stopped by the callback: CANCELLED, nothing at the model's path, the client usable. */
    unlink(path);
    PullProgress stop = {.stop_after = 2};
    report = (char *)"not touched";
    CHECK_STATUS(ingle_models_pull(c, "@test/blob", on_pull_progress, &stop, &report), INGLE_ERROR_CANCELLED);
    CHECK(report == NULL && strstr(ingle_last_error(), "on_progress"), "%s", ingle_last_error());
    CHECK(stat(path, &st) != 0, "a stopped pull left %s", path);
    CHECK_STATUS(ingle_models_pull(c, "@test/blob", NULL, NULL, NULL), INGLE_OK);
    CHECK(stat(path, &st) == 0 && st.st_size == atol(size), "%s after resuming", path);

    /* Stopped by the client's cancel: the same, at the next chunk. */
    unlink(path);
    IngleCancel *cancel = NULL;
    IngleClient *cancellable = NULL;
    CHECK_STATUS(ingle_cancel_create(&cancel), INGLE_OK);
    CHECK_STATUS(ingle_client_with_cancel(c, cancel, &cancellable), INGLE_OK);
    PullProgress cancelled = {.cancel_after_two = cancel};
    CHECK_STATUS(ingle_models_pull(cancellable, "@test/blob", on_pull_progress, &cancelled, NULL),
                 INGLE_ERROR_CANCELLED);
    CHECK(cancelled.events == 2, "%d events after the cancel", cancelled.events);
    CHECK(stat(path, &st) != 0, "a cancelled pull left %s", path);
    /* Set, it stops the next pull before it starts. */
    CHECK_STATUS(ingle_models_pull(cancellable, "@test/blob", NULL, NULL, NULL), INGLE_ERROR_CANCELLED);
    ingle_client_free(cancellable);
    ingle_cancel_free(cancel);
    CHECK_STATUS(ingle_models_pull(c, "@test/blob", NULL, NULL, NULL), INGLE_OK);

    CHECK_STATUS(ingle_models_pull(c, "@test/none", NULL, NULL, NULL), INGLE_ERROR_NOT_FOUND);
    CHECK(strstr(ingle_last_error(), "@test/blob"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_models_pull(c, NULL, NULL, NULL, NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_models_pull(NULL, "@test/blob", NULL, NULL, NULL), INGLE_ERROR_NULL_ARGUMENT);
    ingle_client_free(c);
    char command[600];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    CHECK(system(command) == 0, "%s", command);
}

static const Test tests[] = {
    {"version", test_version},
    {"default_client", test_default_client},
    {"models_retrieve", test_models_retrieve},
    {"system_info", test_system_info},
    {"unload", test_unload},
    {"chat_create_and_stream", test_chat_create_and_stream},
    {"cancel_after_three_chunks", test_cancel_after_three_chunks},
    {"cancel_from_another_thread", test_cancel_from_another_thread},
    {"responses", test_responses},
    {"completions", test_completions},
    {"call_by_method_name", test_call_by_method_name},
    {"tokenize", test_tokenize},
    {"predictions", test_predictions},
    {"bad_json", test_bad_json},
    {"unknown_model", test_unknown_model},
    {"context_length", test_context_length},
    {"null_arguments", test_null_arguments},
    {"bad_config", test_bad_config},
    {"hostile_input", test_hostile_input},
    {"four_threads", test_four_threads},
    {"embeddings", test_embeddings},
    {"rerank", test_rerank},
    {"models_pull", test_models_pull},
};

int main(int argc, char **argv) {
    /* The shared client comes from a JSON config: the default models, with a small context. */
    const char *config = "{\"predictors\":[{\"tag\":\"" MODEL "\",\"backend\":\"llama\","
                         "\"model\":\"SmolLM2-135M-Instruct.Q4_1.gguf\",\"n_ctx\":1024,\"threads\":1},"
                         "{\"tag\":\"" EMBEDDING_MODEL "\",\"backend\":\"onnx-embedding\",\"threads\":1,"
                         "\"model\":\"all-minilm-l6-v2/model.onnx\",\"tokenizer\":\"all-minilm-l6-v2/tokenizer.json\"}]}";
    if (ingle_client_create(config, &client) != INGLE_OK) {
        fprintf(stderr, "cannot create the client: %s\n", ingle_last_error());
        return 1;
    }
    int status = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    ingle_client_free(client);
    return status;
}
