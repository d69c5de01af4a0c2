//! Phonemes from espeak-ng, the library Piper voices were trained on.
//!
//! espeak-ng is GPL-3.0, so ingle does not link it: the system library (Debian `libespeak-ng1`
//! and its `espeak-ng-data`) is opened at run time, when a speech predictor first loads. A
//! missing library or data is a model error naming the packages to install (see
//! docs/architecture.md, "Speech").
//!
//! espeak-ng keeps one global state (voice, clause reader), so every call holds one
//! process-wide lock; phonemizing a sentence takes well under a millisecond, against tens of
//! milliseconds to synthesise it.

use crate::error::ErrorCode;
use crate::error::{Error, Result};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Mutex, PoisonError};

/// Where to get espeak-ng, for error messages.
pub const INSTALL_HINT: &str = "install espeak-ng: `apt install libespeak-ng1 espeak-ng-data` on \
     Debian/Ubuntu (scripts/setup does it), `brew install espeak-ng` on macOS";

/// The names the library goes by; `INGLE_ESPEAK_LIBRARY` picks another file.
const LIBRARY_NAMES: &[&str] = &[
    "libespeak-ng.so.1",
    "libespeak-ng.so",
    "libespeak-ng.1.dylib",
    "libespeak-ng.dylib",
];

// speak_lib.h / espeak_ng.h (stable since espeak-ng 1.49).
const ENS_OK: c_int = 0;
const ENOUTPUT_MODE_SYNCHRONOUS: c_int = 0x0001;
const ESPEAK_CHARS_UTF8: c_int = 1;
/// Bit 1 of `phonememode`: IPA phoneme names (what Piper's `phoneme_id_map` holds).
const ESPEAK_PHONEMES_IPA: c_int = 0x02;

type InitializePath = unsafe extern "C" fn(*const c_char);
type Initialize = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
type InitializeOutput = unsafe extern "C" fn(c_int, c_int, *const c_char) -> c_int;
type StatusMessage = unsafe extern "C" fn(c_int, *mut c_char, usize);
type ClearErrorContext = unsafe extern "C" fn(*mut *mut c_void);
type SetVoiceByName = unsafe extern "C" fn(*const c_char) -> c_int;
type TextToPhonemes = unsafe extern "C" fn(*mut *const c_void, c_int, c_int) -> *const c_char;

/// The loaded library and the voice it is set to.
struct Espeak {
    // Kept loaded for the life of the process: the functions below point into it.
    _library: libloading::Library,
    set_voice_by_name: SetVoiceByName,
    text_to_phonemes: TextToPhonemes,
    voice: Option<String>,
}

static ESPEAK: Mutex<Option<Espeak>> = Mutex::new(None);

/// How a clause ended: the punctuation Piper appends to its phonemes (`, ` `: ` `; ` get a
/// space after them) and whether a sentence ends there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminator {
    pub punctuation: &'static str,
    pub ends_sentence: bool,
}

const fn ends(punctuation: &'static str, ends_sentence: bool) -> Terminator {
    Terminator {
        punctuation,
        ends_sentence,
    }
}

/// One clause: its IPA phonemes and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    pub phonemes: String,
    pub terminator: Terminator,
}

/// Loads espeak-ng (once per process) and checks that `voice` exists.
pub fn load(voice: &str) -> Result<()> {
    let mut espeak = ESPEAK.lock().unwrap_or_else(PoisonError::into_inner);
    let espeak = match espeak.as_mut() {
        Some(loaded) => loaded,
        None => espeak.insert(open()?),
    };
    espeak.set_voice(voice)
}

/// The clauses of `text` in `voice` (an espeak-ng voice name such as `en-us`).
pub fn clauses(text: &str, voice: &str) -> Result<Vec<Clause>> {
    let mut espeak = ESPEAK.lock().unwrap_or_else(PoisonError::into_inner);
    let espeak = match espeak.as_mut() {
        Some(loaded) => loaded,
        None => espeak.insert(open()?),
    };
    espeak.set_voice(voice)?;
    // A NUL would end the text early; it means nothing in speech.
    let text = CString::new(text.replace('\0', " ")).expect("NUL bytes were replaced");
    let bytes = text.as_bytes();
    let base = text.as_ptr();
    let mut cursor: *const c_void = base.cast();
    let mut start = 0; // where the current clause's text begins
    let mut clauses = Vec::new();
    while !cursor.is_null() {
        // SAFETY: `cursor` points into `text`, which is NUL-terminated and outlives the call;
        // espeak-ng advances it within the text, or sets it to NULL once it read the NUL.
        let phonemes = unsafe {
            (espeak.text_to_phonemes)(&mut cursor, ESPEAK_CHARS_UTF8, ESPEAK_PHONEMES_IPA)
        };
        let phonemes = if phonemes.is_null() {
            String::new()
        } else {
            // SAFETY: espeak-ng returns a NUL-terminated string valid until the next call.
            unsafe { CStr::from_ptr(phonemes) }
                .to_string_lossy()
                .into_owned()
        };
        let (end, at_end) = if cursor.is_null() {
            (bytes.len(), true)
        } else {
            // espeak-ng has read one character past the clause (the next clause's first):
            // the clause ends where that character starts.
            let after = (cursor as usize - base as usize).min(bytes.len());
            let mut k = after.saturating_sub(1);
            while k > start && (bytes[k] & 0b1100_0000) == 0b1000_0000 {
                k -= 1;
            }
            (k.max(start), false)
        };
        let clause = String::from_utf8_lossy(&bytes[start..end]);
        clauses.push(Clause {
            phonemes: without_language_switches(&phonemes),
            terminator: terminator_of(&clause, at_end),
        });
        start = end;
    }
    Ok(clauses)
}

/// How the clause whose source text is `clause` ended, as espeak-ng 1.52's
/// `espeak_TextToPhonemesWithTerminator` (what piper-tts calls) reports it. Debian 12 has 1.51,
/// which does not report it; but it stops reading a clause at the punctuation that ends it,
/// so that punctuation is the clause's last (checked against piper-tts 1.8 on 1258 clauses).
fn terminator_of(clause: &str, at_end: bool) -> Terminator {
    let trimmed = clause.trim_end();
    // A blank line ends a paragraph: a sentence, without punctuation.
    if clause[trimmed.len()..].matches('\n').count() >= 2 {
        return ends("", true);
    }
    let punctuation = |c: char| {
        ".?!,:;\u{2014}\u{2013}\u{2026}\u{3002}\u{ff1f}\u{ff01}\u{3001}\u{ff0c}\u{ff1a}".contains(c)
    };
    let run_start = trimmed
        .char_indices()
        .rev()
        .take_while(|(_, c)| punctuation(*c))
        .last()
        .map_or(trimmed.len(), |(i, _)| i);
    let run = &trimmed[run_start..];
    if run.ends_with("...") || run.ends_with('\u{2026}') {
        return ends("", false); // an ellipsis does not end the clause's sentence
    }
    // `?!` and `!!` count as their first `?` or `!`.
    let mark = run
        .chars()
        .find(|c| "?!\u{ff1f}\u{ff01}".contains(*c))
        .or_else(|| run.chars().last());
    match mark {
        Some('.') => ends(".", true),
        Some('?') => ends("?", true),
        Some('!') => ends("!", true),
        Some(',') => ends(", ", false),
        Some(':') => ends(": ", false),
        Some(';' | '\u{2014}' | '\u{2013}') => ends("; ", false),
        Some('\u{3002}' | '\u{ff1f}' | '\u{ff01}') => ends("", true),
        Some(_) => ends("", false),
        // No punctuation: the end of the text, or a clause espeak cut for its length.
        None => ends("", at_end),
    }
}

fn open() -> Result<Espeak> {
    let names: Vec<String> = match std::env::var("INGLE_ESPEAK_LIBRARY") {
        Ok(path) if !path.is_empty() => vec![path],
        _ => LIBRARY_NAMES.iter().map(|s| s.to_string()).collect(),
    };
    let mut problems = Vec::new();
    let library = names.iter().find_map(|name| {
        // SAFETY: loading espeak-ng runs no initialisation code with preconditions.
        match unsafe { libloading::Library::new(name) } {
            Ok(library) => Some(library),
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        }
    });
    let Some(library) = library else {
        return Err(Error::model(format!(
            "Speech needs the espeak-ng library, which is not installed ({}); {INSTALL_HINT}",
            problems.first().map_or("", String::as_str)
        ))
        .with_code(ErrorCode::EspeakNgMissing));
    };
    macro_rules! symbol {
        ($name:literal, $ty:ty) => {
            // SAFETY: the signature is the one espeak-ng's headers declare for this symbol.
            *unsafe { library.get::<$ty>(concat!($name, "\0").as_bytes()) }.map_err(|e| {
                Error::model(format!(
                    "The espeak-ng library lacks {} ({e}); it is older than 1.49: {INSTALL_HINT}",
                    $name
                ))
                .with_code(ErrorCode::EspeakNgMissing)
            })?
        };
    }
    let initialize_path = symbol!("espeak_ng_InitializePath", InitializePath);
    let initialize = symbol!("espeak_ng_Initialize", Initialize);
    let initialize_output = symbol!("espeak_ng_InitializeOutput", InitializeOutput);
    let status_message = symbol!("espeak_ng_GetStatusCodeMessage", StatusMessage);
    let clear_error_context = symbol!("espeak_ng_ClearErrorContext", ClearErrorContext);
    let set_voice_by_name = symbol!("espeak_SetVoiceByName", SetVoiceByName);
    let text_to_phonemes = symbol!("espeak_TextToPhonemes", TextToPhonemes);
    let message = |status: c_int| {
        let mut buffer = [0 as c_char; 512];
        // SAFETY: the buffer and its length are given together; the result is NUL-terminated.
        unsafe {
            status_message(status, buffer.as_mut_ptr(), buffer.len());
            CStr::from_ptr(buffer.as_ptr())
                .to_string_lossy()
                .into_owned()
        }
    };
    // The data directory: $ESPEAK_DATA_PATH, else the one the library was built for.
    // (`espeak_Initialize` would exit the process if it is missing; these calls return.)
    let mut context: *mut c_void = std::ptr::null_mut();
    let status = unsafe {
        initialize_path(std::ptr::null());
        initialize(&mut context)
    };
    if status != ENS_OK {
        unsafe { clear_error_context(&mut context) };
        return Err(Error::model(format!(
            "espeak-ng cannot start: {} (its data is missing or unreadable); {INSTALL_HINT}, or \
             point ESPEAK_DATA_PATH at an espeak-ng-data directory",
            message(status)
        ))
        .with_code(ErrorCode::EspeakNgMissing));
    }
    let status = unsafe { initialize_output(ENOUTPUT_MODE_SYNCHRONOUS, 0, std::ptr::null()) };
    if status != ENS_OK {
        return Err(Error::model(format!(
            "espeak-ng cannot start: {}",
            message(status)
        )));
    }
    Ok(Espeak {
        _library: library,
        set_voice_by_name,
        text_to_phonemes,
        voice: None,
    })
}

impl Espeak {
    fn set_voice(&mut self, voice: &str) -> Result<()> {
        if self.voice.as_deref() == Some(voice) {
            return Ok(());
        }
        let name = CString::new(voice)
            .map_err(|_| Error::model("An espeak-ng voice name contains a NUL byte"))?;
        // SAFETY: a NUL-terminated name; espeak-ng copies what it needs.
        if unsafe { (self.set_voice_by_name)(name.as_ptr()) } != ENS_OK {
            return Err(Error::model(format!(
                "espeak-ng has no voice `{}` (is espeak-ng-data complete?); {INSTALL_HINT}",
                crate::error::shown(voice)
            ))
            .with_code(ErrorCode::EspeakNgMissing));
        }
        self.voice = Some(voice.to_string());
        Ok(())
    }
}

/// Drops espeak-ng's language-switch marks, `(fr)` and the like (as Piper does).
fn without_language_switches(phonemes: &str) -> String {
    let mut out = String::with_capacity(phonemes.len());
    let mut rest = phonemes;
    while let Some(open) = rest.find('(') {
        match rest[open..].find(')') {
            Some(close) if close > 1 => {
                out.push_str(&rest[..open]);
                rest = &rest[open + close + 1..];
            }
            _ => break,
        }
    }
    out.push_str(rest);
    out
}

// SAFETY: the library handle and function pointers are only used under the `ESPEAK` lock.
unsafe impl Send for Espeak {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminators_are_the_clauses_last_punctuation() {
        assert_eq!(terminator_of("Hello there. ", false), ends(".", true));
        assert_eq!(terminator_of("Wait, ", false), ends(", ", false));
        assert_eq!(terminator_of("what?! ", false), ends("?", true));
        assert_eq!(terminator_of("so\u{2014}", false), ends("; ", false));
        assert_eq!(terminator_of("Wait... ", false), ends("", false));
        assert_eq!(terminator_of("A title\n\n", false), ends("", true));
        assert_eq!(terminator_of("no", true), ends("", true));
    }

    #[test]
    fn language_switches_are_dropped() {
        assert_eq!(without_language_switches("(en)hˈɛloʊ(fr)bɔ̃"), "hˈɛloʊbɔ̃");
    }
}
