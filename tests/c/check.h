/* A few helpers shared by the C tests: checks that count failures, a stream collector, and a
 * tiny reader for one JSON string field (enough to pull `content` out of a chunk). */
#ifndef INGLE_TEST_CHECK_H
#define INGLE_TEST_CHECK_H

#include <ingle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int check_failures = 0;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fprintf(stderr, "\n    ingle_last_error(): %s\n", ingle_last_error());        \
            check_failures++;                                                             \
        }                                                                                 \
    } while (0)

#define CHECK_STATUS(status, expected)                                                    \
    CHECK((status) == (expected), "status %d, expected %d (%s)", (int)(status),           \
          (int)(expected), #expected)

/* The decoded JSON string value of the first `"key":"..."` in `json`, malloc'd; NULL when the
 * key is absent or not a string. Handles the escapes serde_json writes (\" \\ \/ \n \t \r \b \f
 * \uXXXX, surrogate pairs included). */
static inline char *json_string(const char *json, const char *key) {
    char pattern[128];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *p = strstr(json, pattern);
    if (!p) return NULL;
    p += strlen(pattern);
    char *out = (char *)malloc(strlen(p) * 4 + 1), *o = out;
    while (*p && *p != '"') {
        if (*p != '\\') { *o++ = *p++; continue; }
        p++;
        switch (*p) {
        case 'n': *o++ = '\n'; p++; break;
        case 't': *o++ = '\t'; p++; break;
        case 'r': *o++ = '\r'; p++; break;
        case 'b': *o++ = '\b'; p++; break;
        case 'f': *o++ = '\f'; p++; break;
        case 'u': {
            unsigned cp = (unsigned)strtoul((char[5]){p[1], p[2], p[3], p[4], 0}, NULL, 16);
            p += 5;
            if (cp >= 0xD800 && cp < 0xDC00 && p[0] == '\\' && p[1] == 'u') {
                unsigned lo = (unsigned)strtoul((char[5]){p[2], p[3], p[4], p[5], 0}, NULL, 16);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            if (cp < 0x80) { *o++ = (char)cp; }
            else if (cp < 0x800) { *o++ = (char)(0xC0 | cp >> 6); *o++ = (char)(0x80 | (cp & 0x3F)); }
            else if (cp < 0x10000) {
                *o++ = (char)(0xE0 | cp >> 12); *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *o++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *o++ = (char)(0xF0 | cp >> 18); *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: *o++ = *p++; break; /* \" \\ \/ */
        }
    }
    *o = 0;
    return out;
}

/* Collects a stream: every chunk's `content`, how many chunks, and whether usage came. */
typedef struct {
    int chunks;
    int stop_after;        /* return non-zero from the callback after this many chunks; 0: never */
    int bad_chunks;        /* chunks whose len disagreed with strlen, or not a JSON object */
    int usage_chunks;
    char content[8192];
    char finish_reason[32];
} Collector;

static inline int32_t collect_chunk(const char *chunk, size_t len, void *user_data) {
    Collector *c = (Collector *)user_data;
    c->chunks++;
    if (strlen(chunk) != len || len < 2 || chunk[0] != '{' || chunk[len - 1] != '}') c->bad_chunks++;
    char *content = json_string(chunk, "content");
    if (!content) content = json_string(chunk, "text"); /* text_completion chunks */
    if (content) {
        strncat(c->content, content, sizeof c->content - strlen(c->content) - 1);
        free(content);
    }
    char *finish = json_string(chunk, "finish_reason");
    if (finish) {
        snprintf(c->finish_reason, sizeof c->finish_reason, "%s", finish);
        free(finish);
    }
    if (strstr(chunk, "\"usage\":{")) c->usage_chunks++;
    return c->stop_after && c->chunks >= c->stop_after ? 1 : 0;
}

/* The events of a streamed response: how many, whether their sequence numbers run 0, 1, 2...,
 * the text of the `response.output_text.delta`s, and the last event's type. */
typedef struct {
    int events;
    int out_of_order;
    int stop_after;
    char text[4096];
    char last_type[64];
} ResponseEvents;

static inline int32_t collect_response_event(const char *event, size_t len, void *user_data) {
    ResponseEvents *e = (ResponseEvents *)user_data;
    char comma[48], brace[48]; /* the number whole: 1 must not match 10 */
    snprintf(comma, sizeof comma, "\"sequence_number\":%d,", e->events);
    snprintf(brace, sizeof brace, "\"sequence_number\":%d}", e->events);
    if (strlen(event) != len || (!strstr(event, comma) && !strstr(event, brace))) e->out_of_order++;
    e->events++;
    char *type = json_string(event, "type");
    if (type) {
        snprintf(e->last_type, sizeof e->last_type, "%s", type);
        if (strcmp(type, "response.output_text.delta") == 0) {
            char *delta = json_string(event, "delta");
            if (delta) strncat(e->text, delta, sizeof e->text - strlen(e->text) - 1);
            free(delta);
        }
        free(type);
    }
    return e->stop_after && e->events >= e->stop_after ? 1 : 0;
}

/* A named test of a test program's table. */
typedef struct {
    const char *name;
    void (*run)(void);
} Test;

/* Runs the tests named in argv (every test when none is), printing each with its time; the
 * exit status of the program: 0 when every check passed. Needs _POSIX_C_SOURCE for
 * clock_gettime, defined before the first include. */
static inline int run_tests(const Test *tests, size_t count, int argc, char **argv) {
    int ran = 0;
    for (size_t i = 0; i < count; i++) {
        int selected = argc < 2;
        for (int a = 1; a < argc; a++) selected |= strcmp(argv[a], tests[i].name) == 0;
        if (!selected) continue;
        int before = check_failures;
        struct timespec start, end;
        clock_gettime(CLOCK_MONOTONIC, &start);
        tests[i].run();
        clock_gettime(CLOCK_MONOTONIC, &end);
        ran++;
        printf("%s %s (%.1f s)\n", check_failures == before ? "ok  " : "FAIL", tests[i].name,
               (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9);
        fflush(stdout);
    }
    if (ran == 0) {
        fprintf(stderr, "no test matched\n");
        return 1;
    }
    printf("%d tests, %d failed checks\n", ran, check_failures);
    return check_failures == 0 ? 0 : 1;
}

#endif
