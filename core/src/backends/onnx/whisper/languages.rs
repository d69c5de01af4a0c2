//! Whisper's languages: the codes of its language tokens (`<|fr|>`), their English names (what
//! OpenAI's `verbose_json` reports as `language`) and the other names people use, as
//! openai-whisper's `tokenizer.py` lists them. A model knows the languages whose tokens it has
//! (99 for most multilingual checkpoints, 100 from large-v3 on, which adds Cantonese); an
//! English-only (`.en`) model knows English alone.

use crate::error::{shown, Error, Result};

/// (code, English name), in the order of the language tokens.
pub const LANGUAGES: [(&str, &str); 100] = [
    ("en", "english"),
    ("zh", "chinese"),
    ("de", "german"),
    ("es", "spanish"),
    ("ru", "russian"),
    ("ko", "korean"),
    ("fr", "french"),
    ("ja", "japanese"),
    ("pt", "portuguese"),
    ("tr", "turkish"),
    ("pl", "polish"),
    ("ca", "catalan"),
    ("nl", "dutch"),
    ("ar", "arabic"),
    ("sv", "swedish"),
    ("it", "italian"),
    ("id", "indonesian"),
    ("hi", "hindi"),
    ("fi", "finnish"),
    ("vi", "vietnamese"),
    ("he", "hebrew"),
    ("uk", "ukrainian"),
    ("el", "greek"),
    ("ms", "malay"),
    ("cs", "czech"),
    ("ro", "romanian"),
    ("da", "danish"),
    ("hu", "hungarian"),
    ("ta", "tamil"),
    ("no", "norwegian"),
    ("th", "thai"),
    ("ur", "urdu"),
    ("hr", "croatian"),
    ("bg", "bulgarian"),
    ("lt", "lithuanian"),
    ("la", "latin"),
    ("mi", "maori"),
    ("ml", "malayalam"),
    ("cy", "welsh"),
    ("sk", "slovak"),
    ("te", "telugu"),
    ("fa", "persian"),
    ("lv", "latvian"),
    ("bn", "bengali"),
    ("sr", "serbian"),
    ("az", "azerbaijani"),
    ("sl", "slovenian"),
    ("kn", "kannada"),
    ("et", "estonian"),
    ("mk", "macedonian"),
    ("br", "breton"),
    ("eu", "basque"),
    ("is", "icelandic"),
    ("hy", "armenian"),
    ("ne", "nepali"),
    ("mn", "mongolian"),
    ("bs", "bosnian"),
    ("kk", "kazakh"),
    ("sq", "albanian"),
    ("sw", "swahili"),
    ("gl", "galician"),
    ("mr", "marathi"),
    ("pa", "punjabi"),
    ("si", "sinhala"),
    ("km", "khmer"),
    ("sn", "shona"),
    ("yo", "yoruba"),
    ("so", "somali"),
    ("af", "afrikaans"),
    ("oc", "occitan"),
    ("ka", "georgian"),
    ("be", "belarusian"),
    ("tg", "tajik"),
    ("sd", "sindhi"),
    ("gu", "gujarati"),
    ("am", "amharic"),
    ("yi", "yiddish"),
    ("lo", "lao"),
    ("uz", "uzbek"),
    ("fo", "faroese"),
    ("ht", "haitian creole"),
    ("ps", "pashto"),
    ("tk", "turkmen"),
    ("nn", "nynorsk"),
    ("mt", "maltese"),
    ("sa", "sanskrit"),
    ("lb", "luxembourgish"),
    ("my", "myanmar"),
    ("bo", "tibetan"),
    ("tl", "tagalog"),
    ("mg", "malagasy"),
    ("as", "assamese"),
    ("tt", "tatar"),
    ("haw", "hawaiian"),
    ("ln", "lingala"),
    ("ha", "hausa"),
    ("ba", "bashkir"),
    ("jw", "javanese"),
    ("su", "sundanese"),
    ("yue", "cantonese"),
];

/// Other names for a language (openai-whisper's `TO_LANGUAGE_CODE`), and ISO codes Whisper
/// spells its own way.
const ALIASES: [(&str, &str); 14] = [
    ("burmese", "my"),
    ("valencian", "ca"),
    ("flemish", "nl"),
    ("haitian", "ht"),
    ("letzeburgesch", "lb"),
    ("pushto", "ps"),
    ("panjabi", "pa"),
    ("moldavian", "ro"),
    ("moldovan", "ro"),
    ("sinhalese", "si"),
    ("castilian", "es"),
    ("mandarin", "zh"),
    ("jv", "jw"),
    ("javanese", "jw"),
];

/// The English name of the language whose code is `code` (`fr` → `french`); the code itself
/// for a code Whisper does not list.
pub fn name(code: &str) -> &str {
    LANGUAGES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or(code, |(_, name)| name)
}

/// The code of a language given as a code or a name, in any case (`fr`, `French`,
/// `castilian`); `None` when Whisper does not know it.
pub fn code(language: &str) -> Option<&'static str> {
    let wanted = language.trim().to_ascii_lowercase();
    LANGUAGES
        .iter()
        .find(|(c, n)| *c == wanted || *n == wanted)
        .map(|(c, _)| *c)
        .or_else(|| {
            ALIASES
                .iter()
                .find(|(alias, _)| *alias == wanted)
                .map(|(_, c)| *c)
        })
}

/// The languages a model knows: each language token's id and code.
#[derive(Debug, Clone, Default)]
pub struct ModelLanguages {
    /// (token id, code), in token order; empty for an English-only model.
    pub tokens: Vec<(u32, String)>,
}

impl ModelLanguages {
    /// Whether the model is multilingual.
    pub fn multilingual(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The token of `code`, if the model knows the language.
    pub fn token(&self, code: &str) -> Option<u32> {
        self.tokens
            .iter()
            .find(|(_, c)| c == code)
            .map(|(token, _)| *token)
    }

    /// `language` (a code or a name, as a request gives it) as the code of a language this
    /// model knows; an invalid-request error naming `param` otherwise.
    pub fn resolve(&self, language: &str, param: &str) -> Result<&'static str> {
        let code = code(language).ok_or_else(|| {
            // A locale (`fr-FR`, `pt_BR`, what a browser's `navigator.language` gives): its
            // language's code is what Whisper takes.
            let primary = language.trim().split(['-', '_']).next().unwrap_or("");
            let hint = match code(primary) {
                Some(code) if primary.len() < language.trim().len() => {
                    format!("; for `{}`, give `{code}`", shown(language))
                }
                _ => String::new(),
            };
            Error::invalid(
                param,
                format!(
                    "`{param}` is `{}`, which is not a language Whisper knows: give an ISO-639-1 \
                     code such as `fr` or an English name such as `french`{hint}",
                    shown(language)
                ),
            )
        })?;
        if !self.multilingual() {
            if code == "en" {
                return Ok(code);
            }
            return Err(Error::invalid(
                param,
                format!(
                    "`{param}` is `{}`, but this Whisper model is English-only (a `.en` model): \
                     use `en` (or leave `{param}` out), or a multilingual model such as \
                     `@local/whisper-base`",
                    shown(language)
                ),
            ));
        }
        if self.token(code).is_none() {
            return Err(Error::invalid(
                param,
                format!(
                    "`{param}` is `{}` ({}), which this Whisper model does not know: it knows \
                     {} languages",
                    shown(language),
                    name(code),
                    self.tokens.len()
                ),
            ));
        }
        Ok(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_resolve_either_way() {
        assert_eq!(code("fr"), Some("fr"));
        assert_eq!(code("French"), Some("fr"));
        assert_eq!(code(" castilian "), Some("es"));
        assert_eq!(code("haitian creole"), Some("ht"));
        assert_eq!(code("klingon"), None);
        assert_eq!(name("de"), "german");
        assert_eq!(name("xx"), "xx");
    }

    #[test]
    fn an_english_only_model_takes_english_alone() {
        let english = ModelLanguages::default();
        assert_eq!(english.resolve("English", "language").unwrap(), "en");
        let error = english.resolve("fr", "language").unwrap_err();
        assert_eq!(error.param.as_deref(), Some("language"));
        assert!(error.message.contains("English-only"), "{}", error.message);
        let multilingual = ModelLanguages {
            tokens: LANGUAGES[..99]
                .iter()
                .enumerate()
                .map(|(i, (c, _))| (50259 + i as u32, c.to_string()))
                .collect(),
        };
        assert_eq!(multilingual.resolve("german", "language").unwrap(), "de");
        assert_eq!(multilingual.token("de"), Some(50261));
        // Cantonese came with large-v3: a 99-language model does not know it.
        let error = multilingual.resolve("yue", "language").unwrap_err();
        assert!(error.message.contains("does not know"), "{}", error.message);
        assert!(multilingual.resolve("xx", "language").is_err());
    }
}
