//! `ingle pull` and `ingle models`: the catalog from the command line.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use ingle::pull::{PullEvent, PullStatus, Puller};
use ingle::Client;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::Path;

/// Sizes as people read them: `98.4 MB`.
pub fn human(bytes: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < units.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

/// Bars on stderr, one per file, when stderr is a terminal; nothing otherwise.
struct Bars {
    multi: MultiProgress,
    bars: HashMap<String, ProgressBar>,
}

impl Bars {
    fn new(quiet: bool) -> Bars {
        let target = if quiet || !std::io::stderr().is_terminal() {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        Bars {
            multi: MultiProgress::with_draw_target(target),
            bars: HashMap::new(),
        }
    }

    fn on(&mut self, event: &PullEvent) {
        let Some(file) = &event.file else { return };
        let bar = self.bars.entry(file.clone()).or_insert_with(|| {
            let bar = self.multi.add(ProgressBar::new(event.total));
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg:<10} {prefix:<40!} [{bar:30}] {bytes:>10}/{total_bytes:<10} {binary_bytes_per_sec:>12} {eta:>4}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_prefix(file.clone());
            bar
        });
        let message = match event.status {
            PullStatus::Waiting => "waiting",
            PullStatus::Verifying => "verifying",
            PullStatus::Downloading => "pulling",
            PullStatus::Success => "done",
        };
        if bar.message() != message {
            bar.set_message(message);
            bar.reset_eta();
        }
        bar.set_length(event.total);
        bar.set_position(event.completed);
        if event.completed == event.total && event.total > 0 {
            bar.set_message("done");
            bar.tick();
        }
    }
}

/// `ingle pull`: each tag (the default model if none; every entry with `all`).
pub fn pull(
    models_dir: &Path,
    tags: Vec<String>,
    all: bool,
    quiet: bool,
    out: &mut dyn Write,
) -> Result<(), Box<dyn std::error::Error>> {
    let puller = Puller::new(models_dir)?;
    let tags = if all {
        puller
            .catalog()
            .default_tags()
            .into_iter()
            .map(String::from)
            .collect()
    } else if tags.is_empty() {
        vec![ingle::DEFAULT_MODEL.to_string()]
    } else {
        tags
    };
    for tag in &tags {
        pull_one(&puller, tag, quiet, out)?;
    }
    Ok(())
}

/// Pulls one model (a catalog tag or a Hugging Face reference) with progress bars, then says
/// what it did.
fn pull_one(
    puller: &Puller,
    tag: &str,
    quiet: bool,
    out: &mut dyn Write,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut bars = Bars::new(quiet);
    let report = puller.pull(tag, &mut |event| {
        bars.on(event);
        true
    });
    for bar in bars.bars.values() {
        bar.finish();
    }
    let report = report?;
    let size: u64 = report.files.iter().map(|f| f.size).sum();
    if !quiet {
        // A Hub reference is named as it is served (with the quant the pull picked).
        let name = &report.tag;
        let place = report.models_dir.display();
        if report.downloaded_bytes > 0 || report.files.iter().any(|f| f.fetched) {
            writeln!(
                out,
                "pulled {name}: {} ({} downloaded), verified, in {place}",
                human(size),
                human(report.downloaded_bytes),
            )?;
        } else {
            writeln!(
                out,
                "{name} is up to date: {}, verified, in {place}",
                human(size)
            )?;
        }
        for note in &report.notes {
            writeln!(out, "note: {note}")?;
        }
    }
    Ok(())
}

/// Whether `tag` names a model of the Hugging Face cache.
fn hub(tag: &str) -> bool {
    ingle::pull::hub::HubRef::looks_like(tag)
}

/// Before `ingle chat --model hf.co/...` (and the other commands, and `serve --model`): a
/// Hugging Face reference that is not in the cache yet is pulled first, as `ollama run` does.
/// Returns the model's name as the client serves it.
pub fn ensure(
    client: &Client,
    models_dir: &Path,
    model: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    if !ingle::pull::hub::HubRef::looks_like(model) {
        return Ok(model.to_string());
    }
    match client.models.retrieve(model) {
        Ok(found) => return Ok(found.id),
        Err(e) if e.code != Some(ingle::ErrorCode::ModelNotFound) => return Err(e.into()),
        Err(_) => {}
    }
    let puller = Puller::new(models_dir)?;
    pull_one(&puller, model, false, &mut std::io::stderr())?;
    Ok(client.models.retrieve(model)?.id)
}

/// `ingle models`: the catalog (size, whether it is downloaded) and the config's own
/// predictors.
pub fn models(
    client: &Client,
    models_dir: &Path,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), Box<dyn std::error::Error>> {
    let puller = Puller::new(models_dir)?;
    let catalog = puller.list();
    let registered: Vec<String> = client
        .models
        .list()
        .data
        .into_iter()
        .map(|m| m.id)
        // Each model once, by its tag (not again by its name without a namespace).
        .filter(|id| client.models.retrieve(id).is_ok_and(|m| m.id == *id))
        .collect();
    if json {
        let mut rows: Vec<serde_json::Value> = catalog
            .iter()
            .map(|entry| {
                let mut row = serde_json::to_value(entry).unwrap_or_default();
                row["configured"] = registered.contains(&entry.tag).into();
                row
            })
            .collect();
        for tag in registered
            .iter()
            .filter(|t| !catalog.iter().any(|c| &c.tag == *t))
        {
            let kind = if hub(tag) { "hugging-face" } else { "config" };
            rows.push(serde_json::json!({"tag": tag, "kind": kind, "configured": true}));
        }
        let doc = serde_json::json!({"models_dir": models_dir, "models": rows});
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    let width = catalog
        .iter()
        .map(|c| c.tag.len())
        .chain(registered.iter().map(String::len))
        .max()
        .unwrap_or(3)
        .max(3);
    writeln!(
        out,
        "{:<width$}  {:<13}  {:>9}  STATUS",
        "TAG", "KIND", "SIZE"
    )?;
    for entry in &catalog {
        let status = match (entry.cached, entry.optional) {
            (true, _) => "downloaded",
            (false, false) => "not downloaded: ingle pull",
            (false, true) => "optional, not downloaded: ingle pull",
        };
        let status = if entry.cached {
            status.to_string()
        } else {
            format!("{status} {}", entry.tag)
        };
        writeln!(
            out,
            "{:<width$}  {:<13}  {:>9}  {status}",
            entry.tag,
            entry.kind,
            human(entry.size)
        )?;
    }
    for tag in registered
        .iter()
        .filter(|t| !catalog.iter().any(|c| &c.tag == *t))
    {
        let (kind, status) = if hub(tag) {
            ("hugging-face", "in the Hugging Face cache")
        } else if std::path::Path::new(tag).is_absolute() {
            ("file", "a model file")
        } else {
            ("config", "from the config")
        };
        writeln!(out, "{tag:<width$}  {kind:<13}  {:>9}  {status}", "-")?;
    }
    writeln!(out, "models directory: {}", models_dir.display())?;
    writeln!(
        out,
        "Hugging Face cache: {}",
        ingle::pull::hub::HubSettings::from_env().cache.display()
    )?;
    Ok(())
}
