/* End-to-end tests of the speech functions of the C API on the default voice (Piper en_US joe on
 * ONNX Runtime, phonemes from espeak-ng). Run by tests/c/run natively under AddressSanitizer and
 * LeakSanitizer, not valgrind: under valgrind the voice model runs over a thousand times slower
 * (loading it, which synthesises six calibration sentences, had not finished after 17 minutes).
 * ASan replaces malloc, which Rust's allocator calls too, so a leaked or doubly freed
 * IngleSpeechAudio or IngleSpeechSamples, or a read past one, still fails the run. Two short
 * tests, speech_errors and speech_memcheck (one synthesis of "Hi."), also run under valgrind in
 * the extended tier (tests/c/run --extended).
 *
 * Usage: test_speech [TEST...]   (no argument: every test) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "check.h"

#include <pthread.h>
#include <time.h>

#define MODEL "@local/smollm2-135m-instruct"
#define SPEECH_MODEL "@local/piper-en-us-joe-medium"
/* A speech request with the voice's own name; short texts keep the run short. */
#define SPEECH_REQUEST(input, extra) \
    "{\"model\":\"" SPEECH_MODEL "\",\"input\":\"" input "\",\"voice\":\"joe\"" extra "}"

static IngleClient *client;

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static void test_speech_create(void) {
    /* A whole wav file: an exact RIFF header (22050 Hz, mono, 16-bit) and the samples. */
    IngleSpeechAudio *audio = NULL;
    CHECK_STATUS(ingle_audio_speech_create(client, SPEECH_REQUEST("Hello there.", ",\"response_format\":\"wav\""),
                                           &audio),
                 INGLE_OK);
    size_t wav_frames = 0;
    if (audio) {
        const uint8_t *w = audio->data;
        CHECK(strcmp(audio->content_type, "audio/wav") == 0, "content type %s", audio->content_type);
        CHECK(audio->sample_rate == 22050, "sample rate %u", audio->sample_rate);
        CHECK(audio->len > 44 + 2 * 22050 / 4, "only %zu bytes", audio->len);
        if (audio->len > 44) {
            CHECK(memcmp(w, "RIFF", 4) == 0 && memcmp(w + 8, "WAVEfmt ", 8) == 0, "not RIFF/WAVE");
            CHECK(le32(w + 4) == audio->len - 8, "RIFF size %u of %zu bytes", le32(w + 4), audio->len);
            CHECK(le32(w + 16) == 16 && le16(w + 20) == 1, "not a PCM fmt chunk");
            CHECK(le16(w + 22) == 1, "channels %u", le16(w + 22));
            CHECK(le32(w + 24) == 22050, "rate %u", le32(w + 24));
            CHECK(le32(w + 28) == 22050 * 2 && le16(w + 32) == 2, "byte rate %u, block %u", le32(w + 28),
                  le16(w + 32));
            CHECK(le16(w + 34) == 16, "bits %u", le16(w + 34));
            CHECK(memcmp(w + 36, "data", 4) == 0, "no data chunk");
            CHECK(le32(w + 40) == audio->len - 44, "data size %u of %zu bytes", le32(w + 40), audio->len);
            wav_frames = (audio->len - 44) / 2;
        }
    }
    ingle_speech_audio_free(audio);
    ingle_speech_audio_free(NULL); /* a no-op */

    /* With "stream_format": "sse", the whole answer is every event of the stream, as the
     * method's spec says (it used to be the audio file, the events' request left unread). */
    IngleSpeechAudio *events = NULL;
    CHECK_STATUS(ingle_audio_speech_create(
                     client, SPEECH_REQUEST("Hi.", ",\"response_format\":\"pcm\",\"stream_format\":\"sse\""), &events),
                 INGLE_OK);
    if (events) {
        const char *delta = "data: {\"type\":\"speech.audio.delta\",\"audio\":\"";
        CHECK(strcmp(events->content_type, "text/event-stream") == 0, "content type %s", events->content_type);
        CHECK(events->sample_rate == 0, "sample rate %u", events->sample_rate);
        CHECK(events->len > strlen(delta) && memcmp(events->data, delta, strlen(delta)) == 0, "SSE: %.*s",
              (int)(events->len < 80 ? events->len : 80), (const char *)events->data);
        CHECK(events->len > 3 && memcmp(events->data + events->len - 3, "}\n\n", 3) == 0, "SSE ends badly");
    }
    ingle_speech_audio_free(events);

    /* The raw samples of the same request (an OpenAI voice name speaks with the model's): as
     * long as the wav, give or take the model's random timing. */
    IngleSpeechSamples *raw = NULL;
    CHECK_STATUS(ingle_audio_speech_create_samples(
                     client, "{\"model\":\"" SPEECH_MODEL "\",\"input\":\"Hello there.\",\"voice\":\"alloy\"}", &raw),
                 INGLE_OK);
    if (raw) {
        CHECK(raw->sample_rate == 22050, "sample rate %u", raw->sample_rate);
        CHECK(raw->channels == 1, "channels %u", raw->channels);
        CHECK(raw->frames > 22050 / 4, "frames %zu", raw->frames);
        CHECK(wav_frames > raw->frames * 2 / 3 && wav_frames < raw->frames * 3 / 2,
              "wav %zu frames, raw %zu", wav_frames, raw->frames);
        float peak = 0;
        int finite = 1;
        for (size_t i = 0; i < raw->frames; i++) {
            float x = raw->samples[i] < 0 ? -raw->samples[i] : raw->samples[i];
            finite &= x == x && x <= 1.0f;
            if (x > peak) peak = x;
        }
        CHECK(finite && peak > 0.05f, "samples: peak %f, all in [-1, 1]: %d", peak, finite);
    }
    ingle_speech_samples_free(raw);
    ingle_speech_samples_free(NULL); /* a no-op */

    /* pcm: 16-bit at 24 kHz, as OpenAI sends it. */
    audio = NULL;
    CHECK_STATUS(ingle_audio_speech_create(client, SPEECH_REQUEST("Hi.", ",\"response_format\":\"pcm\",\"speed\":1.5"),
                                           &audio),
                 INGLE_OK);
    if (audio) {
        CHECK(strcmp(audio->content_type, "audio/pcm") == 0, "content type %s", audio->content_type);
        CHECK(audio->sample_rate == 24000 && audio->len % 2 == 0 && audio->len > 2400,
              "rate %u, %zu bytes", audio->sample_rate, audio->len);
    }
    ingle_speech_audio_free(audio);
}

/* Collects streamed audio: how many chunks, how many bytes, the start of the first one. */
typedef struct {
    int chunks;
    int stop_after; /* return non-zero from the callback after this many chunks; 0: never */
    int empty_chunks;
    size_t bytes;
    uint8_t head[64];
    size_t head_len;
    char tail[256]; /* the end of the last chunk, as text (for SSE) */
} AudioCollector;

static int32_t collect_audio(const uint8_t *chunk, size_t len, void *user_data) {
    AudioCollector *c = (AudioCollector *)user_data;
    c->chunks++;
    if (len == 0) c->empty_chunks++;
    if (c->bytes == 0) {
        c->head_len = len < sizeof c->head ? len : sizeof c->head;
        memcpy(c->head, chunk, c->head_len);
    }
    size_t keep = len < sizeof c->tail - 1 ? len : sizeof c->tail - 1;
    memcpy(c->tail, chunk + len - keep, keep);
    c->tail[keep] = 0;
    c->bytes += len;
    return c->stop_after && c->chunks >= c->stop_after ? 1 : 0;
}

static void test_speech_stream(void) {
    /* Sentence by sentence: a streaming wav (the header first, its sizes unknown). */
    AudioCollector c;
    memset(&c, 0, sizeof c);
    CHECK_STATUS(ingle_audio_speech_stream(client, SPEECH_REQUEST("One. Two. Three.", ",\"response_format\":\"wav\""),
                                           collect_audio, &c),
                 INGLE_OK);
    CHECK(c.chunks > 1, "chunks: %d", c.chunks);
    CHECK(c.empty_chunks == 0, "empty chunks: %d", c.empty_chunks);
    CHECK(c.head_len >= 44 && memcmp(c.head, "RIFF", 4) == 0 && le32(c.head + 24) == 22050 &&
              le32(c.head + 40) == 0xFFFFFFFFu,
          "first chunk: %zu bytes", c.head_len);
    CHECK(c.bytes > 44 + 22050, "%zu bytes for three words", c.bytes);

    /* Server-sent events: base64 audio deltas, then done with usage. */
    memset(&c, 0, sizeof c);
    CHECK_STATUS(ingle_audio_speech_stream(client, SPEECH_REQUEST("Hi.", ",\"response_format\":\"pcm\",\"stream_format\":\"sse\""),
                                           collect_audio, &c),
                 INGLE_OK);
    const char *delta = "data: {\"type\":\"speech.audio.delta\",\"audio\":\"";
    CHECK(c.head_len > strlen(delta) && memcmp(c.head, delta, strlen(delta)) == 0, "SSE: %.*s",
          (int)c.head_len, (const char *)c.head);
    CHECK(strstr(c.tail, "data: {\"type\":\"speech.audio.done\",\"usage\":{") &&
              strcmp(c.tail + strlen(c.tail) - 3, "}\n\n") == 0,
          "SSE ends: %s", c.tail);
}

static void test_speech_cancel(void) {
    AudioCollector c;
    memset(&c, 0, sizeof c);
    c.stop_after = 1;
    CHECK_STATUS(ingle_audio_speech_stream(client, SPEECH_REQUEST("One. Two. Three.", ",\"response_format\":\"pcm\""),
                                           collect_audio, &c),
                 INGLE_ERROR_CANCELLED);
    CHECK(c.chunks == 1, "the callback ran %d times, expected 1", c.chunks);
    CHECK(strstr(ingle_last_error(), "returned 1"), "message: %s", ingle_last_error());
    CHECK(strstr(ingle_last_error_json(), "\"type\":\"cancelled\""), "%s", ingle_last_error_json());

    /* The client goes on working. */
    IngleSpeechSamples *raw = NULL;
    CHECK_STATUS(ingle_audio_speech_create_samples(client, SPEECH_REQUEST("Yes.", ""), &raw), INGLE_OK);
    CHECK(raw && raw->frames > 0, "after cancel: %zu frames", raw ? raw->frames : 0);
    ingle_speech_samples_free(raw);
}

static void test_speech_errors(void) {
    /* Each is refused before any synthesis, naming the field; out-pointers are NULL. */
    static const struct {
        const char *request, *param;
        IngleStatus status;
    } bad[] = {
        {SPEECH_REQUEST("", ""), "\"param\":\"input\"", INGLE_ERROR_INVALID_REQUEST},
        {"{\"model\":\"" SPEECH_MODEL "\",\"voice\":\"joe\"}", "\"param\":\"input\"", INGLE_ERROR_INVALID_REQUEST},
        {"{\"model\":\"" SPEECH_MODEL "\",\"input\":1,\"voice\":\"joe\"}", "\"param\":\"input\"",
         INGLE_ERROR_INVALID_REQUEST},
        {"{\"model\":\"" SPEECH_MODEL "\",\"input\":\"Hi.\",\"voice\":\"robot\"}", "\"param\":\"voice\"",
         INGLE_ERROR_INVALID_REQUEST},
        {"{\"model\":\"" SPEECH_MODEL "\",\"input\":\"Hi.\"}", "\"param\":\"voice\"", INGLE_ERROR_INVALID_REQUEST},
        {SPEECH_REQUEST("Hi.", ",\"speed\":9"), "\"param\":\"speed\"", INGLE_ERROR_INVALID_REQUEST},
        {SPEECH_REQUEST("Hi.", ",\"speed\":\"fast\""), "\"param\":\"speed\"", INGLE_ERROR_INVALID_REQUEST},
        {SPEECH_REQUEST("Hi.", ",\"response_format\":\"ogg\""), "\"param\":\"response_format\"",
         INGLE_ERROR_INVALID_REQUEST},
        {SPEECH_REQUEST("Hi.", ",\"stream_format\":\"mp4\""), "\"param\":\"stream_format\"",
         INGLE_ERROR_INVALID_REQUEST},
        {SPEECH_REQUEST("Hi.", ",\"instructions\":\"Whisper.\""), "\"param\":\"instructions\"",
         INGLE_ERROR_INVALID_REQUEST},
        {SPEECH_REQUEST("Hi.", ",\"frobnicate\":1"), "frobnicate", INGLE_ERROR_INVALID_REQUEST},
        {"{\"model\":\"" MODEL "\",\"input\":\"Hi.\",\"voice\":\"joe\"}", "\"param\":\"model\"",
         INGLE_ERROR_INVALID_REQUEST},
        {"{\"model\":\"@nobody/nothing\",\"input\":\"Hi.\",\"voice\":\"joe\"}", "\"code\":\"model_not_found\"",
         INGLE_ERROR_NOT_FOUND},
        {SPEECH_REQUEST("Hi.", "") " {}", "one JSON document", INGLE_ERROR_INVALID_REQUEST},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        IngleSpeechAudio *audio = (IngleSpeechAudio *)&audio;
        CHECK_STATUS(ingle_audio_speech_create(client, bad[i].request, &audio), bad[i].status);
        CHECK(audio == NULL, "*out must be NULL on failure");
        CHECK(strstr(ingle_last_error_json(), bad[i].param), "%s: %s", bad[i].request, ingle_last_error_json());
        IngleSpeechSamples *raw = (IngleSpeechSamples *)&raw;
        CHECK_STATUS(ingle_audio_speech_create_samples(client, bad[i].request, &raw), bad[i].status);
        CHECK(raw == NULL, "*out must be NULL on failure");
        CHECK(strstr(ingle_last_error_json(), bad[i].param), "%s: %s", bad[i].request, ingle_last_error_json());
        AudioCollector c;
        memset(&c, 0, sizeof c);
        CHECK_STATUS(ingle_audio_speech_stream(client, bad[i].request, collect_audio, &c), bad[i].status);
        CHECK(c.chunks == 0, "a chunk for a bad request");
        CHECK(strstr(ingle_last_error_json(), bad[i].param), "%s: %s", bad[i].request, ingle_last_error_json());
    }
    CHECK(strstr(ingle_last_error_json(), "\"type\":\"invalid_request_error\""), "%s", ingle_last_error_json());

    /* NULL arguments. */
    const char *request = SPEECH_REQUEST("Hi.", "");
    IngleSpeechAudio *audio = NULL;
    IngleSpeechSamples *raw = NULL;
    AudioCollector c;
    memset(&c, 0, sizeof c);
    CHECK_STATUS(ingle_audio_speech_create(NULL, request, &audio), INGLE_ERROR_NULL_ARGUMENT);
    CHECK(strstr(ingle_last_error(), "`client` must not be NULL"), "%s", ingle_last_error());
    CHECK_STATUS(ingle_audio_speech_create(client, NULL, &audio), INGLE_ERROR_NULL_ARGUMENT);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"request_json\""), "%s", ingle_last_error_json());
    CHECK_STATUS(ingle_audio_speech_create(client, request, NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"out\""), "%s", ingle_last_error_json());
    CHECK_STATUS(ingle_audio_speech_create_samples(NULL, request, &raw), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_audio_speech_create_samples(client, NULL, &raw), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_audio_speech_create_samples(client, request, NULL), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_audio_speech_stream(NULL, request, collect_audio, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_audio_speech_stream(client, NULL, collect_audio, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_audio_speech_stream(client, request, NULL, &c), INGLE_ERROR_NULL_ARGUMENT);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"on_chunk\"") &&
              strstr(ingle_last_error_json(), "\"code\":\"null_argument\""),
          "%s", ingle_last_error_json());
    CHECK(c.chunks == 0 && audio == NULL && raw == NULL, "nothing for a NULL argument");
}

/* One synthesis of the shortest text, for valgrind (a second of audio takes it about two
 * minutes): the phonemizer (espeak-ng, through its C API) and the voice model run under memcheck
 * once. The other speech functions run under valgrind on a predictor written in C
 * (test_predictors.c), and on this model natively under AddressSanitizer (every test here). */
static void test_speech_memcheck(void) {
    IngleSpeechSamples *raw = NULL;
    CHECK_STATUS(ingle_audio_speech_create_samples(client, SPEECH_REQUEST("Hi.", ""), &raw), INGLE_OK);
    CHECK(raw && raw->frames > 0 && raw->channels == 1 && raw->sample_rate == 22050, "samples");
    if (raw) CHECK(raw->samples[raw->frames - 1] == raw->samples[raw->frames - 1], "a NaN sample");
    ingle_speech_samples_free(raw);
}

/* Two threads synthesise at once on the one client; each gets its own whole stream. */
typedef struct {
    IngleStatus status;
    AudioCollector collector;
} SpeechWorker;

static void *speech_worker(void *arg) {
    SpeechWorker *w = (SpeechWorker *)arg;
    w->status = ingle_audio_speech_stream(client, SPEECH_REQUEST("First. Second.", ",\"response_format\":\"flac\""),
                                          collect_audio, &w->collector);
    return NULL;
}

static void test_speech_threads(void) {
    pthread_t threads[2];
    SpeechWorker workers[2];
    memset(workers, 0, sizeof workers);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&threads[i], NULL, speech_worker, &workers[i]) == 0, "pthread_create");
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK_STATUS(workers[i].status, INGLE_OK);
        CHECK(workers[i].collector.chunks > 1, "thread %d: %d chunks", i, workers[i].collector.chunks);
        CHECK(workers[i].collector.head_len >= 4 && memcmp(workers[i].collector.head, "fLaC", 4) == 0,
              "thread %d: not flac", i);
    }
}

static const Test tests[] = {
    {"speech_create", test_speech_create},
    {"speech_stream", test_speech_stream},
    {"speech_cancel", test_speech_cancel},
    {"speech_errors", test_speech_errors},
    {"speech_threads", test_speech_threads},
    {"speech_memcheck", test_speech_memcheck},
};

int main(int argc, char **argv) {
    /* The default voice, one thread; the chat model only to be refused as a speech model. */
    const char *config = "{\"predictors\":[{\"tag\":\"" SPEECH_MODEL "\",\"backend\":\"piper\",\"threads\":1,"
                         "\"model\":\"piper/en_US-joe-medium.onnx\"},{\"tag\":\"" MODEL "\",\"backend\":\"llama\","
                         "\"model\":\"SmolLM2-135M-Instruct.Q4_1.gguf\",\"n_ctx\":256,\"threads\":1}]}";
    if (ingle_client_create(config, &client) != INGLE_OK) {
        fprintf(stderr, "cannot create the client: %s\n", ingle_last_error());
        return 1;
    }
    int status = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    ingle_client_free(client);
    return status;
}
