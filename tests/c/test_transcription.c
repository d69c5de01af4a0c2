/* End-to-end tests of the transcription functions of the C API on the default model (Whisper
 * tiny.en on ONNX Runtime) and real recordings from the models directory. Run by tests/c/run
 * natively under AddressSanitizer and LeakSanitizer, like test_speech.c: ASan replaces malloc,
 * which Rust's allocator calls too, so a leaked or doubly freed IngleTranscription, or a read past
 * one, fails the run. transcription_errors (loading the model, then every failure, none of which
 * runs it) also runs under valgrind, beside the other C tests. A transcription under valgrind
 * takes about 7 minutes, however short the audio (Whisper's encoder reads a whole 30-second
 * window), so every transcription function runs under valgrind on a predictor written in C
 * instead (test_predictors.c, predictor_transcription_file), and here under the sanitizers.
 *
 * The recordings are $INGLE_MODELS_DIR/recordings (else ${XDG_CACHE_HOME:-~/.cache}/ingle/models,
 * as the library resolves it): scripts/fetch-models puts them there.
 *
 * Usage: test_transcription [TEST...]   (no argument: every test) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "check.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <time.h>

#define MODEL "@local/whisper-tiny-en"
/* Multilingual Whisper base: detects the language and translates into English. */
#define MULTILINGUAL "@local/whisper-base"
#define SPEECH_MODEL "@local/piper-en-us-joe-medium"
#define REQUEST(extra) "{\"model\":\"" MODEL "\"" extra "}"
/* beckett.wav says this (normalised: lower case, words only). */
#define BECKETT "ever tried ever failed no matter try again fail again fail better"

static IngleClient *client;

/* A whole file, malloc'd; NULL (and a failed check) when it cannot be read. */
typedef struct {
    uint8_t *data;
    size_t len;
} Bytes;

/* A whole file, malloc'd (a path relative to the repository's root, where tests/c/run runs). */
static Bytes repo_file(const char *path) {
    Bytes b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return b;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    b.data = (uint8_t *)malloc(size > 0 ? (size_t)size : 1);
    b.len = size > 0 ? fread(b.data, 1, (size_t)size, f) : 0;
    fclose(f);
    CHECK(size > 0 && b.len == (size_t)size, "read %zu of %ld bytes of %s", b.len, size, path);
    return b;
}

/* A recording of the models directory. */
static Bytes recording(const char *name) {
    char path[4096];
    const char *dir = getenv("INGLE_MODELS_DIR"), *cache = getenv("XDG_CACHE_HOME");
    if (dir && *dir) snprintf(path, sizeof path, "%s/recordings/%s", dir, name);
    else if (cache && *cache) snprintf(path, sizeof path, "%s/ingle/models/recordings/%s", cache, name);
    else snprintf(path, sizeof path, "%s/.cache/ingle/models/recordings/%s", getenv("HOME"), name);
    return repo_file(path);
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* A 16-bit PCM WAV file's samples as floats in [-1, 1) (channels interleaved), read chunk by
 * chunk; samples is NULL (and a check failed) for anything else. */
typedef struct {
    float *samples;
    size_t n; /* all channels together */
    uint32_t rate;
    uint16_t channels;
} Pcm;

static Pcm parse_wav(Bytes wav) {
    Pcm pcm = {NULL, 0, 0, 0};
    const uint8_t *w = wav.data;
    if (!w || wav.len < 12 || memcmp(w, "RIFF", 4) != 0 || memcmp(w + 8, "WAVE", 4) != 0) {
        CHECK(0, "not a RIFF/WAVE file");
        return pcm;
    }
    uint16_t bits = 0, format = 0;
    for (size_t at = 12; at + 8 <= wav.len;) {
        uint32_t size = le32(w + at + 4);
        const uint8_t *body = w + at + 8;
        size_t avail = wav.len - at - 8 < size ? wav.len - at - 8 : size;
        if (memcmp(w + at, "fmt ", 4) == 0 && avail >= 16) {
            format = le16(body);
            pcm.channels = le16(body + 2);
            pcm.rate = le32(body + 4);
            bits = le16(body + 14);
        } else if (memcmp(w + at, "data", 4) == 0) {
            CHECK(format == 1 && bits == 16 && pcm.channels > 0, "format %u, %u bits, %u channels", format,
                  bits, pcm.channels);
            if (format != 1 || bits != 16 || pcm.channels == 0) return pcm;
            pcm.n = avail / 2 / pcm.channels * pcm.channels;
            pcm.samples = (float *)malloc((pcm.n ? pcm.n : 1) * sizeof(float));
            for (size_t i = 0; i < pcm.n; i++) pcm.samples[i] = (float)(int16_t)le16(body + 2 * i) / 32768.0f;
            return pcm;
        }
        at += 8 + (size_t)size + (size & 1);
    }
    CHECK(0, "no data chunk");
    return pcm;
}

/* A mono 16-bit WAV file of the first `seconds` of `pcm` (channel 0), made here. */
static Bytes make_wav(Pcm pcm, double seconds) {
    size_t frames = pcm.channels ? pcm.n / pcm.channels : 0;
    if ((double)frames > seconds * pcm.rate) frames = (size_t)(seconds * pcm.rate);
    Bytes b = {(uint8_t *)malloc(44 + 2 * frames), 44 + 2 * frames};
    memcpy(b.data, "RIFF", 4);
    put32(b.data + 4, (uint32_t)(b.len - 8));
    memcpy(b.data + 8, "WAVEfmt ", 8);
    put32(b.data + 16, 16);
    put16(b.data + 20, 1); /* PCM */
    put16(b.data + 22, 1);
    put32(b.data + 24, pcm.rate);
    put32(b.data + 28, pcm.rate * 2);
    put16(b.data + 32, 2);
    put16(b.data + 34, 16);
    memcpy(b.data + 36, "data", 4);
    put32(b.data + 40, (uint32_t)(2 * frames));
    for (size_t i = 0; i < frames; i++) {
        float x = pcm.samples[i * pcm.channels] * 32768.0f;
        put16(b.data + 44 + 2 * i, (uint16_t)(int16_t)(x > 32767.0f ? 32767.0f : x < -32768.0f ? -32768.0f : x));
    }
    return b;
}

/* Lower case letters, digits and single spaces: how two transcriptions are compared. */
static void normalise(const char *text, char *out, size_t size) {
    size_t o = 0;
    int space = 0;
    for (const char *p = text; *p && o + 2 < size; p++) {
        if (isalnum((unsigned char)*p)) {
            if (space && o > 0) out[o++] = ' ';
            out[o++] = (char)tolower((unsigned char)*p);
            space = 0;
        } else if (*p == ' ' || *p == '\n') {
            space = 1;
        }
    }
    out[o] = 0;
}

static int same_words(const char *text, const char *expected) {
    char normalised[4096];
    normalise(text, normalised, sizeof normalised);
    return strcmp(normalised, expected) == 0;
}

/* Word-level edit distance between `text`, normalised, and `expected` (normalised already);
 * texts of up to 64 words. */
static size_t word_errors(const char *text, const char *expected) {
    char a[4096], b[4096];
    normalise(text, a, sizeof a);
    snprintf(b, sizeof b, "%s", expected);
    const char *x[64], *y[64];
    size_t nx = 0, ny = 0;
    for (char *w = strtok(a, " "); w && nx < 64; w = strtok(NULL, " ")) x[nx++] = w;
    for (char *w = strtok(b, " "); w && ny < 64; w = strtok(NULL, " ")) y[ny++] = w;
    size_t row[65];
    for (size_t j = 0; j <= ny; j++) row[j] = j;
    for (size_t i = 0; i < nx; i++) {
        size_t previous = row[0];
        row[0] = i + 1;
        for (size_t j = 0; j < ny; j++) {
            size_t substitution = previous + (strcmp(x[i], y[j]) != 0);
            previous = row[j + 1];
            size_t best = substitution < row[j] + 1 ? substitution : row[j] + 1;
            row[j + 1] = best < row[j + 1] + 1 ? best : row[j + 1] + 1;
        }
    }
    return row[ny];
}

/* Whether `text`, normalised, contains the words `expected` (normalised already). */
static int has_words(const char *text, const char *expected) {
    char normalised[4096];
    normalise(text, normalised, sizeof normalised);
    return strstr(normalised, expected) != NULL;
}

/* The first two seconds of beckett.wav ("Ever tried."), as samples and as a WAV file made here;
 * 0 (and a failed check) when the recording cannot be read. */
static int two_second_clip(Pcm *pcm, Bytes *wav) {
    Bytes beckett = recording("beckett.wav");
    *pcm = parse_wav(beckett);
    free(beckett.data);
    if (!pcm->samples) return 0;
    CHECK(pcm->rate == 16000 && pcm->channels == 1 && pcm->n >= 32000, "%u Hz, %u channels", pcm->rate,
          pcm->channels);
    *wav = make_wav(*pcm, 2.0);
    return pcm->rate == 16000 && pcm->channels == 1 && pcm->n >= 32000;
}

/* The number in `json` after the first `"key":`; -1 when absent. */
static double json_number(const char *json, const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *p = json ? strstr(json, pattern) : NULL;
    return p ? strtod(p + strlen(pattern), NULL) : -1;
}

/* Checks what every successful transcription gives: the strings, len, the content type. */
static void check_transcription(const IngleTranscription *t, const char *content_type) {
    CHECK(t != NULL, "no transcription");
    if (!t) return;
    CHECK(t->body && t->len == strlen(t->body), "len %zu, body %zu bytes", t->len, t->body ? strlen(t->body) : 0);
    CHECK(t->content_type && strcmp(t->content_type, content_type) == 0, "content type %s, expected %s",
          t->content_type, content_type);
    CHECK(t->text != NULL, "no text");
}

static void test_transcription_create(void) {
    Bytes wav = recording("beckett.wav");
    if (!wav.data) return;
    /* json, the default: {"text", "usage"} */
    IngleTranscription *t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), wav.data, wav.len, "beckett.wav", &t),
                 INGLE_OK);
    check_transcription(t, "application/json");
    if (t) {
        CHECK(strncmp(t->body, "{\"text\":\"Ever tried", 19) == 0, "body %s", t->body);
        char *text = json_string(t->body, "text");
        CHECK(text && strcmp(text, t->text) == 0, "JSON text %s, text %s", text, t->text);
        free(text);
        CHECK(same_words(t->text, BECKETT), "text: %s", t->text);
        CHECK(strstr(t->body, "\"usage\":{") && strstr(t->body, "\"type\":\"duration\""), "usage: %s", t->body);
        CHECK(json_number(t->body, "seconds") > 9.9 && json_number(t->body, "seconds") < 10.0, "%s", t->body);
        CHECK(t->duration > 9.9 && t->duration < 10.0, "duration %f", t->duration);
    }
    ingle_transcription_free(t);
    ingle_transcription_free(NULL); /* a no-op */

    /* text: the text and a newline; no filename (the bytes say wav); the other fields given */
    t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(
                     client, REQUEST(",\"response_format\":\"text\",\"language\":\"en\",\"temperature\":0,"
                             "\"prompt\":\"Samuel Beckett, Worstward Ho.\""),
                     wav.data, wav.len, NULL, &t),
                 INGLE_OK);
    check_transcription(t, "text/plain; charset=utf-8");
    if (t) {
        CHECK(t->len > 1 && t->body[t->len - 1] == '\n' && strncmp(t->body, t->text, t->len - 1) == 0 &&
                  strlen(t->text) == t->len - 1,
              "body %s, text %s", t->body, t->text);
        CHECK(same_words(t->text, BECKETT), "text: %s", t->text);
    }
    ingle_transcription_free(t);
    free(wav.data);
}

static void test_transcription_formats(void) {
    Bytes wav = recording("beckett.wav");
    if (!wav.data) return;
    /* srt: numbered cues with comma milliseconds */
    IngleTranscription *t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(",\"response_format\":\"srt\""), wav.data, wav.len,
                                                   "beckett.wav", &t),
                 INGLE_OK);
    check_transcription(t, "text/plain; charset=utf-8");
    if (t) {
        CHECK(strncmp(t->body, "1\n00:00:0", 9) == 0 && strstr(t->body, ",") && strstr(t->body, " --> ") &&
                  strcmp(t->body + t->len - 2, "\n\n") == 0,
              "srt: %s", t->body);
        CHECK(strstr(t->body, "Ever tried"), "srt: %s", t->body);
        CHECK(same_words(t->text, BECKETT), "text: %s", t->text);
    }
    ingle_transcription_free(t);

    /* vtt: a WEBVTT header, dot milliseconds */
    t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(",\"response_format\":\"vtt\""), wav.data, wav.len,
                                                   "beckett.wav", &t),
                 INGLE_OK);
    check_transcription(t, "text/vtt; charset=utf-8");
    if (t) {
        CHECK(strncmp(t->body, "WEBVTT\n\n00:00:0", 15) == 0 && strstr(t->body, ".") && strstr(t->body, " --> "),
              "vtt: %s", t->body);
        CHECK(strstr(t->body, "Ever tried"), "vtt: %s", t->body);
    }
    ingle_transcription_free(t);

    /* verbose_json with segments and words */
    t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(
                     client, REQUEST(",\"response_format\":\"verbose_json\",\"timestamp_granularities\":[\"segment\",\"word\"]"),
                     wav.data, wav.len, "beckett.wav", &t),
                 INGLE_OK);
    check_transcription(t, "application/json");
    if (t) {
        CHECK(strstr(t->body, "\"task\":\"transcribe\"") && strstr(t->body, "\"language\":\"english\""), "%s",
              t->body);
        CHECK(json_number(t->body, "duration") > 9.9 && json_number(t->body, "duration") < 10.0, "%s", t->body);
        CHECK(strstr(t->body, "\"segments\":[{") && strstr(t->body, "\"avg_logprob\":"), "segments: %s", t->body);
        CHECK(strstr(t->body, "\"words\":[{") && strstr(t->body, "\"word\":\"Ever\""), "words: %s", t->body);
        CHECK(same_words(t->text, BECKETT), "text: %s", t->text);
    }
    ingle_transcription_free(t);

    /* verbose_json without words has no "words" */
    t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(",\"response_format\":\"verbose_json\""), wav.data,
                                                   wav.len, "beckett.wav", &t),
                 INGLE_OK);
    check_transcription(t, "application/json");
    if (t) CHECK(strstr(t->body, "\"segments\":[{") && !strstr(t->body, "\"words\":"), "%s", t->body);
    ingle_transcription_free(t);
    free(wav.data);
}

/* Collects transcription events: the deltas joined, the done event's text and seconds. */
typedef struct {
    int events;
    int stop_after; /* return non-zero from the callback after this many events; 0: never */
    int bad_events; /* len disagreeing with strlen, not an object, an unknown type, after done */
    int deltas;
    int done;
    char deltas_text[8192];
    char done_text[8192];
    double seconds;
} EventCollector;

static int32_t collect_event(const char *event, size_t len, void *user_data) {
    EventCollector *c = (EventCollector *)user_data;
    c->events++;
    if (strlen(event) != len || len < 2 || event[0] != '{' || event[len - 1] != '}' || c->done) c->bad_events++;
    if (strncmp(event, "{\"type\":\"transcript.text.delta\",", 32) == 0 || strstr(event, "\"transcript.text.delta\"")) {
        char *delta = json_string(event, "delta");
        if (delta) strncat(c->deltas_text, delta, sizeof c->deltas_text - strlen(c->deltas_text) - 1);
        else c->bad_events++;
        free(delta);
        c->deltas++;
    } else if (strstr(event, "\"type\":\"transcript.text.done\"")) {
        char *text = json_string(event, "text");
        if (text) snprintf(c->done_text, sizeof c->done_text, "%s", text);
        else c->bad_events++;
        free(text);
        c->seconds = json_number(event, "seconds");
        if (!strstr(event, "\"usage\":{") || !strstr(event, "\"type\":\"duration\"")) c->bad_events++;
        c->done++;
    } else {
        c->bad_events++;
    }
    return c->stop_after && c->events >= c->stop_after ? 1 : 0;
}

static void test_transcription_stream(void) {
    Bytes wav = recording("two_cities.wav");
    if (!wav.data) return;
    IngleTranscription *whole = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), wav.data, wav.len, "two_cities.wav", &whole),
                 INGLE_OK);
    EventCollector c;
    memset(&c, 0, sizeof c);
    CHECK_STATUS(ingle_audio_transcriptions_stream(client, REQUEST(",\"stream\":true"), wav.data, wav.len,
                                                   "two_cities.wav", collect_event, &c),
                 INGLE_OK);
    CHECK(c.bad_events == 0, "%d bad events", c.bad_events);
    CHECK(c.deltas > 1 && c.done == 1 && c.events == c.deltas + 1, "%d events: %d deltas, %d done", c.events,
          c.deltas, c.done);
    if (whole) {
        /* The deltas joined are the done text (less a trailing space) and the create text. */
        size_t n = strlen(c.deltas_text);
        while (n > 0 && c.deltas_text[n - 1] == ' ') c.deltas_text[--n] = 0;
        CHECK(strcmp(c.deltas_text, c.done_text) == 0, "deltas %s\ndone %s", c.deltas_text, c.done_text);
        CHECK(strcmp(c.done_text, whole->text) == 0, "stream %s\ncreate %s", c.done_text, whole->text);
        CHECK(c.seconds > 44 && c.seconds < 45 && c.seconds == json_number(whole->body, "seconds"),
              "seconds %f, create %s", c.seconds, whole->body);
        CHECK(strlen(whole->text) > 400 && strstr(whole->text, "It was the best of times"), "text: %s", whole->text);
    }
    ingle_transcription_free(whole);

    /* response_format text streams the same events. */
    Bytes beckett = recording("beckett.wav");
    memset(&c, 0, sizeof c);
    CHECK_STATUS(ingle_audio_transcriptions_stream(client, REQUEST(",\"response_format\":\"text\""), beckett.data,
                                                   beckett.len, NULL, collect_event, &c),
                 INGLE_OK);
    CHECK(c.bad_events == 0 && c.deltas >= 1 && c.done == 1, "%d events, %d bad", c.events, c.bad_events);
    CHECK(same_words(c.done_text, BECKETT) && same_words(c.deltas_text, BECKETT), "done %s, deltas %s", c.done_text,
          c.deltas_text);
    free(beckett.data);
    free(wav.data);
}

static void test_transcription_cancel(void) {
    /* 44 s of speech give many deltas; stopping at the first ends the call there. */
    Bytes wav = recording("two_cities.wav");
    if (!wav.data) return;
    EventCollector c;
    memset(&c, 0, sizeof c);
    c.stop_after = 1;
    CHECK_STATUS(ingle_audio_transcriptions_stream(client, REQUEST(""), wav.data, wav.len, "two_cities.wav",
                                                   collect_event, &c),
                 INGLE_ERROR_CANCELLED);
    CHECK(c.events == 1 && c.deltas == 1 && c.done == 0, "the callback ran %d times (%d done), expected once",
          c.events, c.done);
    CHECK(strstr(ingle_last_error(), "returned 1"), "message: %s", ingle_last_error());
    CHECK(strstr(ingle_last_error_json(), "\"type\":\"cancelled\"") &&
              strstr(ingle_last_error_json(), "\"param\":\"on_chunk\""),
          "%s", ingle_last_error_json());

    /* Any non-zero value stops, and is in the message. */
    memset(&c, 0, sizeof c);
    c.stop_after = 2;
    CHECK_STATUS(ingle_audio_transcriptions_stream(client, REQUEST(""), wav.data, wav.len, NULL, collect_event, &c),
                 INGLE_ERROR_CANCELLED);
    CHECK(c.events == 2 && c.done == 0, "%d events", c.events);

    /* The client goes on working. */
    Bytes beckett = recording("beckett.wav");
    IngleTranscription *t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), beckett.data, beckett.len, NULL, &t), INGLE_OK);
    CHECK(t && same_words(t->text, BECKETT), "after cancel: %s", t ? t->text : "(none)");
    ingle_transcription_free(t);
    free(beckett.data);
    free(wav.data);
}

static void test_transcription_samples(void) {
    Bytes wav = recording("beckett.wav");
    Pcm pcm = parse_wav(wav);
    if (!pcm.samples) {
        free(wav.data);
        return;
    }
    CHECK(pcm.rate == 16000 && pcm.channels == 1 && pcm.n > 9 * 16000, "%u Hz, %u channels, %zu samples", pcm.rate,
          pcm.channels, pcm.n);
    IngleTranscription *file = NULL, *raw = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), wav.data, wav.len, "beckett.wav", &file),
                 INGLE_OK);
    CHECK_STATUS(ingle_audio_transcriptions_create_samples(client, REQUEST(""), pcm.samples, pcm.n, pcm.rate,
                                                           pcm.channels, &raw),
                 INGLE_OK);
    check_transcription(raw, "application/json");
    if (file && raw) {
        CHECK(strcmp(file->text, raw->text) == 0, "file %s\nsamples %s", file->text, raw->text);
        CHECK(strcmp(file->body, raw->body) == 0, "file %s\nsamples %s", file->body, raw->body);
    }
    ingle_transcription_free(raw);

    /* The same audio as two interleaved channels, srt. */
    float *stereo = (float *)malloc(2 * pcm.n * sizeof(float));
    for (size_t i = 0; i < pcm.n; i++) stereo[2 * i] = stereo[2 * i + 1] = pcm.samples[i];
    raw = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create_samples(client, REQUEST(",\"response_format\":\"srt\""), stereo,
                                                           2 * pcm.n, pcm.rate, 2, &raw),
                 INGLE_OK);
    check_transcription(raw, "text/plain; charset=utf-8");
    if (file && raw) {
        CHECK(strcmp(file->text, raw->text) == 0, "file %s\nstereo %s", file->text, raw->text);
        CHECK(strncmp(raw->body, "1\n00:00:00,000 --> ", 19) == 0, "srt %s", raw->body);
        CHECK(raw->duration > 9.9 && raw->duration < 10.0, "duration %f", raw->duration);
    }
    ingle_transcription_free(raw);
    ingle_transcription_free(file);
    free(stereo);
    free(pcm.samples);
    free(wav.data);
}

/* Speech from the voice, transcribed back: as a wav file, and as its raw 22050 Hz samples. */
static void test_transcription_round_trip(void) {
    const char *speech = "{\"model\":\"" SPEECH_MODEL "\",\"voice\":\"joe\",\"response_format\":\"wav\","
                         "\"input\":\"The quick brown fox jumps over the lazy dog.\"}";
    const char *expected = "the quick brown fox jumps over the lazy dog";
    IngleSpeechAudio *audio = NULL;
    CHECK_STATUS(ingle_audio_speech_create(client, speech, &audio), INGLE_OK);
    if (audio) {
        IngleTranscription *t = NULL;
        CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), audio->data, audio->len, "speech.wav", &t),
                     INGLE_OK);
        /* The voice samples its durations, so each synthesis differs a little and Whisper tiny can
         * mishear one word of it ("quit brown fox"); more than one is a failure. */
        CHECK(t && word_errors(t->text, expected) <= 1, "heard: %s", t ? t->text : "(none)");
        ingle_transcription_free(t);
    }
    ingle_speech_audio_free(audio);
    IngleSpeechSamples *raw = NULL;
    CHECK_STATUS(ingle_audio_speech_create_samples(client, speech, &raw), INGLE_OK);
    if (raw) {
        IngleTranscription *t = NULL;
        CHECK_STATUS(ingle_audio_transcriptions_create_samples(client, REQUEST(""), raw->samples,
                                                               raw->frames * raw->channels, raw->sample_rate,
                                                               raw->channels, &t),
                     INGLE_OK);
        CHECK(t && word_errors(t->text, expected) <= 1, "heard at %u Hz: %s", raw->sample_rate, t ? t->text : "(none)");
        ingle_transcription_free(t);
    }
    ingle_speech_samples_free(raw);

    /* A voice cannot transcribe: the model is the field at fault. */
    IngleTranscription *t = NULL;
    static const uint8_t silence[44 + 3200] = "RIFF\xa4\x0c\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x80\x3e\0\0\0\x7d\0\0"
                                              "\x02\0\x10\0data\x80\x0c\0\0";
    CHECK_STATUS(ingle_audio_transcriptions_create(client, "{\"model\":\"" SPEECH_MODEL "\"}", silence, sizeof silence,
                                                   NULL, &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(t == NULL && strstr(ingle_last_error_json(), "\"param\":\"model\""), "%s", ingle_last_error_json());
}

static void test_transcription_errors(void) {
    /* A valid file, so each error is the request's own. Nothing here runs the model (each is
     * refused before, or at, the model's input check): this test is quick under valgrind. */
    Pcm pcm;
    Bytes wav;
    if (!two_second_clip(&pcm, &wav)) return;
    static const uint8_t corrupt[] = "RIFF\x24\0\0\0WAVEfmt garbage, not audio at all";
    static const struct {
        const char *request, *param;
        IngleStatus status;
        int corrupt_file;
    } bad[] = {
        {REQUEST(""), "\"param\":\"file\"", INGLE_ERROR_INVALID_REQUEST, 1},
        {REQUEST(",\"language\":\"de\""), "\"param\":\"language\"", INGLE_ERROR_INVALID_REQUEST, 0},
        {REQUEST(",\"language\":3"), "\"param\":\"language\"", INGLE_ERROR_INVALID_REQUEST, 0},
        {REQUEST(",\"response_format\":\"docx\""), "\"param\":\"response_format\"", INGLE_ERROR_INVALID_REQUEST, 0},
        {REQUEST(",\"timestamp_granularities\":[\"word\"]"), "\"param\":\"timestamp_granularities\"",
         INGLE_ERROR_INVALID_REQUEST, 0},
        {REQUEST(",\"timestamp_granularities\":[\"sentence\"]"),
         "\"param\":\"timestamp_granularities\"", INGLE_ERROR_INVALID_REQUEST, 0},
        {REQUEST(",\"temperature\":\"hot\""), "\"param\":\"temperature\"", INGLE_ERROR_INVALID_REQUEST, 0},
        {REQUEST(",\"chunking_strategy\":\"auto\""), "\"param\":\"chunking_strategy\"", INGLE_ERROR_INVALID_REQUEST, 0},
        {"{\"language\":\"en\"}", "\"param\":\"model\"", INGLE_ERROR_INVALID_REQUEST, 0},
        {"{\"model\":\"@nobody/nothing\"}", "\"code\":\"model_not_found\"", INGLE_ERROR_NOT_FOUND, 0},
        {"{", "\"type\":\"invalid_request_error\"", INGLE_ERROR_INVALID_REQUEST, 0},
        {"[]", "\"type\":\"invalid_request_error\"", INGLE_ERROR_INVALID_REQUEST, 0},
        {REQUEST("") " {}", "one JSON document", INGLE_ERROR_INVALID_REQUEST, 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const uint8_t *file = bad[i].corrupt_file ? corrupt : wav.data;
        size_t len = bad[i].corrupt_file ? sizeof corrupt - 1 : wav.len;
        IngleTranscription *t = (IngleTranscription *)&t;
        CHECK_STATUS(ingle_audio_transcriptions_create(client, bad[i].request, file, len, "clip.wav", &t), bad[i].status);
        CHECK(t == NULL, "*out must be NULL on failure");
        CHECK(strstr(ingle_last_error_json(), bad[i].param), "%s: %s", bad[i].request, ingle_last_error_json());
        EventCollector c;
        memset(&c, 0, sizeof c);
        CHECK_STATUS(ingle_audio_transcriptions_stream(client, bad[i].request, file, len, "clip.wav", collect_event, &c),
                     bad[i].status);
        CHECK(c.events == 0, "an event for a bad request");
        CHECK(strstr(ingle_last_error_json(), bad[i].param), "%s: %s", bad[i].request, ingle_last_error_json());
        if (!bad[i].corrupt_file) {
            t = (IngleTranscription *)&t;
            CHECK_STATUS(ingle_audio_transcriptions_create_samples(client, bad[i].request, pcm.samples, 32000, 16000, 1, &t),
                         bad[i].status);
            CHECK(t == NULL, "*out must be NULL on failure");
            CHECK(strstr(ingle_last_error_json(), bad[i].param), "%s: %s", bad[i].request, ingle_last_error_json());
        }
    }
    CHECK(strstr(ingle_last_error_json(), "\"type\":\"invalid_request_error\""), "%s", ingle_last_error_json());
    /* The message of a file that is no audio lists what is. */
    IngleTranscription *t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), corrupt, sizeof corrupt - 1, NULL, &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error(), "wav") && strstr(ingle_last_error(), "mp3"), "%s", ingle_last_error());
    /* An empty file, and text named .mp3. */
    static const uint8_t empty[1] = {0};
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), empty, 0, "empty.wav", &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"file\""), "%s", ingle_last_error_json());
    static const uint8_t text[] = "Hello, this is not an mp3 file at all.";
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), text, sizeof text - 1, "song.mp3", &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"file\""), "%s", ingle_last_error_json());

    /* Only create refuses "stream": true; only stream refuses srt, vtt, verbose_json. */
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(",\"stream\":true"), wav.data, wav.len, NULL, &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"stream\""), "%s", ingle_last_error_json());
    CHECK_STATUS(ingle_audio_transcriptions_create_samples(client, REQUEST(",\"stream\":true"), pcm.samples, 32000,
                                                           16000, 1, &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"stream\""), "%s", ingle_last_error_json());
    static const char *unstreamable[] = {"srt", "vtt", "verbose_json"};
    for (size_t i = 0; i < 3; i++) {
        char request[128];
        snprintf(request, sizeof request, REQUEST(",\"response_format\":\"%s\""), unstreamable[i]);
        EventCollector c;
        memset(&c, 0, sizeof c);
        CHECK_STATUS(ingle_audio_transcriptions_stream(client, request, wav.data, wav.len, NULL, collect_event, &c),
                     INGLE_ERROR_INVALID_REQUEST);
        CHECK(c.events == 0 && strstr(ingle_last_error_json(), "\"param\":\"stream\""), "%s: %s", request,
              ingle_last_error_json());
    }

    /* Invalid UTF-8 in the request or the filename. */
    CHECK_STATUS(ingle_audio_transcriptions_create(client, "{\"model\":\"\xff\"}", wav.data, wav.len, NULL, &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"request_json\"") && strstr(ingle_last_error(), "UTF-8"), "%s",
          ingle_last_error_json());
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), wav.data, wav.len, "clip\xc3.wav", &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"filename\""), "%s", ingle_last_error_json());

    /* Raw samples the model cannot take. */
    static const struct {
        size_t n;
        uint32_t rate;
        uint16_t channels;
        const char *param;
    } bad_samples[] = {
        {0, 16000, 1, "\"param\":\"samples\""},
        {32001, 16000, 2, "\"param\":\"samples\""},
        {32000, 0, 1, "\"param\":\"sample_rate\""},
        {32000, 16000, 0, "\"param\":\"channels\""},
    };
    for (size_t i = 0; i < sizeof bad_samples / sizeof bad_samples[0]; i++) {
        t = (IngleTranscription *)&t;
        CHECK_STATUS(ingle_audio_transcriptions_create_samples(client, REQUEST(""), pcm.samples, bad_samples[i].n,
                                                               bad_samples[i].rate, bad_samples[i].channels, &t),
                     INGLE_ERROR_INVALID_REQUEST);
        CHECK(t == NULL && strstr(ingle_last_error_json(), bad_samples[i].param), "%zu samples, %u Hz, %u channels: %s",
              bad_samples[i].n, bad_samples[i].rate, bad_samples[i].channels, ingle_last_error_json());
    }

    /* A sample that is not a number. */
    float saved = pcm.samples[100];
    pcm.samples[100] = NAN;
    t = (IngleTranscription *)&t;
    CHECK_STATUS(ingle_audio_transcriptions_create_samples(client, REQUEST(""), pcm.samples, 32000, 16000, 1, &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(t == NULL && strstr(ingle_last_error_json(), "\"param\":\"samples\"") &&
              strstr(ingle_last_error(), "`samples`") && strstr(ingle_last_error(), "finite"),
          "%s", ingle_last_error_json());
    pcm.samples[100] = saved;

    /* NULL arguments name themselves. */
    EventCollector c;
    memset(&c, 0, sizeof c);
#define NULL_CASE(call)                                                                                   \
    do {                                                                                                  \
        CHECK_STATUS((call), INGLE_ERROR_NULL_ARGUMENT);                                                  \
        CHECK(strstr(ingle_last_error_json(), "\"code\":\"null_argument\""), "%s", ingle_last_error_json()); \
    } while (0)
    const char *request = REQUEST("");
    NULL_CASE(ingle_audio_transcriptions_create(NULL, request, wav.data, wav.len, NULL, &t));
    CHECK(strstr(ingle_last_error(), "`client` must not be NULL"), "%s", ingle_last_error());
    NULL_CASE(ingle_audio_transcriptions_create(client, NULL, wav.data, wav.len, NULL, &t));
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"request_json\""), "%s", ingle_last_error_json());
    NULL_CASE(ingle_audio_transcriptions_create(client, request, NULL, wav.len, NULL, &t));
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"file\""), "%s", ingle_last_error_json());
    NULL_CASE(ingle_audio_transcriptions_create(client, request, NULL, 0, NULL, &t));
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"file\""), "%s", ingle_last_error_json());
    NULL_CASE(ingle_audio_transcriptions_create(client, request, wav.data, wav.len, NULL, NULL));
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"out\""), "%s", ingle_last_error_json());
    NULL_CASE(ingle_audio_transcriptions_stream(NULL, request, wav.data, wav.len, NULL, collect_event, &c));
    NULL_CASE(ingle_audio_transcriptions_stream(client, NULL, wav.data, wav.len, NULL, collect_event, &c));
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"request_json\""), "%s", ingle_last_error_json());
    NULL_CASE(ingle_audio_transcriptions_stream(client, request, NULL, wav.len, NULL, collect_event, &c));
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"file\""), "%s", ingle_last_error_json());
    NULL_CASE(ingle_audio_transcriptions_stream(client, request, wav.data, wav.len, NULL, NULL, &c));
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"on_chunk\""), "%s", ingle_last_error_json());
    NULL_CASE(ingle_audio_transcriptions_create_samples(NULL, request, pcm.samples, 32000, 16000, 1, &t));
    NULL_CASE(ingle_audio_transcriptions_create_samples(client, NULL, pcm.samples, 32000, 16000, 1, &t));
    NULL_CASE(ingle_audio_transcriptions_create_samples(client, request, NULL, 32000, 16000, 1, &t));
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"samples\""), "%s", ingle_last_error_json());
    NULL_CASE(ingle_audio_transcriptions_create_samples(client, request, pcm.samples, 32000, 16000, 1, NULL));
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"out\""), "%s", ingle_last_error_json());
#undef NULL_CASE
    CHECK(c.events == 0 && t == NULL, "nothing for a NULL argument");

    free(wav.data);
    free(pcm.samples);
}

/* A failure of each kind (the audio, the model's input check, the arguments, the JSON, a
 * stopped stream), and then the client transcribes as before, from a file and from samples. */
static void test_transcription_recovers(void) {
    Pcm pcm;
    Bytes wav;
    if (!two_second_clip(&pcm, &wav)) return;
    static const uint8_t corrupt[] = "RIFF\x24\0\0\0WAVEfmt garbage, not audio at all";
    IngleTranscription *t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), corrupt, sizeof corrupt - 1, NULL, &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(",\"language\":\"de\""), wav.data, wav.len, NULL, &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK_STATUS(ingle_audio_transcriptions_create(client, NULL, wav.data, wav.len, NULL, &t), INGLE_ERROR_NULL_ARGUMENT);
    CHECK_STATUS(ingle_audio_transcriptions_create_samples(client, "{", pcm.samples, 32000, 16000, 1, &t),
                 INGLE_ERROR_INVALID_REQUEST);
    EventCollector c;
    memset(&c, 0, sizeof c);
    c.stop_after = 1;
    CHECK_STATUS(ingle_audio_transcriptions_stream(client, REQUEST(""), wav.data, wav.len, NULL, collect_event, &c),
                 INGLE_ERROR_CANCELLED);
    CHECK(t == NULL && c.events == 1, "%d events", c.events);

    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), wav.data, wav.len, "clip.wav", &t), INGLE_OK);
    CHECK(t && has_words(t->text, "ever tried"), "after the errors: %s", t ? t->text : "(none)");
    IngleTranscription *raw = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create_samples(client, REQUEST(""), pcm.samples, 32000, 16000, 1, &raw),
                 INGLE_OK);
    CHECK(t && raw && strcmp(raw->text, t->text) == 0, "samples: %s", raw ? raw->text : "(none)");
    ingle_transcription_free(raw);
    ingle_transcription_free(t);
    free(wav.data);
    free(pcm.samples);
}

/* Two threads transcribe at once on the one client; each gets its own whole answer. */
typedef struct {
    const Bytes *wav;
    IngleStatus status;
    IngleTranscription *result;
} TranscriptionWorker;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

typedef struct {
    IngleClient *client;
    const Bytes *wav;
    EventCollector events;
    IngleStatus status;
    double returned_ms;
    char error_json[1024]; /* the worker thread's last error */
} StreamWorker;

static void *stream_worker(void *arg) {
    StreamWorker *w = (StreamWorker *)arg;
    w->status = ingle_audio_transcriptions_stream(w->client, REQUEST(""), w->wav->data, w->wav->len, NULL,
                                                  collect_event, &w->events);
    w->returned_ms = now_ms();
    snprintf(w->error_json, sizeof w->error_json, "%s", ingle_last_error_json());
    return NULL;
}

/* An IngleCancel set from another thread reaches Whisper's decoder: a stream whose first window
 * is decoding its tokens (halfway through the window's time: the audio decoded, the window
 * encoded; no event yet, so its callback cannot stop it) ends soon after, not when the window
 * ends; the client it came from works on. */
static void test_transcription_cancel_from_another_thread(void) {
    Bytes wav = recording("two_cities.wav");
    if (!wav.data) return;
    /* How long the first window takes, whole (the second of two runs: the first may load the
     * model). */
    double window_ms = 0;
    for (int run = 0; run < 2; run++) {
        EventCollector first;
        memset(&first, 0, sizeof first);
        first.stop_after = 1;
        double started = now_ms();
        CHECK_STATUS(
            ingle_audio_transcriptions_stream(client, REQUEST(""), wav.data, wav.len, NULL, collect_event, &first),
            INGLE_ERROR_CANCELLED);
        window_ms = now_ms() - started;
    }

    IngleCancel *cancel = NULL;
    IngleClient *cancellable = NULL;
    CHECK_STATUS(ingle_cancel_create(&cancel), INGLE_OK);
    CHECK_STATUS(ingle_client_with_cancel(client, cancel, &cancellable), INGLE_OK);
    if (!cancellable) {
        free(wav.data);
        return;
    }
    StreamWorker w;
    memset(&w, 0, sizeof w);
    w.client = cancellable;
    w.wav = &wav;
    pthread_t thread;
    if (pthread_create(&thread, NULL, stream_worker, &w) != 0) {
        CHECK(0, "pthread_create");
        free(wav.data);
        return;
    }
    double wait_ms = window_ms / 2;
    long long wait_ns = (long long)(wait_ms * 1e6);
    struct timespec wait = {(time_t)(wait_ns / 1000000000), (long)(wait_ns % 1000000000)};
    nanosleep(&wait, NULL);
    double cancelled_at = now_ms();
    ingle_cancel_set(cancel);
    pthread_join(thread, NULL);
    double stopped_ms = w.returned_ms - cancelled_at;
    CHECK_STATUS(w.status, INGLE_ERROR_CANCELLED);
    CHECK(w.events.events == 0, "%d events after a cancel in the first window", w.events.events);
    CHECK(strstr(w.error_json, "\"type\":\"cancelled\""), "%s", w.error_json);
    CHECK(stopped_ms < window_ms / 4, "stopped %.0f ms after the cancel; a window takes %.0f ms", stopped_ms,
          window_ms);
    fprintf(stderr, "window %.0f ms, stopped %.0f ms after the cancel\n", window_ms, stopped_ms);
    ingle_client_free(cancellable);
    ingle_cancel_free(cancel);

    /* The client goes on working. */
    Bytes beckett = recording("beckett.wav");
    IngleTranscription *t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(client, REQUEST(""), beckett.data, beckett.len, NULL, &t), INGLE_OK);
    CHECK(t && same_words(t->text, BECKETT), "after cancel: %s", t ? t->text : "(none)");
    ingle_transcription_free(t);
    free(beckett.data);
    free(wav.data);
}

static void *transcription_worker(void *arg) {
    TranscriptionWorker *w = (TranscriptionWorker *)arg;
    w->status = ingle_audio_transcriptions_create(client, REQUEST(""), w->wav->data, w->wav->len, NULL, &w->result);
    return NULL;
}

static void test_transcription_threads(void) {
    Bytes wav = recording("beckett.wav");
    if (!wav.data) return;
    pthread_t threads[2];
    TranscriptionWorker workers[2];
    memset(workers, 0, sizeof workers);
    for (int i = 0; i < 2; i++) {
        workers[i].wav = &wav;
        CHECK(pthread_create(&threads[i], NULL, transcription_worker, &workers[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK_STATUS(workers[i].status, INGLE_OK);
        CHECK(workers[i].result && same_words(workers[i].result->text, BECKETT), "thread %d: %s", i,
              workers[i].result ? workers[i].result->text : "(none)");
        ingle_transcription_free(workers[i].result);
    }
    free(wav.data);
}

/* One whole transcription of the two-second clip to a verbose_json answer with word times. */
static void test_transcription_memcheck(void) {
    Pcm pcm;
    Bytes wav;
    if (!two_second_clip(&pcm, &wav)) return;
    /* The file decoded, the window encoded and decoded, the words timed, the response built and
     * freed. */
    IngleTranscription *t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(
                     client, REQUEST(",\"response_format\":\"verbose_json\",\"timestamp_granularities\":[\"word\"]"),
                     wav.data, wav.len, "clip.wav", &t),
                 INGLE_OK);
    check_transcription(t, "application/json");
    if (t) {
        CHECK(has_words(t->text, "ever tried") && strstr(t->body, "\"words\":[{"), "clip: %s", t->body);
        CHECK(t->duration == 2.0, "duration %f", t->duration);
    }
    ingle_transcription_free(t);
    free(wav.data);
    free(pcm.samples);
}

/* French speech (espeak-ng) on the multilingual model: transcribed, its language detected and
 * reported; translated into English words; the English-only model refuses to translate. */
static void test_translation(void) {
    Bytes flac = repo_file("tests/data/speech/fr.flac");
    if (!flac.data) return;
    IngleTranscription *t = NULL;
    CHECK_STATUS(ingle_audio_transcriptions_create(
                     client, "{\"model\":\"" MULTILINGUAL "\",\"response_format\":\"verbose_json\"}",
                     flac.data, flac.len, "fr.flac", &t),
                 INGLE_OK);
    check_transcription(t, "application/json");
    if (t) {
        CHECK(strstr(t->body, "\"language\":\"french\"") && has_words(t->text, "bonjour"), "%s", t->body);
    }
    ingle_transcription_free(t);

    t = NULL;
    CHECK_STATUS(ingle_audio_translations_create(client, "{\"model\":\"" MULTILINGUAL "\"}", flac.data, flac.len,
                                                 "fr.flac", &t),
                 INGLE_OK);
    check_transcription(t, "application/json");
    if (t) {
        /* "coffee" (espeak says "café" clearly) and no French left: only some of espeak's
         * French carries through Whisper base. */
        CHECK(has_words(t->text, "coffee") && !has_words(t->text, "bonjour") && !has_words(t->text, "avec") &&
                  strncmp(t->body, "{\"text\":", 8) == 0,
              "translation: %s", t->body);
    }
    ingle_transcription_free(t);

    t = (IngleTranscription *)&t;
    CHECK_STATUS(ingle_audio_translations_create(client, REQUEST(""), flac.data, flac.len, "fr.flac", &t),
                 INGLE_ERROR_INVALID_REQUEST);
    CHECK(t == NULL, "*out must be NULL on failure");
    CHECK(strstr(ingle_last_error_json(), "\"param\":\"model\"") &&
              strstr(ingle_last_error_json(), "cannot translate"),
          "%s", ingle_last_error_json());
    free(flac.data);
}

/* A voice note in a chat message, transcribed by a C predictor (ChatAudios at 16 kHz) with the
 * client's own Whisper: its words come back as the reply. */
static int32_t voice_note(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)user_data;
    const float *samples = NULL;
    size_t frames = 0;
    uint16_t channels = 0;
    uint32_t rate = 0;
    if (ingle_inputs_audio(inputs, "notes[0]", &samples, &frames, &channels, &rate) != INGLE_OK) {
        ingle_sink_fail(sink, "no voice note");
        return 1;
    }
    IngleTranscription *t = NULL;
    if (ingle_audio_transcriptions_create_samples(client, "{\"model\":\"" MODEL "\"}", samples, frames * channels,
                                                  rate, channels, &t) != INGLE_OK) {
        ingle_sink_fail(sink, ingle_last_error());
        return 1;
    }
    char out[1024] = "{\"text\":\"";
    size_t n = strlen(out);
    for (const char *c = t->text; *c && n < sizeof out - 8; c++) {
        if (*c == '"' || *c == '\\') out[n++] = '\\';
        if ((unsigned char)*c >= 0x20) out[n++] = *c;
    }
    snprintf(out + n, sizeof out - n, " (%u Hz)\"}", rate);
    ingle_transcription_free(t);
    return ingle_sink_emit(sink, out) == INGLE_OK ? 0 : 1;
}

static char *base64(const uint8_t *data, size_t len) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = (char *)malloc((len + 2) / 3 * 4 + 1), *o = out;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)data[i] << 16 | (i + 1 < len ? (uint32_t)data[i + 1] << 8 : 0) |
                     (i + 2 < len ? data[i + 2] : 0);
        *o++ = digits[v >> 18 & 63];
        *o++ = digits[v >> 12 & 63];
        *o++ = i + 1 < len ? digits[v >> 6 & 63] : '=';
        *o++ = i + 2 < len ? digits[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static void test_transcription_voice_note(void) {
    static const char *declaration =
        "{\"tag\":\"@c/voice-note\",\"inputs\":[{\"name\":\"messages\",\"type\":\"array\",\"annotation\":"
        "\"chat_messages\"},{\"name\":\"notes\",\"type\":\"array\",\"annotation\":{\"type\":\"chat_audios\","
        "\"sample_rate\":16000}}],\"outputs\":[{\"name\":\"text\",\"type\":\"string\",\"annotation\":\"text_delta\"}]}";
    static int registered = 0;
    if (!registered) {
        CHECK_STATUS(ingle_predictor_register(client, declaration, voice_note, NULL), INGLE_OK);
        registered = 1;
    }
    Bytes beckett = recording("beckett.wav");
    if (!beckett.data) return;
    char *data = base64(beckett.data, beckett.len);
    free(beckett.data);
    char *request = (char *)malloc(strlen(data) + 512);
    sprintf(request,
            "{\"model\":\"@c/voice-note\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
            "\"Transcribe.\"},{\"type\":\"input_audio\",\"input_audio\":{\"format\":\"wav\",\"data\":\"%s\"}}]}]}",
            data);
    free(data);
    char *json = NULL;
    CHECK_STATUS(ingle_chat_completions_create(client, request, &json), INGLE_OK);
    char *content = json ? json_string(json, "content") : NULL;
    CHECK(content && has_words(content, BECKETT) && strstr(content, "(16000 Hz)"), "content: %s",
          content ? content : json ? json : "(none)");
    free(content);
    ingle_string_free(json);
    free(request);
}

static const Test tests[] = {
    {"transcription_voice_note", test_transcription_voice_note},
    {"transcription_create", test_transcription_create},
    {"transcription_formats", test_transcription_formats},
    {"transcription_stream", test_transcription_stream},
    {"transcription_cancel", test_transcription_cancel},
    {"transcription_cancel_from_another_thread", test_transcription_cancel_from_another_thread},
    {"transcription_samples", test_transcription_samples},
    {"transcription_round_trip", test_transcription_round_trip},
    {"transcription_errors", test_transcription_errors},
    {"transcription_recovers", test_transcription_recovers},
    {"transcription_threads", test_transcription_threads},
    {"transcription_memcheck", test_transcription_memcheck},
    {"transcription_translation", test_translation},
};

int main(int argc, char **argv) {
    /* Whisper on one thread; the voice for round trips (loaded only by that test). */
    const char *config = "{\"predictors\":[{\"tag\":\"" MODEL "\",\"backend\":\"whisper\",\"threads\":1,"
                         "\"model\":\"whisper-tiny-en/model.bin\"},{\"tag\":\"" MULTILINGUAL "\",\"backend\":\"whisper\","
                         "\"threads\":1,\"model\":\"whisper-base/model.bin\"},{\"tag\":\"" SPEECH_MODEL "\",\"backend\":\"piper\","
                         "\"threads\":1,\"model\":\"piper/en_US-joe-medium.onnx\"}]}";
    if (ingle_client_create(config, &client) != INGLE_OK) {
        fprintf(stderr, "cannot create the client: %s\n", ingle_last_error());
        return 1;
    }
    int status = run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
    ingle_client_free(client);
    return status;
}
