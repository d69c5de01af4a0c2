/* Predictors written in C (ingle_predictor_register), served through the OpenAI functions and
 * ingle_predictions_*: a chat generator, a speech predictor, an embedding predictor and a
 * transcription predictor, failures, cancellation and the registration rules. No model is
 * loaded, so the whole program runs under valgrind. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static IngleClient *client;

/* --- The predictors ------------------------------------------------------------------------ */

static atomic_int echo_cancelled; /* set when an emit of the echo predictor was refused */

/* Echoes the last message's words; `messages` is the declared input. */
static int32_t echo(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)user_data;
    const char *json = ingle_inputs_json(inputs);
    const char *last = strrchr(json, '{'); /* the last message object */
    char *content = last ? json_string(last, "content") : NULL;
    if (!content) {
        ingle_sink_fail(sink, "no content in the last message");
        return 1;
    }
    ingle_sink_log(sink, "echoing\n");
    char *save = NULL;
    for (char *word = strtok_r(content, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
        char out[256];
        snprintf(out, sizeof out, "{\"text\":\"%s \"}", word);
        IngleStatus status = ingle_sink_emit(sink, out);
        if (status == INGLE_ERROR_CANCELLED) {
            atomic_store(&echo_cancelled, 1);
            break;
        }
    }
    free(content);
    return 0;
}

#define RATE 16000

/* A 0.1 s tone per character, 220 Hz for the voice "low", 880 Hz for "high". */
static int32_t tone(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)user_data;
    const char *json = ingle_inputs_json(inputs);
    char *text = json_string(json, "text"), *voice = json_string(json, "voice");
    double frequency = voice && strcmp(voice, "high") == 0 ? 880.0 : 220.0;
    size_t frames = text ? strlen(text) * RATE / 10 : 0;
    float *samples = (float *)malloc((frames ? frames : 1) * sizeof(float));
    for (size_t i = 0; i < frames; i++) samples[i] = (float)(0.5 * sin(2 * 3.14159265358979 * frequency * (double)i / RATE));
    IngleStatus status = ingle_sink_set_audio(sink, "audio", samples, frames, 1, RATE);
    if (status == INGLE_OK) status = ingle_sink_emit(sink, NULL);
    free(samples);
    free(text);
    free(voice);
    return status == INGLE_OK ? 0 : 1;
}

/* Row i of the embedding: i + 1 in each of its 3 dimensions. */
static int32_t embed(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)user_data;
    const char *json = ingle_inputs_json(inputs);
    size_t rows = 0;
    for (const char *p = strstr(json, "\"texts\":["); p && *p && *p != ']'; p++) rows += *p == ',';
    rows += 1;
    size_t shape[2] = {rows, 3};
    float data[3 * 16];
    for (size_t i = 0; i < rows * 3 && i < 48; i++) data[i] = (float)(i / 3 + 1);
    if (ingle_sink_set_tensor(sink, "embeddings", "float32", shape, 2, data) != INGLE_OK) return 1;
    return ingle_sink_emit(sink, NULL) == INGLE_OK ? 0 : 1;
}

/* The audio input `audio`; on failure, fails the prediction with the reason and returns 0. */
static int audio_input(const IngleInputs *inputs, IngleSink *sink, const float **samples, size_t *frames,
                       uint16_t *channels, uint32_t *rate) {
    if (ingle_inputs_audio(inputs, "audio", samples, frames, channels, rate) == INGLE_OK) return 1;
    ingle_sink_fail(sink, ingle_last_error());
    return 0;
}

/* Says how many samples it heard, at its 8 kHz. */
static int32_t listen(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)user_data;
    const float *samples = NULL;
    size_t frames = 0;
    uint16_t channels = 0;
    uint32_t rate = 0;
    if (!audio_input(inputs, sink, &samples, &frames, &channels, &rate)) return 1;
    char out[128];
    snprintf(out, sizeof out, "{\"text\":\"%zu frames of %u channel at %u Hz\"}", frames, channels, rate);
    return ingle_sink_emit(sink, out) == INGLE_OK ? 0 : 1;
}

/* The media of the messages (ChatImages, ChatAudios at 8 kHz): for each image its width,
 * height, channels and first pixel, for each audio part its frames, read raw by the names the
 * inputs' JSON lists. */
static int32_t see(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)user_data;
    const char *json = ingle_inputs_json(inputs);
    char out[512] = "{\"text\":\"";
    for (int i = 0; i < 8; i++) {
        char name[32];
        const void *data = NULL;
        const char *dtype = NULL;
        const size_t *shape = NULL;
        size_t ndim = 0;
        snprintf(name, sizeof name, "images[%d]", i);
        if (!strstr(json, name)) break;
        if (ingle_inputs_tensor(inputs, name, &data, &dtype, &shape, &ndim) != INGLE_OK || ndim != 3) return 1;
        const uint8_t *pixels = (const uint8_t *)data;
        snprintf(out + strlen(out), sizeof out - strlen(out), "image %zux%zux%zu %s %u,%u,%u; ", shape[1], shape[0],
                 shape[2], dtype, pixels[0], pixels[1], pixels[2]);
    }
    for (int i = 0; i < 8; i++) {
        char name[32];
        const float *samples = NULL;
        size_t frames = 0;
        uint16_t channels = 0;
        uint32_t rate = 0;
        snprintf(name, sizeof name, "audios[%d]", i);
        if (!strstr(json, name)) break;
        if (ingle_inputs_audio(inputs, name, &samples, &frames, &channels, &rate) != INGLE_OK) return 1;
        snprintf(out + strlen(out), sizeof out - strlen(out), "audio ~%zu00 frames at %u Hz; ", (frames + 50) / 100, rate);
    }
    strcat(out, "\"}");
    return ingle_sink_emit(sink, out) == INGLE_OK ? 0 : 1;
}

/* A segment per started second of its 16 kHz audio, each with one word per half second when
 * word timestamps are asked for: the shape Whisper's segments have, for verbose_json, srt and the
 * streamed events, so every transcription function runs under valgrind without a model. */
static int32_t words(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)user_data;
    const float *samples = NULL;
    size_t frames = 0;
    uint16_t channels = 0;
    uint32_t rate = 0;
    if (!audio_input(inputs, sink, &samples, &frames, &channels, &rate)) return 1;
    int timed = strstr(ingle_inputs_json(inputs), "\"words\":true") != NULL;
    size_t seconds = (frames + rate - 1) / rate;
    for (size_t s = 0; s < seconds && !ingle_sink_cancelled(sink); s++) {
        double end = (double)(s + 1 < seconds ? (s + 1) * rate : frames) / rate;
        char out[512];
        if (timed)
            snprintf(out, sizeof out,
                     "{\"text\":\" second %zu\",\"segment\":{\"start\":%zu.0,\"end\":%.3f,\"text\":\" second %zu\","
                     "\"words\":[{\"word\":\" second\",\"start\":%zu.0,\"end\":%zu.5},{\"word\":\" %zu\",\"start\":%zu.5,"
                     "\"end\":%.3f}]}}",
                     s + 1, s, end, s + 1, s, s, s + 1, s, end);
        else
            snprintf(out, sizeof out, "{\"text\":\" second %zu\",\"segment\":{\"start\":%zu.0,\"end\":%.3f,\"text\":\" second %zu\"}}",
                     s + 1, s, end, s + 1);
        if (ingle_sink_emit(sink, out) != INGLE_OK) break;
    }
    return 0;
}

/* Text completion: the prompt's words back, one per output. */
static int32_t repeat(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)user_data;
    char *prompt = json_string(ingle_inputs_json(inputs), "prompt");
    if (!prompt) {
        ingle_sink_fail(sink, "no prompt");
        return 1;
    }
    char *save = NULL;
    for (char *word = strtok_r(prompt, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
        char out[256];
        snprintf(out, sizeof out, "{\"text\":\" %s\"}", word);
        if (ingle_sink_emit(sink, out) != INGLE_OK) break;
    }
    free(prompt);
    return 0;
}

static int json_int(const char *json, const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(json, pattern);
    return at ? atoi(at + strlen(pattern)) : 0;
}

static atomic_int vast_refused; /* set when paint's 50,000 x 50,000 tensor was refused */

/* An image: red if the prompt says so (else blue), green a gradient along x, (H, W, 3) uint8. */
static int32_t paint(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)user_data;
    const char *json = ingle_inputs_json(inputs);
    int width = json_int(json, "width"), height = json_int(json, "height");
    char *prompt = json_string(json, "prompt");
    int red = prompt && strstr(prompt, "red") != NULL;
    int vast = prompt && strcmp(prompt, "vast") == 0;
    free(prompt);
    if (vast) {
        /* 50,000 x 50,000 x 3 claimed over 3 bytes: refused from the shape, the data unread. */
        static const unsigned char three[3] = {0};
        size_t claimed[3] = {50000, 50000, 3};
        IngleStatus refused = ingle_sink_set_tensor(sink, "image", "uint8", claimed, 3, three);
        atomic_store(&vast_refused, refused == INGLE_ERROR_INVALID_REQUEST &&
                                        strstr(ingle_last_error_json(), "\"param\":\"shape\"") != NULL);
        ingle_sink_fail(sink, "the image is too large");
        return 1;
    }
    size_t shape[3] = {(size_t)height, (size_t)width, 3};
    unsigned char *pixels = (unsigned char *)malloc((size_t)width * (size_t)height * 3);
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            unsigned char *p = pixels + ((size_t)y * (size_t)width + (size_t)x) * 3;
            p[0] = red ? 255 : 0;
            p[1] = (unsigned char)(width > 1 ? x * 255 / (width - 1) : 0);
            p[2] = red ? 0 : 255;
        }
    IngleStatus status = ingle_sink_set_tensor(sink, "image", "uint8", shape, 3, pixels);
    if (status == INGLE_OK) status = ingle_sink_emit(sink, NULL);
    free(pixels);
    return status == INGLE_OK ? 0 : 1;
}

/* Fails after one output, with a message and a log line. */
static int32_t fails(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)inputs;
    (void)user_data;
    ingle_sink_emit(sink, "{\"n\":1}");
    ingle_sink_log(sink, "about to fail\n");
    ingle_sink_fail(sink, "the disk is full");
    return 1;
}

/* Emits an output it does not declare: the emit is refused, and it returns that. */
static int32_t stray(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)inputs;
    (void)user_data;
    IngleStatus status = ingle_sink_emit(sink, "{\"m\":1}");
    CHECK(status == INGLE_ERROR_INVALID_REQUEST, "emit of an unknown output: %d", status);
    CHECK(strstr(ingle_last_error(), "no output `m`") != NULL, "%s", ingle_last_error());
    return ingle_sink_emit(sink, "{\"n\":2}") == INGLE_OK ? 0 : 1;
}

static const char *ECHO = "{\"tag\":\"@c/echo\",\"kind\":\"generator\",\"inputs\":[{\"name\":\"messages\",\"type\":"
                          "\"array\",\"annotation\":\"chat_messages\"}],\"outputs\":[{\"name\":\"text\",\"type\":"
                          "\"string\",\"annotation\":\"text_delta\"}]}";
static const char *TONE = "{\"tag\":\"@c/tone\",\"inputs\":[{\"name\":\"voice\",\"type\":\"string\",\"annotation\":"
                          "{\"type\":\"audio_voice\",\"voices\":[\"low\",\"high\"]}},{\"name\":\"text\",\"type\":"
                          "\"string\"}],\"outputs\":[{\"name\":\"audio\",\"type\":\"audio\",\"annotation\":{\"type\":"
                          "\"audio\",\"sample_rate\":16000}}]}";
static const char *EMBED = "{\"tag\":\"@c/embed\",\"inputs\":[{\"name\":\"texts\",\"type\":\"array\",\"annotation\":"
                           "\"embedding\"}],\"outputs\":[{\"name\":\"embeddings\",\"type\":\"tensor\","
                           "\"annotation\":\"embedding\"}]}";
static const char *LISTEN = "{\"tag\":\"@c/listen\",\"inputs\":[{\"name\":\"audio\",\"type\":\"audio\",\"annotation\":"
                            "{\"type\":\"audio\",\"sample_rate\":8000}}],\"outputs\":[{\"name\":\"text\",\"type\":"
                            "\"string\",\"annotation\":\"text_delta\"}]}";
static const char *WORDS = "{\"tag\":\"@c/words\",\"kind\":\"generator\",\"inputs\":[{\"name\":\"audio\",\"type\":"
                           "\"audio\",\"annotation\":{\"type\":\"audio\",\"sample_rate\":16000}},{\"name\":\"words\","
                           "\"type\":\"boolean\",\"default\":false,\"annotation\":\"transcription_word_timestamps\"}],"
                           "\"outputs\":[{\"name\":\"text\",\"type\":\"string\",\"annotation\":\"text_delta\"},{\"name\":"
                           "\"segment\",\"type\":\"object\",\"annotation\":\"transcription_segment\"}]}";
static const char *REPEAT = "{\"tag\":\"@c/repeat\",\"kind\":\"generator\",\"inputs\":[{\"name\":\"prompt\",\"type\":"
                            "\"string\",\"annotation\":\"prompt\"},{\"name\":\"max_tokens\",\"type\":\"integer\","
                            "\"default\":16,\"annotation\":\"max_tokens\"}],\"outputs\":[{\"name\":\"text\",\"type\":"
                            "\"string\",\"annotation\":\"text_delta\"}]}";
static const char *PAINT = "{\"tag\":\"@c/paint\",\"inputs\":[{\"name\":\"prompt\",\"type\":\"string\"},"
                           "{\"name\":\"width\",\"type\":\"integer\",\"default\":4,\"max\":64,\"annotation\":\"image_width\"},"
                           "{\"name\":\"height\",\"type\":\"integer\",\"default\":2,\"annotation\":\"image_height\"}],"
                           "\"outputs\":[{\"name\":\"image\",\"type\":\"tensor\"}]}";
static const char *SEE = "{\"tag\":\"@c/see\",\"inputs\":[{\"name\":\"messages\",\"type\":\"array\","
                         "\"annotation\":\"chat_messages\"},{\"name\":\"images\",\"type\":\"array\",\"annotation\":"
                         "\"chat_images\"},{\"name\":\"audios\",\"type\":\"array\",\"annotation\":{\"type\":"
                         "\"chat_audios\",\"sample_rate\":8000}}],\"outputs\":[{\"name\":\"text\",\"type\":\"string\","
                         "\"annotation\":\"text_delta\"}]}";
static const char *FAILS = "{\"tag\":\"@c/fails\",\"kind\":\"generator\",\"outputs\":[{\"name\":\"n\",\"type\":\"integer\"}]}";
static const char *STRAY = "{\"tag\":\"@c/stray\",\"outputs\":[{\"name\":\"n\",\"type\":\"integer\"}]}";

/* --- Tests --------------------------------------------------------------------------------- */

#define ECHO_REQUEST(words) "{\"model\":\"@c/echo\",\"messages\":[{\"role\":\"user\",\"content\":\"" words "\"}]}"

/* A 2 x 1 PNG, red then blue; 0.1 s of silence as a 16 kHz WAV (made with Python). */
#define RED_BLUE_PNG "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAD0lEQVR4nGP4z8DAwPAfAAcAAf9+CLHQAAAAAElFTkSuQmCC"

static void test_predictor_chat_media(void) {
    /* 1,600 frames of 16-bit silence at 16 kHz, as a WAV file in base64: its header, then 4,270
     * 'A's (zero bytes) and the padding. */
    static const char header[] = "UklGRqQMAABXQVZFZm10IBAAAAABAAEAgD4AAAB9AAACABAAZGF0YYAM";
    const size_t zeros = 4270;
    char *request = (char *)malloc(zeros + 1024);
    int n = sprintf(request,
                    "{\"model\":\"@c/see\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
                    "\"look\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64," RED_BLUE_PNG
                    "\"}},{\"type\":\"input_audio\",\"input_audio\":{\"format\":\"wav\",\"data\":\"%s",
                    header);
    memset(request + n, 'A', zeros);
    strcpy(request + n + zeros, "==\"}}]}]}");
    char *json = NULL;
    CHECK_STATUS(ingle_chat_completions_create(client, request, &json), INGLE_OK);
    char *content = json ? json_string(json, "content") : NULL;
    CHECK(content && strcmp(content, "image 2x1x3 uint8 255,0,0; audio ~800 frames at 8000 Hz; ") == 0, "content: %s",
          content ? content : json ? json : "(none)");
    free(content);
    ingle_string_free(json);
    free(request);
    /* A corrupt image: a 400 naming the part. */
    CHECK_STATUS(ingle_chat_completions_create(client,
                                               "{\"model\":\"@c/see\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
                                               "\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,iVBORw0K\"}}]}]}",
                                               &json),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"messages[0].content[0]\"") &&
              strstr(ingle_last_error_json(), "\"code\":\"invalid_media\""),
          "%s", ingle_last_error_json());
}

static void test_predictor_chat(void) {
    char *json = NULL;
    CHECK_STATUS(ingle_chat_completions_create(client, ECHO_REQUEST("hello big world"), &json), INGLE_OK);
    char *content = json ? json_string(json, "content") : NULL;
    CHECK(content && strcmp(content, "hello big world ") == 0, "content: %s", content ? content : "(none)");
    CHECK(json && strstr(json, "\"finish_reason\":\"stop\""), "%s", json ? json : "(none)");
    free(content);
    ingle_string_free(json);
    Collector c = {0};
    CHECK_STATUS(ingle_chat_completions_stream(client, ECHO_REQUEST("a b c"), collect_chunk, &c), INGLE_OK);
    CHECK(strcmp(c.content, "a b c ") == 0 && c.chunks == 5 && c.bad_chunks == 0, "%d chunks: %s", c.chunks,
          c.content);
    CHECK_STATUS(ingle_predictions_create(client, "@c/echo",
                                          "{\"messages\":[{\"role\":\"user\",\"content\":\"x y\"}]}", &json),
                 INGLE_OK);
    CHECK(json && strstr(json, "\"results\":[\"x y \"]") && strstr(json, "\"logs\":\"echoing\\n\""), "%s",
          json ? json : "(none)");
    ingle_string_free(json);
}

/* The Responses API over a chat predictor written in C, under valgrind: every ingle_responses_*
 * function once, with no model (test_api.c runs them on the real model, under the sanitizers). */
static void test_predictor_responses(void) {
    char *out = NULL;
    CHECK_STATUS(ingle_responses_create(client, "{\"model\":\"@c/echo\",\"input\":\"hello big world\"}", &out),
                 INGLE_OK);
    CHECK(out && strstr(out, "\"text\":\"hello big world \"") && strstr(out, "\"status\":\"completed\""), "%s",
          out ? out : "(none)");
    char *id = out ? json_string(out, "id") : NULL;
    ingle_string_free(out);
    if (!id) return;
    char request[256];
    snprintf(request, sizeof request, "{\"model\":\"@c/echo\",\"input\":\"a b c\",\"previous_response_id\":\"%s\"}",
             id);
    ResponseEvents e = {0};
    CHECK_STATUS(ingle_responses_stream(client, request, collect_response_event, &e), INGLE_OK);
    CHECK(strcmp(e.text, "a b c ") == 0 && e.out_of_order == 0, "'%s', %d out of order", e.text, e.out_of_order);
    CHECK(strcmp(e.last_type, "response.completed") == 0, "last event: %s", e.last_type);
    ResponseEvents stopped = {0};
    stopped.stop_after = 4;
    CHECK_STATUS(ingle_responses_stream(client, request, collect_response_event, &stopped), INGLE_ERROR_CANCELLED);
    CHECK_STATUS(ingle_responses_retrieve(client, id, &out), INGLE_OK);
    ingle_string_free(out);
    CHECK_STATUS(ingle_responses_input_items(client, id, "{\"order\":\"asc\"}", &out), INGLE_OK);
    CHECK(out && strstr(out, "hello big world"), "%s", out ? out : "(none)");
    ingle_string_free(out);
    CHECK_STATUS(ingle_responses_input_items(client, id, "{\"limit\":0}", &out), INGLE_ERROR_INVALID_REQUEST);
    CHECK_STATUS(ingle_responses_delete(client, id, &out), INGLE_OK);
    ingle_string_free(out);
    CHECK_STATUS(ingle_responses_delete(client, id, NULL), INGLE_ERROR_NOT_FOUND);
    free(id);
}

static void test_predictor_speech(void) {
    IngleSpeechSamples *samples = NULL;
    CHECK_STATUS(ingle_audio_speech_create_samples(
                     client, "{\"model\":\"@c/tone\",\"voice\":\"high\",\"input\":\"abcd\"}", &samples),
                 INGLE_OK);
    CHECK(samples && samples->sample_rate == RATE && samples->frames == 4 * RATE / 10 && samples->channels == 1,
          "%zu frames at %u Hz", samples ? samples->frames : 0, samples ? samples->sample_rate : 0);
    if (samples) {
        int crossings = 0; /* 880 Hz: 176 zero crossings in 0.1 s */
        for (size_t i = 1; i < RATE / 10; i++) crossings += (samples->samples[i - 1] < 0) != (samples->samples[i] < 0);
        CHECK(crossings > 170 && crossings < 180, "%d zero crossings", crossings);
    }
    ingle_speech_samples_free(samples);
    IngleSpeechAudio *audio = NULL;
    CHECK_STATUS(ingle_audio_speech_create(
                     client, "{\"model\":\"@c/tone\",\"voice\":\"low\",\"input\":\"ab\",\"response_format\":\"wav\"}",
                     &audio),
                 INGLE_OK);
    CHECK(audio && audio->len == 44 + 2 * 2 * RATE / 10 && memcmp(audio->data, "RIFF", 4) == 0, "%zu bytes",
          audio ? audio->len : 0);
    ingle_speech_audio_free(audio);
    CHECK_STATUS(ingle_audio_speech_create(client, "{\"model\":\"@c/tone\",\"voice\":\"mid\",\"input\":\"ab\"}", &audio),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"voice\""), "%s", ingle_last_error_json());
}

static void test_predictor_embeddings(void) {
    IngleEmbeddingMatrix *matrix = NULL;
    CHECK_STATUS(ingle_embeddings_create_matrix(client, "{\"model\":\"@c/embed\",\"input\":[\"a\",\"b\"]}", &matrix),
                 INGLE_OK);
    CHECK(matrix && matrix->rows == 2 && matrix->dims == 3 && matrix->data[0] == 1.0f && matrix->data[5] == 2.0f,
          "%zu x %zu", matrix ? matrix->rows : 0, matrix ? matrix->dims : 0);
    ingle_embedding_matrix_free(matrix);
}

static void test_predictor_images(void) {
    char *out = NULL;
    CHECK_STATUS(ingle_call(client, "images.generate", "{\"model\":\"@c/paint\",\"prompt\":\"red\",\"size\":\"8x3\"}", &out),
                 INGLE_OK);
    /* A PNG (its signature in base64) of the size asked for. */
    CHECK(out && strstr(out, "\"size\":\"8x3\"") && strstr(out, "\"b64_json\":\"iVBORw0KGgo"), "%s", out ? out : "");
    ingle_string_free(out);
    out = NULL;
    CHECK_STATUS(ingle_call(client, "images.generate", "{\"model\":\"@c/paint\",\"prompt\":\"red\",\"size\":\"65x3\"}", &out),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error(), "width") || strstr(ingle_last_error(), "size"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_call(client, "images.generate", "{\"model\":\"@c/paint\",\"prompt\":\"blue\"}", &out), INGLE_OK);
    CHECK(out && strstr(out, "\"size\":\"4x2\""), "the predictor's defaults: %s", out ? out : "");
    ingle_string_free(out);
    out = NULL;
    atomic_store(&vast_refused, 0);
    CHECK_STATUS(ingle_call(client, "images.generate", "{\"model\":\"@c/paint\",\"prompt\":\"vast\"}", &out),
                 INGLE_ERROR_MODEL);
    CHECK(atomic_load(&vast_refused), "a 50,000 x 50,000 tensor was not refused by its shape");
    ingle_string_free(out);
}

static void test_predictor_transcription(void) {
    static float silence[RATE];
    IngleTranscription *t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create_samples(client, "{\"model\":\"@c/listen\"}", silence, RATE, RATE, 1,
                                                           &t),
                 INGLE_OK);
    CHECK(t && strcmp(t->text, "8000 frames of 1 channel at 8000 Hz") == 0, "%s", t ? t->text : "(none)");
    ingle_transcription_free(t);
}

/* A 16-bit mono 16 kHz WAV file of `frames` samples of a quiet tone; the caller frees it. */
static uint8_t *tone_wav(size_t frames, size_t *len) {
    *len = 44 + 2 * frames;
    uint8_t *wav = (uint8_t *)malloc(*len);
    const uint32_t fields[] = {(uint32_t)(*len - 8), 16, 1 | (1u << 16), RATE, 2 * RATE, 2 | (16u << 16),
                               (uint32_t)(2 * frames)};
    memcpy(wav, "RIFF", 4);
    memcpy(wav + 8, "WAVEfmt ", 8);
    memcpy(wav + 36, "data", 4);
    const size_t at[] = {4, 16, 20, 24, 28, 32, 40};
    for (size_t f = 0; f < 7; f++)
        for (int b = 0; b < 4; b++) wav[at[f] + b] = (uint8_t)(fields[f] >> (8 * b));
    for (size_t i = 0; i < frames; i++) {
        int16_t v = (int16_t)(3000 * sin(2 * 3.14159265358979 * 440.0 * (double)i / RATE));
        wav[44 + 2 * i] = (uint8_t)(v & 0xff);
        wav[45 + 2 * i] = (uint8_t)((uint16_t)v >> 8);
    }
    return wav;
}

/* Every transcription function on an uploaded file, through a predictor that gives segments and
 * words: verbose_json with word times, srt, and a stream stopped by its callback. Whisper's own
 * transcriptions run natively under AddressSanitizer (test_transcription.c): under valgrind one
 * takes 7 minutes. */
static void test_predictor_transcription_file(void) {
    size_t len = 0;
    uint8_t *wav = tone_wav(RATE * 5 / 2, &len); /* 2.5 s: three segments */
    IngleTranscription *t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(
                     client,
                     "{\"model\":\"@c/words\",\"response_format\":\"verbose_json\",\"timestamp_granularities\":"
                     "[\"word\",\"segment\"]}",
                     wav, len, "clip.wav", &t),
                 INGLE_OK);
    CHECK(t && strcmp(t->text, "second 1 second 2 second 3") == 0 && t->duration == 2.5 &&
              strcmp(t->content_type, "application/json") == 0 && t->len == strlen(t->body) &&
              strstr(t->body, "\"words\":[{\"word\":\"second\",\"start\":0.0,\"end\":0.5}") &&
              strstr(t->body, "\"segments\":[{"),
          "%s", t ? t->body : ingle_last_error());
    ingle_transcription_free(t);
    t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, "{\"model\":\"@c/words\",\"response_format\":\"srt\"}", wav,
                                                   len, "clip.wav", &t),
                 INGLE_OK);
    CHECK(t && strstr(t->body, "3\n00:00:02,000 --> 00:00:02,500\nsecond 3\n"), "%s", t ? t->body : ingle_last_error());
    ingle_transcription_free(t);
    t = (IngleTranscription *)&t;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, "{\"model\":\"@c/words\",\"response_format\":\"mp3\"}", wav,
                                                   len, "clip.wav", &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(t == NULL && strstr(ingle_last_error_json(), "\"param\":\"response_format\""), "%s", ingle_last_error_json());
    Collector c = {0};
    CHECK_STATUS(ingle_audio_transcriptions_stream(client, "{\"model\":\"@c/words\",\"stream\":true}", wav, len,
                                                   "clip.wav", collect_chunk, &c),
                 INGLE_OK);
    CHECK(c.chunks == 4 && c.bad_chunks == 0, "%d events, %d bad", c.chunks, c.bad_chunks);
    Collector first = {.stop_after = 1};
    CHECK_STATUS(ingle_audio_transcriptions_stream(client, "{\"model\":\"@c/words\",\"stream\":true}", wav, len,
                                                   "clip.wav", collect_chunk, &first),
                 INGLE_ERROR_CANCELLED);
    CHECK(first.chunks == 1, "%d events after a stop", first.chunks);
    free(wav);
}

/* Speech streamed as mp3 from a predictor, whole and stopped after the first chunk. */
typedef struct {
    int chunks, stop_after;
    size_t bytes;
} Bytes;

static int32_t count_bytes(const uint8_t *chunk, size_t len, void *user_data) {
    Bytes *b = (Bytes *)user_data;
    b->chunks++;
    b->bytes += len;
    (void)chunk[len - 1]; /* each chunk is readable to its end */
    return b->stop_after && b->chunks >= b->stop_after;
}

static void test_predictor_speech_stream(void) {
    Bytes whole = {0};
    CHECK_STATUS(ingle_audio_speech_stream(client,
                                           "{\"model\":\"@c/tone\",\"voice\":\"low\",\"input\":\"abcdefghij\","
                                           "\"response_format\":\"mp3\"}",
                                           count_bytes, &whole),
                 INGLE_OK);
    CHECK(whole.chunks >= 1 && whole.bytes > 1000, "%d chunks, %zu bytes", whole.chunks, whole.bytes);
    Bytes one = {.stop_after = 1};
    CHECK_STATUS(ingle_audio_speech_stream(client,
                                           "{\"model\":\"@c/tone\",\"voice\":\"low\",\"input\":\"abcdefghij\","
                                           "\"response_format\":\"pcm\"}",
                                           count_bytes, &one),
                 INGLE_ERROR_CANCELLED);
    CHECK(one.chunks == 1, "%d chunks after a stop", one.chunks);
}

/* Text completion and embeddings as JSON, from predictors; the model's entry and its unload. */
static void test_predictor_completions(void) {
    char *json = NULL;
    CHECK_STATUS(ingle_completions_create(client, "{\"model\":\"@c/repeat\",\"prompt\":\"one two three\"}", &json),
                 INGLE_OK);
    CHECK(json && strstr(json, "\"text\":\" one two three\"") && strstr(json, "\"object\":\"text_completion\""), "%s",
          json ? json : ingle_last_error());
    ingle_string_free(json);
    Collector c = {.stop_after = 2};
    CHECK_STATUS(ingle_completions_stream(client, "{\"model\":\"@c/repeat\",\"prompt\":\"a b c d\"}", collect_chunk, &c),
                 INGLE_ERROR_CANCELLED);
    CHECK(c.chunks == 2 && strcmp(c.content, " a b") == 0, "%d chunks: '%s'", c.chunks, c.content);
    json = NULL;
    CHECK_STATUS(ingle_embeddings_create(client, "{\"model\":\"@c/embed\",\"input\":[\"a\",\"b\"]}", &json), INGLE_OK);
    CHECK(json && strstr(json, "\"embedding\":[1.0,1.0,1.0]") && strstr(json, "\"index\":1"), "%s",
          json ? json : ingle_last_error());
    ingle_string_free(json);
    json = NULL;
    CHECK_STATUS(ingle_models_retrieve(client, "@c/repeat", &json), INGLE_OK);
    CHECK(json && strstr(json, "\"id\":\"@c/repeat\""), "%s", json ? json : ingle_last_error());
    ingle_string_free(json);
    int was_loaded = -1;
    CHECK_STATUS(ingle_models_unload(client, "@c/nothing", &was_loaded), INGLE_ERROR_NOT_FOUND);
    CHECK_STATUS(ingle_models_unload(client, "@c/repeat", &was_loaded), INGLE_OK);
    CHECK(was_loaded == 0 || was_loaded == 1, "%d", was_loaded);
}

static void test_predictor_failures(void) {
    char *json = NULL;
    CHECK_STATUS(ingle_predictions_create(client, "@c/fails", "{}", &json), INGLE_ERROR_MODEL);
    CHECK(strstr(ingle_last_error(), "`@c/fails` failed: the disk is full") != NULL, "%s", ingle_last_error());
    /* The failed prediction comes back with its logs and its error, for the caller to free. */
    CHECK(json && strstr(json, "\"logs\":\"about to fail\\n\"") && strstr(json, "the disk is full"), "%s",
          json ? json : "(none)");
    ingle_string_free(json);
    json = NULL;
    Collector c = {0};
    CHECK_STATUS(ingle_predictions_stream(client, "@c/fails", "{}", collect_chunk, &c), INGLE_ERROR_MODEL);
    CHECK(c.chunks == 2, "%d predictions", c.chunks);
    CHECK_STATUS(ingle_predictions_create(client, "@c/stray", "{}", &json), INGLE_OK);
    CHECK(json && strstr(json, "\"results\":[2]"), "%s", json ? json : "(none)");
    ingle_string_free(json);
}

static void test_predictor_cancel(void) {
    atomic_store(&echo_cancelled, 0);
    Collector c = {.stop_after = 2};
    CHECK_STATUS(ingle_chat_completions_stream(client, ECHO_REQUEST("a b c d e f g h"), collect_chunk, &c),
                 INGLE_ERROR_CANCELLED);
    /* The callback's next emit is refused; it returns within moments. */
    for (int i = 0; i < 200 && !atomic_load(&echo_cancelled); i++) nanosleep(&(struct timespec){0, 10000000}, NULL);
    CHECK(atomic_load(&echo_cancelled), "the predictor was not told of the cancellation");
}

static void test_predictor_rules(void) {
    /* Speech without a required voice; names the parameter. */
    CHECK_STATUS(ingle_predictor_register(client,
                                          "{\"tag\":\"@c/bad\",\"inputs\":[{\"name\":\"text\",\"type\":\"string\"},"
                                          "{\"name\":\"v\",\"type\":\"string\",\"default\":\"a\",\"annotation\":{"
                                          "\"type\":\"audio_voice\",\"voices\":[\"a\"]}}],\"outputs\":[{\"name\":\"o\","
                                          "\"type\":\"audio\",\"annotation\":{\"type\":\"audio\",\"sample_rate\":8000}}]}",
                                          tone, NULL),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"v\""), "%s", ingle_last_error_json());
    CHECK_STATUS(ingle_predictor_register(client, "{\"tag\":", tone, NULL), INGLE_ERROR_INVALID_REQUEST);
    CHECK_STATUS(ingle_predictor_register(client, ECHO, NULL, NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_predictor_register(client, ECHO, echo, NULL), INGLE_ERROR_INVALID_REQUEST); /* twice */
    CHECK(strstr(ingle_last_error(), "already registered"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_predictor_register(NULL, ECHO, echo, NULL), INGLE_ERROR_NULL_ARGUMENT);
    char *models = NULL;
    CHECK_STATUS(ingle_models_list(client, &models), INGLE_OK);
    CHECK(models && strstr(models, "\"@c/listen\""), "%s", models ? models : "(none)");
    ingle_string_free(models);
}

static atomic_int slow_returned;

/* Emits once, then works on for 300 ms whatever the consumer does, and says when it returns. */
static int32_t slow(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)inputs;
    ingle_sink_emit(sink, "{\"n\":1}");
    nanosleep(&(struct timespec){0, 300000000}, NULL);
    atomic_store((atomic_int *)user_data, 1);
    return 0;
}

/* Freeing the client waits for running callbacks, so their user_data may be freed then. */
static void test_predictor_free_waits(void) {
    IngleClient *own = NULL;
    CHECK_STATUS(ingle_client_create("{\"builtin_models\":false,\"predictors\":[]}", &own), INGLE_OK);
    atomic_store(&slow_returned, 0);
    CHECK_STATUS(ingle_predictor_register(own, "{\"tag\":\"@c/slow\",\"kind\":\"generator\",\"outputs\":[{"
                                               "\"name\":\"n\",\"type\":\"integer\"}]}",
                                          slow, &slow_returned),
                 INGLE_OK);
    Collector c = {.stop_after = 1};
    CHECK_STATUS(ingle_predictions_stream(own, "@c/slow", "{}", collect_chunk, &c), INGLE_ERROR_CANCELLED);
    CHECK(atomic_load(&slow_returned) == 0, "the callback returned before the stream was cancelled");
    ingle_client_free(own);
    CHECK(atomic_load(&slow_returned) == 1, "ingle_client_free returned while a callback was running");
}

/* Emits once when asked to, then waits (at most 10 s) for ingle_sink_cancelled and stops there,
 * as a predictor honouring a cancel does: returning 0, or failing (user_data says which). */
static atomic_int watching; /* set once watch waits for the cancel */

static int32_t watch(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    int fails = *(const int *)user_data;
    if (strstr(ingle_inputs_json(inputs), "\"emit\":true")) ingle_sink_emit(sink, "{\"n\":1}");
    atomic_store(&watching, 1);
    for (int i = 0; i < 1000 && !ingle_sink_cancelled(sink); i++) nanosleep(&(struct timespec){0, 10000000}, NULL);
    if (fails) {
        ingle_sink_fail(sink, "stopped early");
        return 1;
    }
    return 0;
}

typedef struct {
    IngleClient *client;
    const char *tag;
    const char *inputs;
    IngleStatus status;
    char *out;
    char error_json[512];
} WatchWorker;

static void *watch_worker(void *arg) {
    WatchWorker *w = (WatchWorker *)arg;
    w->status = ingle_predictions_create(w->client, w->tag, w->inputs, &w->out);
    snprintf(w->error_json, sizeof w->error_json, "%s", ingle_last_error_json());
    return NULL;
}

/* A predictor that sees the cancel (ingle_cancel_set from another thread) and ends early, with
 * or without output first, returning 0 or failing: the call ends INGLE_ERROR_CANCELLED, never
 * with the cut-off output or the predictor's own error. */
static void test_predictor_honours_cancel(void) {
    static const int returns = 0, fails = 1;
    CHECK_STATUS(ingle_predictor_register(client, "{\"tag\":\"@c/watch\",\"kind\":\"generator\",\"inputs\":[{"
                                                  "\"name\":\"emit\",\"type\":\"boolean\"}],\"outputs\":[{"
                                                  "\"name\":\"n\",\"type\":\"integer\"}]}",
                                          watch, (void *)&returns),
                 INGLE_OK);
    CHECK_STATUS(ingle_predictor_register(client, "{\"tag\":\"@c/watch_fails\",\"kind\":\"generator\",\"inputs\":[{"
                                                  "\"name\":\"emit\",\"type\":\"boolean\"}],\"outputs\":[{"
                                                  "\"name\":\"n\",\"type\":\"integer\"}]}",
                                          watch, (void *)&fails),
                 INGLE_OK);
    const char *cases[][2] = {{"@c/watch", "{\"emit\":false}"},
                              {"@c/watch", "{\"emit\":true}"},
                              {"@c/watch_fails", "{\"emit\":false}"},
                              {"@c/watch_fails", "{\"emit\":true}"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        IngleCancel *cancel = NULL;
        IngleClient *cancellable = NULL;
        CHECK_STATUS(ingle_cancel_create(&cancel), INGLE_OK);
        CHECK_STATUS(ingle_client_with_cancel(client, cancel, &cancellable), INGLE_OK);
        if (!cancellable) return;
        WatchWorker w = {cancellable, cases[i][0], cases[i][1], INGLE_OK, NULL, ""};
        atomic_store(&watching, 0);
        pthread_t thread;
        if (pthread_create(&thread, NULL, watch_worker, &w) != 0) {
            CHECK(0, "pthread_create");
            return;
        }
        /* Cancelled once the predictor runs and waits: the cancel it sees ends it. */
        for (int t = 0; t < 1000 && !atomic_load(&watching); t++) nanosleep(&(struct timespec){0, 10000000}, NULL);
        CHECK(atomic_load(&watching), "%s never ran", cases[i][0]);
        ingle_cancel_set(cancel);
        pthread_join(thread, NULL);
        CHECK(w.status == INGLE_ERROR_CANCELLED, "%s %s: status %d, %s, %s", cases[i][0], cases[i][1], (int)w.status,
              w.out ? w.out : "(no output)", w.error_json);
        /* A prediction that ran gives its object, its error the cancel (not its own failure). */
        CHECK(w.out && strstr(w.out, "\"error\":{") && strstr(w.out, "cancelled") &&
                  !strstr(w.out, "stopped early"),
              "%s", w.out ? w.out : "(no prediction)");
        CHECK(strstr(w.error_json, "\"type\":\"cancelled\""), "%s", w.error_json);
        ingle_string_free(w.out);
        ingle_client_free(cancellable);
        ingle_cancel_free(cancel);
    }
    /* Uncancelled, a predictor's own failure stays INGLE_ERROR_MODEL: test_predictor_failures. */
}

static const Test tests[] = {
    {"predictor_free_waits", test_predictor_free_waits},
    {"predictor_chat", test_predictor_chat},
    {"predictor_chat_media", test_predictor_chat_media},
    {"predictor_responses", test_predictor_responses},
    {"predictor_speech", test_predictor_speech},
    {"predictor_embeddings", test_predictor_embeddings},
    {"predictor_images", test_predictor_images},
    {"predictor_transcription", test_predictor_transcription},
    {"predictor_transcription_file", test_predictor_transcription_file},
    {"predictor_speech_stream", test_predictor_speech_stream},
    {"predictor_completions", test_predictor_completions},
    {"predictor_failures", test_predictor_failures},
    {"predictor_cancel", test_predictor_cancel},
    {"predictor_honours_cancel", test_predictor_honours_cancel},
    {"predictor_rules", test_predictor_rules},
};

int main(int argc, char **argv) {
    if (ingle_client_create("{\"builtin_models\":false,\"predictors\":[]}", &client) != INGLE_OK) {
        fprintf(stderr, "cannot create the client: %s\n", ingle_last_error());
        return 1;
    }
    const struct {
        const char *declaration;
        InglePredictorCallback callback;
    } predictors[] = {{ECHO, echo}, {TONE, tone}, {EMBED, embed}, {LISTEN, listen}, {WORDS, words}, {REPEAT, repeat}, {PAINT, paint}, {SEE, see}, {FAILS, fails}, {STRAY, stray}};
    for (size_t i = 0; i < sizeof predictors / sizeof predictors[0]; i++) {
        if (ingle_predictor_register(client, predictors[i].declaration, predictors[i].callback, NULL) != INGLE_OK) {
            fprintf(stderr, "cannot register predictor %zu: %s\n", i, ingle_last_error());
            return 1;
        }
    }
    int status = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    ingle_client_free(client);
    return status;
}
