/* A predictor written in C: a chat "model" that answers with the user's words reversed, served
 * by ingle's OpenAI functions. Build and run:
 *
 *   cc examples/c/predictor.c $(pkg-config --cflags --libs ingle) -o predictor && ./predictor "hello big world"
 */
#include <ingle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Emits the words of the last message's content, last word first. */
static int32_t reverse(const IngleInputs *inputs, IngleSink *sink, void *user_data) {
    (void)user_data;
    const char *json = ingle_inputs_json(inputs); /* {"messages":[{"content":"...","role":"user"}]} */
    const char *content = strstr(json, "\"content\":\"");
    if (!content) {
        ingle_sink_fail(sink, "no message content");
        return 1;
    }
    content += strlen("\"content\":\"");
    const char *end = strchr(content, '"');
    size_t len = end ? (size_t)(end - content) : strlen(content);
    char words[1024];
    snprintf(words, sizeof words, "%.*s", (int)len, content);
    for (char *space = strrchr(words, ' ');; space = strrchr(words, ' ')) {
        char out[1100];
        snprintf(out, sizeof out, "{\"text\":\"%s \"}", space ? space + 1 : words);
        if (ingle_sink_emit(sink, out) != INGLE_OK) return 0; /* cancelled: stop */
        if (!space) return 0;
        *space = 0;
    }
}

static int32_t print_content(const char *chunk, size_t len, void *user_data) {
    (void)len;
    (void)user_data;
    const char *content = strstr(chunk, "\"content\":\"");
    if (content) {
        content += strlen("\"content\":\"");
        printf("%.*s", (int)(strchr(content, '"') - content), content);
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *words = argc > 1 ? argv[1] : "hello big world";
    IngleClient *client = NULL;
    if (ingle_client_create("{\"predictors\":[]}", &client) != INGLE_OK) goto fail;
    const char *declaration = "{\"tag\":\"@me/reverse\",\"kind\":\"generator\",\"inputs\":[{\"name\":\"messages\","
                              "\"type\":\"array\",\"annotation\":\"chat_messages\"}],\"outputs\":[{\"name\":\"text\","
                              "\"type\":\"string\",\"annotation\":\"text_delta\"}]}";
    if (ingle_predictor_register(client, declaration, reverse, NULL) != INGLE_OK) goto fail;
    char request[1200];
    snprintf(request, sizeof request,
             "{\"model\":\"@me/reverse\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}", words);
    if (ingle_chat_completions_stream(client, request, print_content, NULL) != INGLE_OK) goto fail;
    printf("\n");
    ingle_client_free(client);
    return 0;
fail:
    fprintf(stderr, "ingle: %s\n", ingle_last_error());
    ingle_client_free(client);
    return 1;
}
