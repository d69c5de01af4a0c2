//! `ingle`: run local models from the command line. One implementation for every way it is
//! installed: the `ingle` binary (`src/main.rs`), and the `ingle` command of the Python wheel
//! and of the npm package, which call [`run_command`] through their bindings.

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use ingle::config::DEFAULT_TRANSCRIPTION_MODEL;
use ingle::openai::{
    ChatCompletionRequest, ChatMessage, CompletionRequest, EmbeddingRequest, StopSequences,
};
use ingle::openai::{SpeechRequest, TranscriptionAudio, TranscriptionEvent, TranscriptionRequest};
use ingle::{Client, Config, DEFAULT_EMBEDDING_MODEL, DEFAULT_MODEL, DEFAULT_SPEECH_MODEL};
use std::ffi::OsString;
use std::io::IsTerminal;
use std::io::{Read, Write};
use std::path::PathBuf;

mod pull;

#[derive(Parser)]
#[command(
    name = "ingle",
    version,
    about = "Run open models in-process behind the OpenAI interface"
)]
struct Cli {
    /// Config file listing predictors (default: $INGLE_CONFIG, else the default model).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Where the models are (default: the config's `models_dir`, else $INGLE_MODELS_DIR, else
    /// ~/.cache/ingle/models).
    #[arg(long, global = true)]
    models_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Chat completion: streams the assistant's answer to PROMPT.
    Chat {
        /// A system message before the prompt.
        #[arg(long)]
        system: Option<String>,
        #[command(flatten)]
        options: GenerationArgs,
    },
    /// Text completion: streams the continuation of PROMPT.
    Complete {
        #[command(flatten)]
        options: GenerationArgs,
    },
    /// Embeddings: prints the `embeddings.create` response for TEXT... as JSON.
    Embed {
        #[arg(long, default_value = DEFAULT_EMBEDDING_MODEL)]
        model: String,
        /// Length of the vectors (default: the model's).
        #[arg(long)]
        dimensions: Option<i64>,
        /// `float` or `base64`.
        #[arg(long)]
        encoding_format: Option<String>,
        #[arg(required = true)]
        texts: Vec<String>,
    },
    /// Speech: speaks TEXT with a speech model (`audio.speech.create`) into a file or stdout.
    Speak {
        #[arg(long, default_value = DEFAULT_SPEECH_MODEL)]
        model: String,
        /// A voice of the model, or an OpenAI voice name (alloy, nova, ...: the model's default
        /// voice unless the config maps it).
        #[arg(long, default_value = "alloy")]
        voice: String,
        /// Speaking speed, 0.25 to 4.0.
        #[arg(long)]
        speed: Option<f64>,
        /// mp3, opus, aac, flac, wav or pcm (default: the output file's extension, else mp3).
        #[arg(long)]
        format: Option<String>,
        /// Output file, or `-` for stdout (audio is written as each sentence is synthesised).
        #[arg(short = 'o', long, default_value = "-")]
        output: PathBuf,
        text: String,
    },
    /// Transcription: transcribes the audio FILE with a speech-to-text model
    /// (`audio.transcriptions.create`) and prints it.
    Transcribe {
        #[arg(long, default_value = DEFAULT_TRANSCRIPTION_MODEL)]
        model: String,
        /// text, json, srt, vtt or verbose_json (default: text; verbose_json with
        /// --timestamps).
        #[arg(long)]
        format: Option<String>,
        /// Timestamps in verbose_json: `word` and/or `segment` (repeatable, or
        /// comma-separated).
        #[arg(long, value_delimiter = ',')]
        timestamps: Vec<String>,
        /// The language of the audio: ISO-639-1 (`fr`) or a name (`french`); detected by a
        /// multilingual model when left out.
        #[arg(long)]
        language: Option<String>,
        /// Translate into English (`audio.translations.create`; a multilingual model such as
        /// @local/whisper-base).
        #[arg(long, conflicts_with = "stream")]
        translate: bool,
        /// Text to guide the transcription's style or vocabulary.
        #[arg(long)]
        prompt: Option<String>,
        /// 0 to 1: the first sampling temperature.
        #[arg(long)]
        temperature: Option<f64>,
        /// Print the text as it is transcribed, segment by segment (text and json only).
        #[arg(long)]
        stream: bool,
        /// The audio (wav, flac, mp3, ogg, webm, m4a), or `-` for stdin.
        file: PathBuf,
    },
    /// Lists the models ingle can pull (size, whether downloaded) and the config's own.
    Models {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Downloads models from the catalog, and what they need, into the models directory
    /// ($INGLE_MODELS_DIR, else ~/.cache/ingle/models): verified (sha256), atomic, resumable.
    Pull {
        /// Tags to pull (`ingle models` lists them); default: the default chat model.
        tags: Vec<String>,
        /// Pull every entry of the catalog.
        #[arg(long, conflicts_with = "tags")]
        all: bool,
        /// No progress bars and no summary.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Prints, as JSON, what ingle runs with here: its version, the CPU variant of llama.cpp's
    /// kernels it loaded for this machine (with every variant's score), the GPU modules and
    /// GPUs, and where the ONNX models would run (CUDA or the CPU, and why).
    SystemInfo,
    /// Serves the OpenAI HTTP API, Anthropic's Messages and the rest of the method table
    /// (the routes are listed below) until SIGINT or SIGTERM.
    Serve {
        /// Address to listen on (loopback by default; 0.0.0.0 for every interface).
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// Port (0 picks a free one; the address is printed to stderr).
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Require `Authorization: Bearer KEY` on /v1 requests.
        #[arg(long, env = "INGLE_API_KEY", hide_env_values = true)]
        api_key: Option<String>,
        /// Largest request body, in bytes.
        #[arg(long, default_value_t = ingle_serve::DEFAULT_BODY_LIMIT)]
        body_limit: usize,
        /// Largest audio upload (/v1/audio/transcriptions and /translations), in MB (MiB).
        #[arg(long, default_value_t = 25.0, value_parser = megabytes)]
        max_upload_mb: f64,
        /// Seconds a client has to send a request's headers, from their first byte.
        #[arg(long, default_value_t = 10.0, value_parser = seconds)]
        header_timeout: f64,
        /// Seconds a client has to send a request's body (slower: 408).
        #[arg(long, default_value_t = 30.0, value_parser = seconds)]
        body_timeout: f64,
        /// Seconds a connection may stay open without a request.
        #[arg(long, default_value_t = 60.0, value_parser = seconds)]
        idle_timeout: f64,
        /// Seconds a response may wait on a client that reads nothing before the connection
        /// is dropped and its generation cancelled.
        #[arg(long, default_value_t = 30.0, value_parser = seconds)]
        write_timeout: f64,
        /// Most connections open at once; more are answered 503.
        #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        max_connections: u32,
        /// Seconds a model may sit unused before it is unloaded (its memory freed; the next
        /// request loads it again), as Ollama's keep-alive; `never` keeps models loaded.
        #[arg(long, default_value = "300", value_parser = keep_alive)]
        keep_alive: KeepAlive,
        /// The SQLite file of stored responses (/v1/responses), or `:memory:` (default: the
        /// config's `responses.store`, else $INGLE_RESPONSES_STORE, else
        /// ~/.local/share/ingle/responses.sqlite3). Several servers may share one file.
        #[arg(long)]
        responses_store: Option<PathBuf>,
        /// A model to serve, pulled first where it is a Hugging Face reference not yet in the
        /// cache (`hf.co/ORG/REPO:QUANT`), and loaded before /ready answers 200 (repeatable).
        #[arg(long = "model", value_parser = model_name)]
        models: Vec<String>,
        /// Models to load before /ready answers 200: `all` (every model the config has files
        /// for), or tags separated by commas. Others load on their first request.
        #[arg(long, value_delimiter = ',')]
        preload: Vec<String>,
        /// Seconds a drain (SIGTERM, POST /drain) lets in-flight requests run before it ends
        /// them with an error event.
        #[arg(long, default_value_t = 30.0, value_parser = seconds)]
        drain_timeout: f64,
        /// Serve GET /metrics (Prometheus text; behind --api-key when one is set).
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
        metrics: bool,
        /// Serve /metrics without --api-key (for scrapers that cannot send a key, such as the
        /// Gateway API Inference Extension's endpoint picker).
        #[arg(long)]
        public_metrics: bool,
        /// Request logs on stderr: `text` (readable), `json` (one object a line), or `off`.
        #[arg(long, value_enum, default_value_t = LogFormat::Text)]
        log_format: LogFormat,
        /// Host names the server answers to besides loopback names, IP addresses and this
        /// machine's name: `models.example.com`, `.example.com` (and its subdomains), or `*`.
        /// Requests naming another Host are refused (403): that stops DNS rebinding.
        #[arg(long, value_delimiter = ',', value_parser = allowed_host)]
        allowed_hosts: Vec<String>,
        /// Browser origins whose pages may call the server (CORS), besides this machine's own
        /// (http://localhost:PORT): `https://app.example.com`, or `*`. Requests from other
        /// web pages are refused (403) before they run.
        #[arg(long = "cors-origin", value_delimiter = ',', value_parser = cors_origin)]
        cors_origins: Vec<String>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
    Off,
}

#[derive(Clone, Copy)]
struct KeepAlive(Option<f64>);

fn keep_alive(text: &str) -> Result<KeepAlive, String> {
    if text == "never" || text == "-1" {
        return Ok(KeepAlive(None));
    }
    seconds(text).map(|s| KeepAlive(Some(s)))
}

#[derive(Args)]
struct GenerationArgs {
    /// A model's tag (or its name without the namespace), or a GGUF file's path.
    #[arg(long, default_value = DEFAULT_MODEL, value_parser = model_name)]
    model: String,
    #[arg(long)]
    max_tokens: Option<i64>,
    #[arg(long)]
    temperature: Option<f64>,
    #[arg(long)]
    top_p: Option<f64>,
    #[arg(long)]
    seed: Option<i64>,
    /// Stop before this text (repeatable, up to 4).
    #[arg(long)]
    stop: Vec<String>,
    /// Print the whole non-streamed response object as JSON instead of streaming text.
    #[arg(long)]
    json: bool,
    prompt: String,
}

impl GenerationArgs {
    fn stop(&self) -> Option<StopSequences> {
        (!self.stop.is_empty()).then(|| StopSequences::Many(self.stop.clone()))
    }
}

/// Runs the command line `args` (the program's name first, as `std::env::args_os` gives it)
/// and returns the process's exit status: 0, 1 on an error (printed as `ingle: error: ...`),
/// or clap's status for a usage error (2; `--help` is 0).
pub fn run_command(args: Vec<OsString>) -> u8 {
    // `--version` also says which of llama.cpp's CPU variants this machine gets.
    if args.get(1).and_then(|a| a.to_str()) == Some("--version") {
        match ingle::system_info() {
            Ok(info) => println!(
                "ingle {}\nllama.cpp CPU variant: {} ({})",
                info.version, info.cpu_variant, info.cpu_variant_chosen_by
            ),
            Err(error) => println!(
                "ingle {}\nllama.cpp CPU variant: none ({error})",
                ingle::VERSION
            ),
        }
        return 0;
    }
    // Not `Cli::parse`, which exits the process: the bindings' callers get a status back.
    let matches = Cli::command()
        .mut_subcommand("serve", |serve| serve.after_help(served_routes()))
        .try_get_matches_from(args);
    let cli = match matches.and_then(|matches| Cli::from_arg_matches(&matches)) {
        Ok(cli) => cli,
        Err(usage) => {
            let _ = usage.print();
            return u8::try_from(usage.exit_code()).unwrap_or(2);
        }
    };
    init_logging(match &cli.command {
        Command::Serve { log_format, .. } => Some(*log_format),
        _ => None,
    });
    match run(cli) {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("ingle: error: {}", error.to_string().replace('\n', " "));
            1
        }
    }
}

/// `ingle serve --help`'s list of routes, from the method table (as the server makes them).
fn served_routes() -> String {
    let mut text = String::from("Routes:\n");
    for method in ingle::methods::METHODS {
        let Some(route) = method.route else { continue };
        let verb = route.verb.as_str().to_ascii_uppercase();
        let aliases = match route.aliases {
            [] => String::new(),
            aliases => format!(" (also {})", aliases.join(", ")),
        };
        text.push_str(&format!(
            "  {verb:<6} /v1{}{aliases}\n          {}\n",
            route.path.replace("{*", "{"),
            method.summary
        ));
    }
    text.push_str("  GET    /health, /ready, /openapi.json (and /metrics with --metrics)\n");
    text.push_str("  POST   /drain (drains as SIGTERM does; who may: docs/serve.md)");
    text
}

/// [`run_command`] in a host process (the `ingle` command of the Python wheel and of the npm
/// package): for the run, Ctrl-C and SIGTERM get their default action back (unless the host
/// ignores them), so they stop the command (or drain `ingle serve`) as they do the binary,
/// where the host's own handlers would not (Python's only sets a flag that nothing reads while
/// the command runs; Node's re-raises the signal into tokio's handler); the host's actions are
/// put back after, whole. A panic is exit status 101, as the binary's, instead of unwinding
/// into the host. (tokio listens to a signal once per process: a second `serve` run by one
/// host process gets no drain on SIGTERM; the console scripts run one command per process.)
pub fn run_hosted(args: Vec<OsString>) -> u8 {
    #[cfg(unix)]
    let host = [libc::SIGINT, libc::SIGTERM].map(default_action_unless_ignored);
    let status = std::panic::catch_unwind(|| run_command(args)).unwrap_or(101);
    #[cfg(unix)]
    for (signal, action) in [libc::SIGINT, libc::SIGTERM].into_iter().zip(host) {
        if let Some(action) = action {
            // SAFETY: the host's own action, whole (handler, mask and flags), put back.
            unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
        }
    }
    status
}

/// Gives `signal` its default action, unless the host ignores it (as the binary inherits an
/// ignored signal); the host's action, to put back, when it was changed.
#[cfg(unix)]
fn default_action_unless_ignored(signal: libc::c_int) -> Option<libc::sigaction> {
    // SAFETY: sigaction reads and writes plain structs; SIG_DFL installs no code.
    unsafe {
        let mut host: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut host) != 0
            || host.sa_sigaction == libc::SIG_IGN
        {
            return None;
        }
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut default.sa_mask);
        (libc::sigaction(signal, &default, std::ptr::null_mut()) == 0).then_some(host)
    }
}

/// llama.cpp's and ingle's logs go to stderr only when INGLE_LOG is set (e.g. `INGLE_LOG=debug`);
/// `ingle serve` logs its requests (`ingle::serve` at info) unless `--log-format off`.
fn init_logging(serve: Option<LogFormat>) {
    let asked = std::env::var("INGLE_LOG").ok().filter(|v| !v.is_empty());
    let filter = match (asked.as_deref(), serve) {
        (_, Some(LogFormat::Off)) => return,
        (Some("1" | "true"), _) => "info".to_string(),
        (Some(other), _) => other.to_string(),
        (None, Some(_)) => "ingle::serve=info".to_string(),
        (None, None) => return,
    };
    let logs = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter));
    if serve == Some(LogFormat::Json) {
        let _ = logs.json().flatten_event(true).try_init();
    } else {
        let _ = logs.try_init();
    }
}

fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    if let Command::SystemInfo = cli.command {
        println!("{}", serde_json::to_string_pretty(&ingle::system_info()?)?);
        return Ok(());
    }
    let mut config = match &cli.config {
        Some(path) => Config::from_file(path)?,
        None => Config::from_env()?,
    };
    if let Command::Serve {
        responses_store: Some(store),
        ..
    } = &cli.command
    {
        config.responses.store = Some(store.clone());
    }
    if let Some(dir) = &cli.models_dir {
        config.models_dir = Some(dir.clone());
    }
    let models_dir = config
        .models_dir
        .clone()
        .unwrap_or_else(ingle::config::default_models_dir);
    let mut out = std::io::stdout().lock();
    if let Command::Pull { tags, all, quiet } = cli.command {
        return pull::pull(&models_dir, tags, all, quiet, &mut out);
    }
    let client = Client::from_config(&config)?;
    // A Hugging Face reference not pulled yet is pulled first, as `ollama run` does.
    let mut cli = cli;
    match &mut cli.command {
        Command::Chat { options, .. } | Command::Complete { options } => {
            options.model = pull::ensure(&client, &models_dir, &options.model)?;
        }
        Command::Embed { model, .. }
        | Command::Speak { model, .. }
        | Command::Transcribe { model, .. } => {
            *model = pull::ensure(&client, &models_dir, model)?;
        }
        _ => {}
    }
    match cli.command {
        Command::Serve {
            host,
            port,
            api_key,
            body_limit,
            max_upload_mb,
            header_timeout,
            body_timeout,
            idle_timeout,
            write_timeout,
            max_connections,
            keep_alive,
            responses_store: _,
            models,
            preload,
            drain_timeout,
            metrics,
            public_metrics,
            log_format: _,
            allowed_hosts,
            cors_origins,
        } => {
            // An empty key would mean no key: refused rather than serving without one unnoticed
            // (an `INGLE_API_KEY=` line in an env file, a secret that did not resolve).
            if api_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
                return Err(ingle::Error::invalid(
                    "api_key",
                    "--api-key (or INGLE_API_KEY) is empty: give a key, or unset INGLE_API_KEY \
                     to serve without one",
                )
                .into());
            }
            if api_key.is_none() && cors_origins.iter().any(|o| o.trim() == "*") {
                eprintln!(
                    "ingle: warning: --cors-origin '*' without --api-key lets every web page \
                     you visit use this server"
                );
            }
            let duration = std::time::Duration::from_secs_f64;
            let options = ingle_serve::Options {
                api_key,
                body_limit,
                upload_limit: (max_upload_mb * 1024.0 * 1024.0) as usize,
                header_timeout: duration(header_timeout),
                body_timeout: duration(body_timeout),
                idle_timeout: duration(idle_timeout),
                write_timeout: duration(write_timeout),
                max_connections: max_connections as usize,
                keep_alive: keep_alive.0.map(duration),
                preload: if preload.iter().any(|m| m == "all") {
                    // Each model once: not again by its name without a namespace.
                    client
                        .models
                        .list()
                        .data
                        .into_iter()
                        .map(|m| m.id)
                        .filter(|id| client.models.retrieve(id).is_ok_and(|m| m.id == *id))
                        .collect()
                } else {
                    // By tag (a name without its namespace names the same model), and never
                    // a file's path (refused over HTTP).
                    let mut tags = Vec::new();
                    for model in preload {
                        if std::path::Path::new(&model).is_absolute() {
                            return Err(ingle::Error::invalid(
                                "preload",
                                format!("--preload takes models' tags, not files ({model}): give the file a tag in a config"),
                            )
                            .into());
                        }
                        tags.push(client.models.retrieve(&model).map_or(model, |m| m.id));
                    }
                    // `--model`s: pulled where they must be, and loaded before /ready.
                    for model in &models {
                        if std::path::Path::new(model).is_absolute() {
                            return Err(ingle::Error::invalid(
                                "model",
                                format!("--model takes a tag or a Hugging Face reference, not a file ({model}): over HTTP a model is never named by its path; give the file a tag in a config"),
                            )
                            .into());
                        }
                        let id = pull::ensure(&client, &models_dir, model)?;
                        if !tags.contains(&id) {
                            tags.push(id);
                        }
                    }
                    tags
                },
                drain_timeout: duration(drain_timeout),
                metrics,
                metrics_public: public_metrics,
                allowed_hosts,
                cors_origins,
            };
            ingle_serve::serve_until_signal(client, (host, port).into(), options, |addr| {
                eprintln!("ingle: serving the OpenAI API on http://{addr}/v1 (Ctrl-C stops; SIGTERM drains)");
            })?;
        }
        Command::Speak {
            model,
            voice,
            speed,
            format,
            output,
            text,
        } => {
            let to_stdout = output.as_os_str() == "-";
            // `-o story.wav` means wav, unless --format says otherwise.
            let format = format.or_else(|| {
                let extension = output.extension()?.to_str()?.to_ascii_lowercase();
                ingle::audio::AudioFormat::parse(&extension)
                    .ok()
                    .map(|f| f.name().to_string())
            });
            let request = SpeechRequest {
                speed,
                response_format: format,
                ..SpeechRequest::new(model, text, voice)
            };
            if to_stdout {
                if out.is_terminal() {
                    return Err("will not write audio to a terminal: give -o FILE, or pipe \
                                stdout into a player (ingle speak ... | ffplay -)"
                        .into());
                }
                for chunk in client.audio.speech.stream(&request)? {
                    out.write_all(&chunk?)?;
                    out.flush()?;
                }
            } else {
                // A file gets the exact headers of a whole response.
                let audio = client.audio.speech.create(&request)?;
                std::fs::write(&output, &audio.bytes)
                    .map_err(|e| format!("cannot write {}: {e}", output.display()))?;
                eprintln!(
                    "ingle: wrote {} ({}, {} bytes)",
                    output.display(),
                    audio.content_type,
                    audio.bytes.len()
                );
            }
        }
        Command::Transcribe {
            model,
            format,
            timestamps,
            language,
            translate,
            prompt,
            temperature,
            stream,
            file,
        } => {
            let audio = if file.as_os_str() == "-" {
                let mut bytes = Vec::new();
                std::io::stdin()
                    .lock()
                    .read_to_end(&mut bytes)
                    .map_err(|e| format!("cannot read the audio from stdin: {e}"))?;
                TranscriptionAudio::file(bytes, None)
            } else {
                let bytes = std::fs::read(&file)
                    .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
                let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
                TranscriptionAudio::file(bytes, name.as_deref())
            };
            // Timestamps are only in verbose_json: asking for them asks for it.
            let format = format.unwrap_or_else(|| {
                if timestamps.is_empty() {
                    "text"
                } else {
                    "verbose_json"
                }
                .to_string()
            });
            let request = TranscriptionRequest {
                language,
                prompt,
                temperature,
                response_format: Some(format),
                timestamp_granularities: (!timestamps.is_empty()).then_some(timestamps),
                ..TranscriptionRequest::new(model)
            };
            if stream {
                for event in client.audio.transcriptions.stream(&request, audio)? {
                    match event? {
                        TranscriptionEvent::Delta(delta) => {
                            write!(out, "{delta}")?;
                            out.flush()?;
                        }
                        TranscriptionEvent::Done { .. } => writeln!(out)?,
                    }
                }
            } else {
                let response = if translate {
                    client.audio.translations.create(&request, audio)?
                } else {
                    client.audio.transcriptions.create(&request, audio)?
                };
                out.write_all(response.body.as_bytes())?;
                if !response.body.ends_with('\n') {
                    writeln!(out)?;
                }
            }
        }
        Command::SystemInfo => {} // answered above, before a client is made
        Command::Models { json } => pull::models(&client, &models_dir, json, &mut out)?,
        Command::Pull { .. } => {} // answered above, before a client is made
        Command::Embed {
            model,
            dimensions,
            encoding_format,
            texts,
        } => {
            let request = EmbeddingRequest {
                dimensions,
                encoding_format,
                ..EmbeddingRequest::new(model, texts)
            };
            let response = client.embeddings.create(&request)?;
            writeln!(out, "{}", serde_json::to_string(&response)?)?;
        }
        Command::Chat { system, options } => {
            let mut messages: Vec<ChatMessage> =
                system.into_iter().map(ChatMessage::system).collect();
            messages.push(ChatMessage::user(&options.prompt));
            let request = ChatCompletionRequest {
                max_tokens: options.max_tokens,
                temperature: options.temperature,
                top_p: options.top_p,
                seed: options.seed,
                stop: options.stop(),
                ..ChatCompletionRequest::new(&options.model, messages)
            };
            if options.json {
                let completion = client.chat.completions.create(&request)?;
                writeln!(out, "{}", serde_json::to_string_pretty(&completion)?)?;
            } else {
                for chunk in client.chat.completions.stream(&request)? {
                    for choice in chunk?.choices {
                        write!(out, "{}", choice.delta.content.unwrap_or_default())?;
                        out.flush()?;
                    }
                }
                writeln!(out)?;
            }
        }
        Command::Complete { options } => {
            let request = CompletionRequest {
                max_tokens: options.max_tokens,
                temperature: options.temperature,
                top_p: options.top_p,
                seed: options.seed,
                stop: options.stop(),
                ..CompletionRequest::new(&options.model, &options.prompt)
            };
            if options.json {
                let completion = client.completions.create(&request)?;
                writeln!(out, "{}", serde_json::to_string_pretty(&completion)?)?;
            } else {
                for chunk in client.completions.stream(&request)? {
                    for choice in chunk?.choices {
                        write!(out, "{}", choice.text)?;
                        out.flush()?;
                    }
                }
                writeln!(out)?;
            }
        }
    }
    Ok(())
}

/// An upload limit flag: megabytes (MiB), more than 0 and at most 4096.
/// A model by tag, or a GGUF file by its path: a relative one that is there is made absolute
/// (the library takes a model file by its absolute path).
fn model_name(text: &str) -> Result<String, String> {
    let path = std::path::Path::new(text);
    let gguf = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
    if gguf && !path.is_absolute() && path.is_file() {
        return std::path::absolute(path)
            .map(|p| p.display().to_string())
            .map_err(|e| format!("cannot make {text} an absolute path: {e}"));
    }
    Ok(text.to_string())
}

fn allowed_host(text: &str) -> Result<String, String> {
    ingle_serve::check_allowed_host(text).map(|()| text.to_string())
}

fn cors_origin(text: &str) -> Result<String, String> {
    ingle_serve::check_cors_origin(text).map(|()| text.to_string())
}

fn megabytes(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of megabytes"))?;
    if value.is_finite() && value > 0.0 && value <= 4096.0 {
        Ok(value)
    } else {
        Err(format!(
            "{text} MB is out of range: give more than 0 and at most 4096"
        ))
    }
}

/// A timeout flag: seconds, more than 0 and at most a day.
fn seconds(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if value.is_finite() && value > 0.0 && value <= 86_400.0 {
        Ok(value)
    } else {
        Err(format!(
            "{text} s is out of range: give more than 0 and at most 86400"
        ))
    }
}
