//! JSON schemas and tool calls as llguidance grammars: what a request's `response_format` and
//! `tools` become for constrained decoding (`backends::llama::constrain` compiles them for a
//! model). No model here, so the conversion is fuzzed on its own (fuzz/).

use crate::chat::tool_calls::ToolFormat;
use crate::error::{shown, Error, Result};
use llguidance::api::TopLevelGrammar;
use serde_json::{json, Value as Json};

/// The first line of an llguidance error (the rest is a dump of the parser's state).
pub fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text).trim()
}

/// How constrained JSON is written: on one line, `{"a": 1, "b": [2, 3]}` (the separators of
/// Python's `json.dumps`, which the models saw most), no other whitespace between tokens.
/// llguidance allows any run of whitespace by default: a small model, greedy, fills
/// `max_tokens` with spaces after `{"a":`, and even bounded runs (24 characters, until
/// 2026-11) cost a 10-field extraction on Qwen2.5-Coder-0.5B 152 tokens where 87 say the same
/// (docs/tools.md, "One line of JSON"). Strings keep whatever whitespace they hold.
pub const JSON_ITEM_SEPARATOR: &str = ", ";
/// See [`JSON_ITEM_SEPARATOR`].
pub const JSON_KEY_SEPARATOR: &str = ": ";

/// The largest magnitude a number without bounds of its own may take: 15 digits (below 2^53,
/// so exact as the f64 llguidance reads bounds into). llguidance leaves digits unbounded, and
/// greedy, a small model asked for a population writes `14000000000000000…` until `max_tokens`;
/// llama.cpp's own converter bounds the integer part likewise (16 digits).
const NUMBER_BOUND: i64 = 999_999_999_999_999;

/// Keywords whose value is data, not a schema.
const DATA_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];
/// Keywords whose value maps names (any name: a property called `default` too) to schemas.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
];

/// Calls `f` on every schema object in `schema`, itself first: values of data keywords are
/// skipped, every value of a name-to-schema map is visited whatever its name.
fn for_each_schema(schema: &mut Json, f: &mut dyn FnMut(&mut serde_json::Map<String, Json>)) {
    match schema {
        Json::Object(object) => {
            f(object);
            for (key, value) in object.iter_mut() {
                let key = key.as_str();
                if DATA_KEYWORDS.contains(&key) {
                    continue;
                }
                match value {
                    Json::Object(map) if SCHEMA_MAPS.contains(&key) => {
                        map.values_mut().for_each(|v| for_each_schema(v, f))
                    }
                    value => for_each_schema(value, f),
                }
            }
        }
        Json::Array(items) => items.iter_mut().for_each(|v| for_each_schema(v, f)),
        _ => {}
    }
}

/// Gives every `integer` and `number` schema in `schema` the bounds it lacks (±[`NUMBER_BOUND`]),
/// which bounds the digits of its integer part. Values (`const`, `enum`, `default`, `examples`)
/// are data, not schemas, and are left alone.
fn bound_numbers(schema: &mut Json) {
    for_each_schema(schema, &mut |object| {
        let numeric = |t: &Json| matches!(t.as_str(), Some("integer" | "number"));
        let is_numeric = match object.get("type") {
            Some(Json::Array(types)) => types.iter().any(numeric),
            Some(t) => numeric(t),
            None => false,
        };
        if is_numeric {
            // The given bound, if any (a bound beyond ours keeps the other side open).
            let given = |keys: [&str; 2]| keys.iter().find_map(|k| object.get(*k)?.as_f64());
            let (low, high) = (
                given(["minimum", "exclusiveMinimum"]),
                given(["maximum", "exclusiveMaximum"]),
            );
            let bound = NUMBER_BOUND as f64;
            if low.is_none() && high.is_none_or(|h| h >= -bound) {
                object.insert("minimum".into(), json!(-NUMBER_BOUND));
            }
            if high.is_none() && low.is_none_or(|l| l <= bound) {
                object.insert("maximum".into(), json!(NUMBER_BOUND));
            }
        }
    });
}

/// Keywords that combine a schema with others: an object that uses one beside its `properties`
/// gets more properties from them, and their members are parts of a whole.
const COMBINERS: [&str; 4] = ["allOf", "anyOf", "oneOf", "$ref"];

/// Closes every object schema that lists its `properties` and says nothing of others
/// (`additionalProperties`, `unevaluatedProperties`, `patternProperties`): the output holds the
/// listed properties only, as vLLM's default (xgrammar's strict mode) does. A schema describes
/// the output wanted; left open, a small model appends keys of its own until `max_tokens`
/// (SmolLM2 asked for `{name, age}` went on with `gender`, `occupation`, `race`...). An object
/// that says `additionalProperties` (true, or a schema) keeps what it says; an object without
/// `properties` (`{"type": "object"}`, a free-form dict) stays open. What is combined is left
/// open, since each part lists only some of the properties of the whole: an object with
/// `allOf`, `anyOf`, `oneOf` or `$ref` beside its `properties`, and its parts; the members of
/// any `allOf`; the `$defs` such parts point to. The alternatives of an `anyOf` or `oneOf`
/// alone (a union of models) are whole objects, and closed.
fn close_objects(schema: &mut Json) {
    /// Whether `object` lists properties and combines them with other schemas.
    fn mixes(object: &serde_json::Map<String, Json>) -> bool {
        object.get("properties").is_some_and(Json::is_object)
            && COMBINERS.iter().any(|k| object.contains_key(*k))
    }
    /// Whether the members under `key` are parts of a whole, in a schema that is one itself
    /// (`part`) or mixes: an `allOf` of more than one (one alone is the schema it points to),
    /// and any combination where there is more to the whole.
    fn members_are_parts(key: &str, members: usize, mixing: bool, part: bool) -> bool {
        match key {
            "allOf" => members > 1 || mixing || part,
            "anyOf" | "oneOf" => mixing || part,
            _ => false,
        }
    }
    fn pointer(at: &str, key: &str, name: &str) -> String {
        format!("{at}/{key}/{}", name.replace('~', "~0").replace('/', "~1"))
    }
    /// Adds to `open` the local `$ref`s of the parts in `schema` (a part's, or a mixing
    /// object's, own `$ref` points to a part); the `$defs` in `open` are parts themselves.
    fn parts(schema: &Json, part: bool, at: &str, open: &mut Vec<String>) {
        match schema {
            Json::Object(object) => {
                let mixing = mixes(object);
                if part || mixing {
                    if let Some(target) = object.get("$ref").and_then(Json::as_str) {
                        if !open.iter().any(|r| r == target) {
                            open.push(target.to_string());
                        }
                    }
                }
                for (key, value) in object {
                    let key = key.as_str();
                    if DATA_KEYWORDS.contains(&key) {
                        continue;
                    }
                    match value {
                        Json::Object(map) if SCHEMA_MAPS.contains(&key) => {
                            for (name, v) in map {
                                let here = pointer(at, key, name);
                                let is_part = open.contains(&here);
                                parts(v, is_part, &here, open)
                            }
                        }
                        Json::Array(items) => {
                            let is_part = members_are_parts(key, items.len(), mixing, part);
                            items.iter().for_each(|v| parts(v, is_part, "", open))
                        }
                        value => parts(value, false, "", open),
                    }
                }
            }
            Json::Array(items) => items.iter().for_each(|v| parts(v, false, "", open)),
            _ => {}
        }
    }
    fn walk(schema: &mut Json, part: bool, at: &str, open: &[String]) {
        let Json::Object(object) = schema else {
            if let Json::Array(items) = schema {
                items.iter_mut().for_each(|v| walk(v, false, "", open));
            }
            return;
        };
        let says = [
            "additionalProperties",
            "unevaluatedProperties",
            "patternProperties",
        ];
        let mixing = mixes(object);
        if !part
            && !mixing
            && object.get("properties").is_some_and(Json::is_object)
            && !says.iter().any(|k| object.contains_key(*k))
            && !object.contains_key("allOf")
        {
            object.insert("additionalProperties".into(), Json::Bool(false));
        }
        for (key, value) in object.iter_mut() {
            let key = key.as_str();
            if DATA_KEYWORDS.contains(&key) {
                continue;
            }
            match value {
                Json::Object(map) if SCHEMA_MAPS.contains(&key) => {
                    for (name, v) in map.iter_mut() {
                        let here = pointer(at, key, name);
                        let is_part = open.contains(&here);
                        walk(v, is_part, &here, open)
                    }
                }
                Json::Array(items) => {
                    let is_part = members_are_parts(key, items.len(), mixing, part);
                    items.iter_mut().for_each(|v| walk(v, is_part, "", open))
                }
                value => walk(value, false, "", open),
            }
        }
    }
    // A part may point to another (an alias): collect until nothing is added.
    let mut open = Vec::new();
    loop {
        let before = open.len();
        parts(schema, false, "#", &mut open);
        if open.len() == before {
            break;
        }
    }
    walk(schema, false, "#", &open)
}

/// `schema` with ingle's JSON options for llguidance (one-line JSON, bounded numbers, objects
/// closed to the properties they list).
fn with_options(schema: &Json) -> Json {
    let mut schema = match schema {
        Json::Bool(true) => json!({}),
        other => other.clone(),
    };
    bound_numbers(&mut schema);
    close_objects(&mut schema);
    if let Some(object) = schema.as_object_mut() {
        object.insert(
            "x-guidance".into(),
            json!({
                "whitespace_flexible": false,
                "item_separator": JSON_ITEM_SEPARATOR,
                "key_separator": JSON_KEY_SEPARATOR,
            }),
        );
    }
    schema
}

/// Output that is one JSON value valid against `schema`.
pub fn json_schema(schema: &Json) -> TopLevelGrammar {
    TopLevelGrammar::from_json_schema(with_options(schema))
}

/// A function tool: its name and the JSON schema of its arguments.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub parameters: Json,
}

/// Whether `schema` has a `$ref` (outside values, which are data).
fn has_ref(schema: &Json) -> bool {
    let mut found = false;
    for_each_schema(&mut schema.clone(), &mut |object| {
        found |= object.contains_key("$ref");
    });
    found
}

/// Points every local `$ref` of `schema` (`#`, `#/$defs/City`) at the same place under
/// `base`, a JSON pointer to where the schema now lies.
fn rebase_refs(schema: &mut Json, base: &str) {
    for_each_schema(schema, &mut |object| {
        if let Some(Json::String(reference)) = object.get_mut("$ref") {
            if let Some(rest) = reference.strip_prefix('#') {
                *reference = format!("#{base}{rest}");
            }
        }
    });
}

/// The schema of one call object `{"name": ..., "arguments": ...}`, name first. A tool's
/// parameters that use `$ref` (Pydantic's `$defs`, a recursive `#`) are put under the root's
/// `$defs` and their references rebased: nested under `arguments`, `#` would point at the call
/// object ("Pointer '/$defs/City' does not exist").
fn call_schema(tools: &[ToolSpec]) -> Json {
    let mut defs = serde_json::Map::new();
    let mut one = |(i, tool): (usize, &ToolSpec)| {
        let arguments = if has_ref(&tool.parameters) {
            let name = format!("ingle_tool_{i}");
            let mut parameters = tool.parameters.clone();
            rebase_refs(&mut parameters, &format!("/$defs/{name}"));
            defs.insert(name.clone(), parameters);
            json!({"$ref": format!("#/$defs/{name}")})
        } else {
            tool.parameters.clone()
        };
        json!({
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": arguments},
            "required": ["name", "arguments"],
            "additionalProperties": false
        })
    };
    let mut schema = match tools {
        [tool] => one((0, tool)),
        _ => json!({"anyOf": tools.iter().enumerate().map(&mut one).collect::<Vec<_>>()}),
    };
    if !defs.is_empty() {
        schema["$defs"] = Json::Object(defs);
    }
    schema
}

/// Tool calls in `format`: one, or with `parallel` one or more separated by newlines. With
/// `opened`, the output already holds the first opening tag (a lazy start: the model opened a
/// call of its own accord), so the grammar begins right after it.
pub fn tool_calls(
    tools: &[ToolSpec],
    format: ToolFormat,
    parallel: bool,
    opened: bool,
) -> TopLevelGrammar {
    let quote = |s: &str| Json::from(s).to_string();
    let (open, close) = (
        quote(&format!("{}\n", format.open)),
        quote(&format!("\n{}", format.close)),
    );
    let first = if opened {
        format!("\"\\n\" payload {close}")
    } else {
        "call".to_string()
    };
    let more = if parallel { " (\"\\n\" call)*" } else { "" };
    let lark = format!(
        "start: {first}{more}\ncall: {open} payload {close}\npayload: %json {}\n",
        with_options(&call_schema(tools))
    );
    TopLevelGrammar::from_lark(lark)
}

/// OpenAI's rules for a `strict: true` schema, which OpenAI refuses a schema for breaking:
/// the root is an object, and every object lists all its properties in `required` and sets
/// `additionalProperties: false`. ingle refuses such a schema too (an invalid request about
/// `param`, naming the place in the schema) rather than enforcing the rules itself: code that
/// works on ingle then works on OpenAI, and without the rules a small model adds keys forever.
pub fn check_strict(schema: &Json, param: &str) -> Result<()> {
    let refuse = |at: &str, problem: &str| -> Result<()> {
        let at = if at.is_empty() { "the root" } else { at };
        Err(Error::invalid(
            param,
            format!(
                "Invalid schema for strict mode at {at} of `{param}`: {problem} (OpenAI's \
                 rule for `strict: true`; fix the schema or leave `strict` unset)"
            ),
        ))
    };
    let is_object = |s: &Json| match s.get("type") {
        Some(Json::String(t)) => t == "object",
        Some(Json::Array(types)) => types.iter().any(|t| t == "object"),
        _ => s.get("properties").is_some(),
    };
    if !is_object(schema) {
        return refuse("", "the root must be an object (`\"type\": \"object\"`)");
    }
    fn walk(
        schema: &Json,
        at: &str,
        is_object: &dyn Fn(&Json) -> bool,
        refuse: &dyn Fn(&str, &str) -> Result<()>,
    ) -> Result<()> {
        let Some(object) = schema.as_object() else {
            return Ok(());
        };
        if is_object(schema) {
            if object.get("additionalProperties") != Some(&Json::Bool(false)) {
                return refuse(at, "`additionalProperties` must be set to false");
            }
            let required: Vec<&str> = object
                .get("required")
                .and_then(Json::as_array)
                .map(|r| r.iter().filter_map(Json::as_str).collect())
                .unwrap_or_default();
            if let Some(properties) = object.get("properties").and_then(Json::as_object) {
                if let Some(missing) = properties.keys().find(|k| !required.contains(&k.as_str())) {
                    return refuse(
                        at,
                        &format!(
                            "`required` must list every property; `{}` is missing",
                            shown(missing)
                        ),
                    );
                }
            }
        }
        for (key, value) in object {
            let here = |sub: &str| {
                if at.is_empty() {
                    sub.to_string()
                } else {
                    format!("{at}.{sub}")
                }
            };
            match key.as_str() {
                "properties" | "$defs" | "definitions" | "patternProperties" => {
                    for (name, sub) in value.as_object().into_iter().flatten() {
                        walk(
                            sub,
                            &here(&format!("{key}.{}", shown(name))),
                            is_object,
                            refuse,
                        )?;
                    }
                }
                "anyOf" | "allOf" | "oneOf" | "prefixItems" => {
                    for (i, sub) in value.as_array().into_iter().flatten().enumerate() {
                        walk(sub, &here(&format!("{key}[{i}]")), is_object, refuse)?;
                    }
                }
                "items" | "additionalProperties" | "not" => {
                    walk(value, &here(key), is_object, refuse)?
                }
                _ => {}
            }
        }
        Ok(())
    }
    walk(schema, "", &is_object, &refuse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_parameters_with_refs_move_under_the_roots_defs() {
        let tree = json!({"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#"}},
            "leaf": {"$ref": "#/$defs/Leaf"}, "note": {"const": {"$ref": "#"}},
            "default": {"$ref": "#/$defs/Leaf"}},
            "$defs": {"Leaf": {"type": "string"}}});
        let tools = [
            ToolSpec {
                name: "plain".into(),
                parameters: json!({"type": "object"}),
            },
            ToolSpec {
                name: "tree".into(),
                parameters: tree,
            },
        ];
        let schema = call_schema(&tools);
        let any = &schema["anyOf"];
        assert_eq!(any[0]["properties"]["arguments"], json!({"type": "object"}));
        assert_eq!(
            any[1]["properties"]["arguments"],
            json!({"$ref": "#/$defs/ingle_tool_1"})
        );
        let moved = &schema["$defs"]["ingle_tool_1"];
        assert_eq!(
            moved["properties"]["children"]["items"]["$ref"],
            "#/$defs/ingle_tool_1"
        );
        assert_eq!(
            moved["properties"]["leaf"]["$ref"],
            "#/$defs/ingle_tool_1/$defs/Leaf"
        );
        assert_eq!(
            moved["properties"]["note"]["const"]["$ref"], "#",
            "data is left alone"
        );
    }

    #[test]
    fn objects_are_closed_to_the_properties_they_list() {
        let mut schema = json!({"type": "object", "properties": {
            "person": {"type": "object", "properties": {"name": {"type": "string"}}},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "extra": {"type": "object", "properties": {}, "additionalProperties": true},
            "free": {"type": "object"},
            "both": {"allOf": [{"type": "object", "properties": {"a": {}}},
                               {"properties": {"b": {"type": "object", "properties": {}}}}]},
            "properties": {"const": {"properties": {}}}},
            "$defs": {"Leaf": {"properties": {"x": {}}}}});
        close_objects(&mut schema);
        let p = &schema["properties"];
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(p["person"]["additionalProperties"], false);
        assert_eq!(p["tags"]["additionalProperties"], json!({"type": "string"}));
        assert_eq!(p["extra"]["additionalProperties"], true);
        assert!(
            p["free"].get("additionalProperties").is_none(),
            "a free-form dict stays open"
        );
        let members = &p["both"]["allOf"];
        assert!(members[0].get("additionalProperties").is_none());
        assert!(members[1].get("additionalProperties").is_none());
        assert_eq!(
            members[1]["properties"]["b"]["additionalProperties"], false,
            "a member's own subschemas are closed"
        );
        assert_eq!(
            p["properties"],
            json!({"const": {"properties": {}}}),
            "values are data"
        );
        assert_eq!(schema["$defs"]["Leaf"]["additionalProperties"], false);
    }

    #[test]
    fn combined_schemas_are_left_open_and_unions_closed() {
        let mut schema = json!({"type": "object", "properties": {
            "extended": {"allOf": [{"$ref": "#/$defs/Base"},
                                   {"properties": {"b": {}}, "required": ["b"]}]},
            "mixed": {"properties": {"a": {}}, "anyOf": [{"properties": {"b": {}}}]},
            "union": {"anyOf": [{"$ref": "#/$defs/Cat"}, {"properties": {"bark": {}}}]}},
            "$defs": {"Base": {"properties": {"a": {}}}, "Cat": {"properties": {"meow": {}}}}});
        close_objects(&mut schema);
        let p = &schema["properties"];
        assert!(
            schema["$defs"]["Base"]
                .get("additionalProperties")
                .is_none(),
            "a part of an allOf"
        );
        assert!(p["extended"]["allOf"][1]
            .get("additionalProperties")
            .is_none());
        assert!(
            p["mixed"].get("additionalProperties").is_none(),
            "gets more from its anyOf"
        );
        assert!(p["mixed"]["anyOf"][0].get("additionalProperties").is_none());
        assert_eq!(
            schema["$defs"]["Cat"]["additionalProperties"], false,
            "a union's model"
        );
        assert_eq!(p["union"]["anyOf"][1]["additionalProperties"], false);
        // One model alone in an allOf (pydantic's way to describe a nested model) is closed;
        // a union inside a part, and an alias of a part, are left open.
        let mut schema = json!({"type": "object", "properties": {
            "described": {"allOf": [{"$ref": "#/$defs/A"}], "description": "an A"},
            "default": {"allOf": [{"$ref": "#/$defs/B"}, {"properties": {"x": {}}}]},
            "kind": {"properties": {"k": {}},
                     "allOf": [{"anyOf": [{"$ref": "#/$defs/C"}, {"$ref": "#/$defs/Alias"}]}]}},
            "$defs": {"A": {"properties": {"a": {}}}, "B": {"properties": {"b": {}}},
                      "C": {"properties": {"c": {}}}, "Alias": {"$ref": "#/$defs/D"},
                      "D": {"properties": {"d": {}}}}});
        close_objects(&mut schema);
        let defs = &schema["$defs"];
        assert_eq!(defs["A"]["additionalProperties"], false);
        for open in ["B", "C", "D"] {
            assert!(
                defs[open].get("additionalProperties").is_none(),
                "{open} is a part"
            );
        }
    }

    #[test]
    fn numbers_get_the_bounds_they_lack() {
        let mut schema = json!({"type": "object", "properties": {
            "a": {"type": "integer"},
            "b": {"type": ["number", "null"], "minimum": 0},
            "c": {"type": "integer", "minimum": 1, "maximum": 5},
            "d": {"type": "integer", "minimum": 1e20},
            "e": {"const": {"type": "integer"}}}});
        bound_numbers(&mut schema);
        let p = &schema["properties"];
        assert_eq!(
            p["a"],
            json!({"type": "integer", "minimum": -NUMBER_BOUND, "maximum": NUMBER_BOUND})
        );
        assert_eq!(p["b"]["minimum"], 0);
        assert_eq!(p["b"]["maximum"], NUMBER_BOUND);
        assert_eq!(
            p["c"],
            json!({"type": "integer", "minimum": 1, "maximum": 5})
        );
        assert!(
            p["d"].get("maximum").is_none(),
            "a minimum above the bound stays open"
        );
        assert_eq!(
            p["e"],
            json!({"const": {"type": "integer"}}),
            "values are data"
        );
    }

    #[test]
    fn strict_schemas_are_checked_as_openai_checks_them() {
        let ok = json!({"type": "object", "additionalProperties": false, "required": ["a", "b"],
            "properties": {"a": {"type": "string"}, "b": {"anyOf": [
                {"type": "null"},
                {"type": "object", "properties": {}, "additionalProperties": false}]}}});
        check_strict(&ok, "s").unwrap();
        let cases = [
            (json!({"type": "array"}), "the root"),
            (
                json!({"type": "object", "properties": {}}),
                "additionalProperties",
            ),
            (
                json!({"type": "object", "additionalProperties": false, "required": [],
                    "properties": {"a": {"type": "string"}}}),
                "`a` is missing",
            ),
            (
                json!({"type": "object", "additionalProperties": false, "required": ["a"],
                    "properties": {"a": {"type": "array", "items": {"type": "object"}}}}),
                "properties.a.items",
            ),
            (
                json!({"type": "object", "additionalProperties": false, "properties": {},
                    "$defs": {"p": {"type": "object", "properties": {"x": {}}}}}),
                "$defs.p",
            ),
        ];
        for (schema, expected) in cases {
            let err = check_strict(&schema, "s").unwrap_err();
            assert_eq!(err.param.as_deref(), Some("s"));
            assert!(err.message.contains(expected), "{expected}: {err}");
        }
    }
}
