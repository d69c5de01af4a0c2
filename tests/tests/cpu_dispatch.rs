//! Runtime CPU dispatch: the variant of llama.cpp's kernels chosen for this machine, checked
//! against the CPU's own flags, and a long prompt decoded with it.

use ingle::openai::{ChatCompletionRequest, ChatMessage};
use ingle_tests::{shared, MODEL};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::{params::LlamaModelParams, LlamaModel};
use std::num::NonZeroU32;

/// The x86 variants and the instruction sets they need beyond x86-64-v2 (ggml's
/// GGML_CPU_ALL_VARIANTS list), as /proc/cpuinfo names them.
const VARIANTS: &[(&str, &[&str])] = &[
    ("x64", &[]),
    ("sse42", &["sse4_2"]),
    ("sandybridge", &["sse4_2", "avx"]),
    ("ivybridge", &["sse4_2", "avx", "f16c"]),
    ("piledriver", &["sse4_2", "avx", "f16c", "fma"]),
    ("haswell", &["avx", "f16c", "fma", "avx2", "bmi2"]),
    (
        "skylakex",
        &[
            "avx2", "bmi2", "avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw",
        ],
    ),
    ("cannonlake", &["avx2", "avx512f", "avx512bw", "avx512vbmi"]),
    (
        "cascadelake",
        &["avx2", "avx512f", "avx512bw", "avx512_vnni"],
    ),
    (
        "icelake",
        &["avx2", "avx512f", "avx512bw", "avx512vbmi", "avx512_vnni"],
    ),
    (
        "cooperlake",
        &["avx2", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"],
    ),
    (
        "zen4",
        &[
            "avx2",
            "avx512f",
            "avx512bw",
            "avx512vbmi",
            "avx512_vnni",
            "avx512_bf16",
        ],
    ),
    ("alderlake", &["avx2", "bmi2", "avx_vnni"]),
    (
        "sapphirerapids",
        &[
            "avx512f",
            "avx512_vnni",
            "avx512_bf16",
            "amx_tile",
            "amx_int8",
        ],
    ),
];

fn cpu_flags() -> Vec<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let line = cpuinfo.lines().find(|l| l.starts_with("flags")).unwrap();
    line.split(':')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn needs(variant: &str) -> &'static [&'static str] {
    VARIANTS
        .iter()
        .find(|(v, _)| *v == variant)
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("unknown variant {variant}"))
}

#[test]
fn the_best_variant_this_cpu_runs_is_loaded() {
    let _one = one_at_a_time();
    let info = ingle::system_info().unwrap();
    let flags = cpu_flags();
    let runs = |variant: &str| needs(variant).iter().all(|f| flags.iter().any(|g| g == f));
    println!("{}", serde_json::to_string_pretty(&info).unwrap());
    if std::env::var_os("INGLE_CPU_VARIANT").is_some() {
        assert_eq!(info.cpu_variant_chosen_by, "INGLE_CPU_VARIANT");
        return;
    }
    assert_eq!(info.cpu_variant_chosen_by, "best");
    // Every variant of the build was found, and each one's score agrees with the CPU's flags.
    let mut found: Vec<&str> = info.cpu_variants.keys().map(String::as_str).collect();
    found.extend(info.cpu_variants_excluded.keys().map(String::as_str));
    found.sort();
    let mut all: Vec<&str> = VARIANTS.iter().map(|(v, _)| *v).collect();
    all.sort();
    assert_eq!(found, all);
    for (variant, score) in &info.cpu_variants {
        assert_eq!(
            *score > 0,
            runs(variant),
            "{variant} scored {score} on a CPU with {flags:?}"
        );
    }
    // The chosen one has the highest score, and the AMX one is only considered where it was
    // proven (Intel family 6 model 207, Emerald Rapids) or asked for; then, on a CPU with AMX,
    // it is the one chosen.
    let best = info.cpu_variants.values().max().unwrap();
    assert_eq!(info.cpu_variants[&info.cpu_variant], *best);
    let amx = match std::env::var("INGLE_CPU_AMX").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => ingle::backends::llama::cpu::intel_family6_model() == Some(207),
    };
    if amx {
        assert!(!info.cpu_variants_excluded.contains_key("sapphirerapids"));
        if flags.iter().any(|f| f == "amx_int8") {
            assert_eq!(info.cpu_variant, "sapphirerapids");
            assert!(
                info.cpu_features.contains("AMX_INT8 = 1"),
                "{}",
                info.cpu_features
            );
        }
    } else {
        assert!(info.cpu_variants_excluded.contains_key("sapphirerapids"));
        assert_ne!(info.cpu_variant, "sapphirerapids");
    }
    // On an AVX-512 machine the variant uses AVX-512; on an AVX2 one, AVX2.
    if flags.iter().any(|f| f == "avx512f") {
        assert!(
            needs(&info.cpu_variant).contains(&"avx512f"),
            "{}",
            info.cpu_variant
        );
        assert!(
            info.cpu_features.contains("AVX512 = 1"),
            "{}",
            info.cpu_features
        );
    } else if flags.iter().any(|f| f == "avx2") {
        assert!(
            needs(&info.cpu_variant).contains(&"avx2"),
            "{}",
            info.cpu_variant
        );
    }
    assert!(info
        .cpu_backend_path
        .ends_with(&format!("libggml-cpu-{}.so", info.cpu_variant)));
}

/// A 500-token prompt decoded in one batch (the kernels' matrix-matrix paths: where
/// llama.cpp's AMX path crashed, llama.cpp#20824) gives the logits of the same prompt fed one
/// token at a time (their matrix-vector paths), on the variant this machine runs.
#[test]
fn a_500_token_batch_matches_token_by_token_decoding() {
    let _one = one_at_a_time();
    let backend = ingle::backends::llama::backend().unwrap();
    let config = ingle_tests::config();
    let path = config.model_path(&config.predictors[0]);
    let model = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default()).unwrap();
    let mut text = String::from("Here is a list of fruits and their colours.\n");
    for i in 0..40 {
        text.push_str(&format!(
            "Fruit {i}: the apple is red, the banana is yellow.\n"
        ));
    }
    text.push_str("Which colour is the banana?");
    let tokens = model.vocab().tokenize(text.as_bytes(), true, true);
    assert!(
        tokens.len() >= 500 && tokens.len() <= 1024,
        "{} tokens",
        tokens.len()
    );
    let params = || {
        LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(1024))
            .with_n_batch(1024)
            .with_n_ubatch(1024)
            .with_n_threads(2)
            .with_n_threads_batch(2)
    };
    let mut ctx = model.new_context(backend, params()).unwrap();
    let mut batch = LlamaBatch::new(1024, 1);
    for (i, token) in tokens.iter().enumerate() {
        batch
            .add(*token, i as i32, &[0], i + 1 == tokens.len())
            .unwrap();
    }
    ctx.decode(&mut batch).unwrap();
    let whole = ctx.get_logits_ith(batch.n_tokens() - 1).to_vec();
    drop(ctx);
    let mut ctx = model.new_context(backend, params()).unwrap();
    let mut one = LlamaBatch::new(1, 1);
    for (i, token) in tokens.iter().enumerate() {
        one.clear();
        one.add(*token, i as i32, &[0], true).unwrap();
        ctx.decode(&mut one).unwrap();
    }
    let stepwise = ctx.get_logits_ith(0).to_vec();
    let argmax = |l: &[f32]| (0..l.len()).max_by(|&a, &b| l[a].total_cmp(&l[b])).unwrap();
    let diff = whole
        .iter()
        .zip(&stepwise)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    let spread = whole.iter().fold(0f32, |m, v| m.max(v.abs()));
    println!(
        "{} tokens: max |logit difference| {diff} (largest |logit| {spread})",
        tokens.len()
    );
    assert!(whole.iter().all(|v| v.is_finite()));
    assert_eq!(argmax(&whole), argmax(&stepwise));
    assert!(
        diff < 0.05 * spread,
        "batched and token-by-token logits differ by {diff}"
    );
}

#[test]
#[ignore = "extended: the 500-token batch test keeps the chosen variant's decoding in CI (scripts/test --extended rust)"]
fn a_500_token_chat_runs_on_the_chosen_variant() {
    let _one = one_at_a_time();
    let mut text = String::from("Here is a list of fruits and their colours.\n");
    for i in 0..40 {
        text.push_str(&format!(
            "Fruit {i}: the apple is red, the banana is yellow.\n"
        ));
    }
    text.push_str("Which colour is the banana?");
    let request = ChatCompletionRequest {
        temperature: Some(0.0),
        max_tokens: Some(24),
        ..ChatCompletionRequest::new(MODEL, vec![ChatMessage::user(text)])
    };
    let completion = shared().chat.completions.create(&request).unwrap();
    assert!(
        completion.usage.prompt_tokens >= 500,
        "{:?}",
        completion.usage
    );
    // SmolLM2 is small: no claim on its answer beyond being about the question.
    let answer = completion.choices[0].message.text().to_lowercase();
    assert!(answer.contains("banana"), "{answer}");
}

/// One test at a time: each runs its own llama.cpp contexts, and two decoding at once on two
/// cores spin against each other (llama.cpp's threads busy-wait) and take minutes.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
