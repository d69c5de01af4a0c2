//! Prompt caching on the real default model, greedy: a request whose prompt extends an earlier
//! one reuses that one's KV cache, and answers exactly as a cold model does.

use ingle::openai::{ChatCompletion, ChatCompletionRequest, ChatMessage};
use ingle::Client;
use ingle_tests::{config, MODEL};

/// About 700 tokens of history: meeting notes in the system message (more than one 512-token
/// batch of prefill).
fn notes() -> String {
    let mut text = String::from(
        "You are a helpful assistant. These are the notes of this week's planning meeting.\n",
    );
    for i in 1..=24 {
        text.push_str(&format!(
            "Note {i}: the team reviewed task {i} of the release plan, assigned it to group {} \
             and agreed to report on it by day {}.\n",
            (i % 5) + 1,
            (i % 7) + 1
        ));
    }
    text
}

fn greedy(messages: Vec<ChatMessage>) -> ChatCompletionRequest {
    ChatCompletionRequest {
        temperature: Some(0.0),
        max_tokens: Some(48),
        ..ChatCompletionRequest::new(MODEL, messages)
    }
}

fn cold() -> Client {
    Client::from_config(&config()).unwrap()
}

fn cached(completion: &ChatCompletion) -> u32 {
    completion
        .usage
        .prompt_tokens_details
        .map_or(0, |d| d.cached_tokens)
}

fn answer(completion: &ChatCompletion) -> String {
    completion.choices[0].message.text().to_string()
}

#[test]
fn a_follow_up_reuses_the_history_and_answers_as_a_cold_model() {
    let _one = one_at_a_time();
    let warm = cold();
    let system = ChatMessage::system(notes());
    let first = ChatMessage::user("Which group has task 3, and by which day?");
    let turn1 = warm
        .chat
        .completions
        .create(&greedy(vec![system.clone(), first.clone()]))
        .unwrap();
    assert!(turn1.usage.prompt_tokens > 600, "{:?}", turn1.usage);
    assert_eq!(cached(&turn1), 0, "a new client has nothing cached");

    let history = vec![
        system.clone(),
        first.clone(),
        ChatMessage::assistant(answer(&turn1)),
        ChatMessage::user("And task 7?"),
    ];
    let turn2 = warm
        .chat
        .completions
        .create(&greedy(history.clone()))
        .unwrap();
    // The whole first prompt is shared (its answer too, as far as it tokenizes the same).
    assert!(
        cached(&turn2) >= turn1.usage.prompt_tokens,
        "turn 2 reused {} of turn 1's {} prompt tokens",
        cached(&turn2),
        turn1.usage.prompt_tokens
    );
    assert!(cached(&turn2) < turn2.usage.prompt_tokens);
    let cold_turn2 = cold()
        .chat
        .completions
        .create(&greedy(history.clone()))
        .unwrap();
    assert_eq!(cached(&cold_turn2), 0);
    assert_eq!(
        answer(&turn2),
        answer(&cold_turn2),
        "cached and cold answers differ"
    );
    assert_eq!(
        turn2.usage.completion_tokens,
        cold_turn2.usage.completion_tokens
    );

    // An edit in the middle of the history: the cache is used up to the edit, and no further.
    let mut edited = history.clone();
    edited[0] = ChatMessage::system(notes().replace(
        "Note 12: the team reviewed task 12",
        "Note 12: the team cancelled task 12",
    ));
    let warm_edited = warm
        .chat
        .completions
        .create(&greedy(edited.clone()))
        .unwrap();
    // Note 12 is about half way through the ~700 tokens of notes.
    let reused = cached(&warm_edited);
    assert!(
        reused > 150 && reused < turn1.usage.prompt_tokens * 3 / 4,
        "the prefix before the edit is reused, nothing after it: {reused} of {}",
        warm_edited.usage.prompt_tokens
    );
    let cold_edited = cold().chat.completions.create(&greedy(edited)).unwrap();
    assert_eq!(
        answer(&warm_edited),
        answer(&cold_edited),
        "cached and cold answers differ after an edit"
    );

    // The same request again: all but its last two tokens come from the cache, same answer.
    let again = warm.chat.completions.create(&greedy(history)).unwrap();
    assert_eq!(answer(&again), answer(&turn2));
}

#[test]
fn streamed_requests_report_cached_tokens_too() {
    let _one = one_at_a_time();
    let client = cold();
    let messages = vec![
        ChatMessage::system(notes()),
        ChatMessage::user("Who has task 5?"),
    ];
    let first = client
        .chat
        .completions
        .create(&greedy(messages.clone()))
        .unwrap();
    let mut request = greedy(messages);
    request.stream_options = Some(ingle::openai::StreamOptions {
        include_usage: true,
        ..Default::default()
    });
    let mut usage = None;
    let mut text = String::new();
    for chunk in client.chat.completions.stream(&request).unwrap() {
        let chunk = chunk.unwrap();
        for choice in &chunk.choices {
            text.push_str(choice.delta.content.as_deref().unwrap_or_default());
        }
        usage = usage.or(chunk.usage);
    }
    let usage = usage.expect("a usage chunk");
    assert_eq!(text, answer(&first));
    assert_eq!(
        usage.prompt_tokens_details.map(|d| d.cached_tokens),
        Some(first.usage.prompt_tokens - 2),
        "all but the last two prompt tokens"
    );
}

/// Sampled output with a seed is as reproducible as greedy: the same on a cache hit as cold,
/// for a short prompt too (where the last prompt token alone would round differently).
#[test]
fn a_seeded_sample_is_the_same_cached_and_cold() {
    let client = cold();
    let request = ChatCompletionRequest {
        temperature: Some(1.0),
        seed: Some(3),
        max_tokens: Some(16),
        ..ChatCompletionRequest::new(MODEL, vec![ChatMessage::user("Name a colour.")])
    };
    let first = client.chat.completions.create(&request).unwrap();
    let again = client.chat.completions.create(&request).unwrap();
    assert_eq!(cached(&first), 0);
    assert_eq!(cached(&again), again.usage.prompt_tokens - 2);
    assert_eq!(answer(&first), answer(&again));
}

/// Why a cache hit answers exactly as a cold request: with the context ingle makes (flash
/// attention off), a prompt's logits do not change by one bit however it is cut into batches
/// of two tokens or more, so KV computed for an earlier request's prompt is the KV a cold
/// prefill computes. (A last batch of one token may differ: on this 34-token prompt the logits
/// moved by 0.84, so a cache hit computes at least the last two tokens again.)
#[test]
#[ignore = "extended: logits recomputed at every cut of a 700-token history (47 s); the follow-up and streamed tests keep the cache in CI (scripts/test --extended rust)"]
fn a_prompt_cut_anywhere_gives_bit_identical_logits() {
    let _one = one_at_a_time();
    use llama_cpp_2::context::params::LlamaContextParams;
    use llama_cpp_2::llama_batch::LlamaBatch;
    use llama_cpp_2::model::{params::LlamaModelParams, LlamaModel};
    let backend = ingle::backends::llama::backend().unwrap();
    let config = config();
    let path = config.model_path(&config.predictors[0]);
    let model = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default()).unwrap();
    let short = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nName a colour.<|im_end|>\n<|im_start|>assistant\n";
    for text in [short.to_string(), notes()] {
        let tokens = model.vocab().tokenize(text.as_bytes(), true, true);
        let n = tokens.len();
        // As the scheduler makes its context: 4 sequences, a KV cache of its own for each.
        for (seqs, unified) in [(4u32, false)] {
            let logits = |cut: usize| {
                let params = LlamaContextParams::default()
                    .with_n_ctx(std::num::NonZeroU32::new(2048 * seqs))
                    .with_n_seq_max(seqs)
                    .with_kv_unified(unified)
                    .with_n_batch(512)
                    .with_n_ubatch(512)
                    .with_n_threads(2)
                    .with_n_threads_batch(2)
                    .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED);
                let mut ctx = model.new_context(backend, params).unwrap();
                let mut batch = LlamaBatch::new(512, 1);
                let mut last = 0;
                let mut start = 0;
                while start < n {
                    let end = if start < cut {
                        cut.min(start + 512)
                    } else {
                        n.min(start + 512)
                    };
                    batch.clear();
                    for (i, token) in tokens.iter().enumerate().take(end).skip(start) {
                        batch.add(*token, i as i32, &[0], i + 1 == n).unwrap();
                    }
                    ctx.decode(&mut batch).unwrap();
                    last = batch.n_tokens() - 1;
                    start = end;
                }
                ctx.get_logits_ith(last).to_vec()
            };
            let whole = logits(n);
            for cut in [1, n / 3, n - 2] {
                assert!(
                    whole == logits(cut),
                    "{n} tokens cut at {cut}: the logits changed"
                );
            }
        }
    }
}

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
