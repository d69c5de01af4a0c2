/* Streams a chat answer to stdout with ingle's C API.
 *
 *   cc chat.c $(pkg-config --cflags --libs ingle) -o chat && ./chat "Why is the sky blue?"
 */
#include <ingle.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the `content` of one chat.completion.chunk. A real program would use a JSON parser;
 * this one only needs to decode the escapes a content string can hold. */
static int32_t print_chunk(const char *chunk_json, size_t len, void *user_data) {
    (void)len;
    (void)user_data;
    const char *p = strstr(chunk_json, "\"content\":\"");
    if (!p) return 0; /* the role chunk, the finish chunk, the usage chunk */
    for (p += strlen("\"content\":\""); *p && *p != '"'; p++) {
        if (*p != '\\') { putchar(*p); continue; }
        switch (*++p) {
        case 'n': putchar('\n'); break;
        case 't': putchar('\t'); break;
        case 'u': { /* \uXXXX: control characters and the like */
            unsigned code = 0;
            sscanf(p + 1, "%4x", &code);
            if (code < 0x80) putchar((int)code);
            p += 4;
            break;
        }
        default: putchar(*p); /* \" \\ \/ */
        }
    }
    fflush(stdout);
    return 0; /* non-zero would stop generation */
}

/* Writes `text` as a JSON string body (escapes quotes, backslashes and control characters). */
static void json_escape(const char *text, char *out, size_t size) {
    size_t n = 0;
    for (; *text && n + 7 < size; text++) {
        unsigned char c = (unsigned char)*text;
        if (c == '"' || c == '\\') { out[n++] = '\\'; out[n++] = (char)c; }
        else if (c < 0x20) n += (size_t)snprintf(out + n, size - n, "\\u%04x", c);
        else out[n++] = (char)c;
    }
    out[n] = 0;
}

int main(int argc, char **argv) {
    const char *question = argc > 1 ? argv[1] : "Name the capital of France.";
    char escaped[2048], request[4096];
    json_escape(question, escaped, sizeof escaped);
    snprintf(request, sizeof request,
             "{\"model\": \"@local/smollm2-135m-instruct\", \"max_tokens\": 256,"
             " \"messages\": [{\"role\": \"user\", \"content\": \"%s\"}]}",
             escaped);

    IngleClient *client = NULL;
    if (ingle_client_create(NULL, &client) != INGLE_OK) { /* NULL: $INGLE_CONFIG or defaults */
        fprintf(stderr, "ingle: %s\n", ingle_last_error());
        return 1;
    }
    IngleStatus status = ingle_chat_completions_stream(client, request, print_chunk, NULL);
    putchar('\n');
    if (status != INGLE_OK) fprintf(stderr, "ingle: %s\n", ingle_last_error());
    ingle_client_free(client);
    return status == INGLE_OK ? 0 : 1;
}
