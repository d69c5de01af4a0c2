// The header compiles as C++ (extern "C", no C-only constructs) and the API is usable from C++:
// RAII ownership, a capture-less lambda as the chunk callback, std::string accumulation.
#include <ingle.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

struct ClientDeleter {
    void operator()(IngleClient *client) const { ingle_client_free(client); }
};
struct StringDeleter {
    void operator()(char *text) const { ingle_string_free(text); }
};

int main() {
    IngleClient *raw = nullptr;
    if (ingle_client_create(nullptr, &raw) != INGLE_OK) {
        std::fprintf(stderr, "create: %s\n", ingle_last_error());
        return 1;
    }
    std::unique_ptr<IngleClient, ClientDeleter> client(raw);

    // Short prompts and few tokens: this runs under valgrind, where each token takes seconds.
    const char *completion_request =
        R"({"model":"@local/smollm2-135m-instruct","prompt":"Once upon a time","max_tokens":3})";
    const char *chat_request =
        R"({"model":"@local/smollm2-135m-instruct","temperature":0,"max_tokens":7,"messages":[)"
        R"({"role":"system","content":"Be brief."},)"
        R"({"role":"user","content":"Name the capital of France."}]})";
    std::string chunks;
    int count = 0;
    struct State { std::string *chunks; int *count; } state{&chunks, &count};
    IngleStatus status = ingle_completions_stream(
        client.get(), completion_request,
        [](const char *chunk, size_t len, void *user_data) -> int32_t {
            auto *s = static_cast<State *>(user_data);
            s->chunks->append(chunk, len).push_back('\n');
            ++*s->count;
            return 0;
        },
        &state);
    if (status != INGLE_OK || count < 3 || chunks.find("text_completion") == std::string::npos) {
        std::fprintf(stderr, "stream: status %d, %d chunks, %s\n", status, count, ingle_last_error());
        return 1;
    }

    char *out = nullptr;
    status = ingle_chat_completions_create(client.get(), chat_request, &out);
    std::unique_ptr<char, StringDeleter> completion(out);
    if (status != INGLE_OK || !std::strstr(completion.get(), "Paris")) {
        std::fprintf(stderr, "create: status %d, %s\n", status, ingle_last_error());
        return 1;
    }

    status = ingle_chat_completions_create(client.get(), "{", &out);
    if (status != INGLE_ERROR_INVALID_REQUEST || out != nullptr || !*ingle_last_error()) {
        std::fprintf(stderr, "bad JSON: status %d\n", status);
        return 1;
    }
    std::printf("ok   C++: %d chunks, %s\n", count, ingle_version());
    return 0;
}
