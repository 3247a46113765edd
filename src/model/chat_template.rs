//! Chat templates (Jinja, as HF ships them) rendered with `minijinja` the way transformers'
//! `apply_chat_template` renders them with jinja2:
//!
//! - `trim_blocks` and `lstrip_blocks` on, trailing newline of the template dropped;
//! - loop controls (`{% break %}`, `{% continue %}`), `namespace()`;
//! - Python string/dict methods (`.strip()`, `.split()`, `.startswith()`, `.items()`, ...)
//!   through `minijinja-contrib`'s pycompat;
//! - `raise_exception(msg)` fails the render with `msg`;
//! - `tojson` writes what Python's `json.dumps(x, ensure_ascii=False)` writes (`", "` and
//!   `": "` separators, Python float spelling, insertion order), with `indent`, `separators`,
//!   `sort_keys` and `ensure_ascii` keyword arguments, not minijinja's HTML-safe JSON;
//! - `strftime_now(fmt)` (UTC);
//! - the context holds `messages`, `add_generation_prompt`, `bos_token`, `eos_token`, `tools`
//!   and `documents` (`none` unless given) and any extra variables.

use std::path::Path;

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use super::error::ModelError;
use super::gguf::GgufFile;

/// One message of a conversation with plain text content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    source: String,
    source_name: String,
    bos_token: Option<String>,
    eos_token: Option<String>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("source_name", &self.source_name)
            .field("len", &self.source.len())
            .finish()
    }
}

const NAME: &str = "chat";

impl ChatTemplate {
    /// Compiles `source`; `source_name` (a file, or "file.gguf (tokenizer.chat_template)")
    /// names it in errors.
    pub fn new(
        source: &str,
        source_name: impl Into<String>,
        bos_token: Option<&str>,
        eos_token: Option<&str>,
    ) -> Result<Self, ModelError> {
        let source_name = source_name.into();
        let mut env = Environment::new();
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .keep_trailing_newline(false)
                .build()
                .expect("the default delimiters are valid"),
        );
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_filter("tojson", tojson);
        env.add_template_owned(NAME, source.to_string())
            .map_err(|e| ModelError::ChatTemplate {
                source_name: source_name.clone(),
                problem: describe(&e),
            })?;
        Ok(ChatTemplate {
            env,
            source: source.to_string(),
            source_name,
            bos_token: bos_token.map(str::to_string),
            eos_token: eos_token.map(str::to_string),
        })
    }

    /// `tokenizer.chat_template` of a GGUF, if it has one.
    pub fn from_gguf(
        gguf: &GgufFile,
        bos_token: Option<&str>,
        eos_token: Option<&str>,
    ) -> Result<Option<Self>, ModelError> {
        match gguf.get_str("tokenizer.chat_template") {
            None => Ok(None),
            Some(src) => Self::new(
                src,
                format!("{} (tokenizer.chat_template)", gguf.path().display()),
                bos_token,
                eos_token,
            )
            .map(Some),
        }
    }

    /// The template of an HF directory: `chat_template.jinja`, else `chat_template.json`, else
    /// `tokenizer_config.json`'s `chat_template` (a string, or a list of named templates of
    /// which "default" or else the first is taken).
    pub fn from_hf_dir(
        dir: impl AsRef<Path>,
        bos_token: Option<&str>,
        eos_token: Option<&str>,
    ) -> Result<Option<Self>, ModelError> {
        let dir = dir.as_ref();
        let jinja = dir.join("chat_template.jinja");
        if jinja.is_file() {
            let src = std::fs::read_to_string(&jinja).map_err(|e| ModelError::io(&jinja, e))?;
            return Self::new(&src, jinja.display().to_string(), bos_token, eos_token).map(Some);
        }
        for file in ["chat_template.json", "tokenizer_config.json"] {
            let path = dir.join(file);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(ModelError::io(&path, e)),
            };
            let bad = |problem: String| ModelError::ChatTemplate {
                source_name: path.display().to_string(),
                problem,
            };
            let v: Json = serde_json::from_str(&text)
                .map_err(|e| bad(format!("the file is not valid JSON ({e})")))?;
            let src = match v.get("chat_template") {
                None | Some(Json::Null) => continue,
                Some(Json::String(s)) => s.clone(),
                Some(Json::Array(list)) => {
                    let pick = list
                        .iter()
                        .find(|t| t.get("name").and_then(Json::as_str) == Some("default"))
                        .or_else(|| list.first())
                        .and_then(|t| t.get("template"))
                        .and_then(Json::as_str)
                        .ok_or_else(|| {
                            bad("chat_template is a list without a usable template".into())
                        })?;
                    pick.to_string()
                }
                Some(other) => {
                    return Err(bad(format!(
                        "chat_template should be a string, found {other}"
                    )))
                }
            };
            let name = format!("{} (chat_template)", path.display());
            return Self::new(&src, name, bos_token, eos_token).map(Some);
        }
        Ok(None)
    }

    /// The template's source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders plain-text messages.
    pub fn render(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
    ) -> Result<String, ModelError> {
        let messages = serde_json::to_value(messages).expect("messages serialize");
        self.render_json(&messages, add_generation_prompt, None, None)
    }

    /// Renders messages given as JSON (content parts, tool calls, ...), with optional tool
    /// schemas and extra variables (e.g. `enable_thinking`).
    pub fn render_json(
        &self,
        messages: &Json,
        add_generation_prompt: bool,
        tools: Option<&Json>,
        extra: Option<&Map<String, Json>>,
    ) -> Result<String, ModelError> {
        let mut ctx = Map::new();
        if let Some(extra) = extra {
            ctx.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let tok = |t: &Option<String>| t.clone().map_or(Json::Null, Json::String);
        ctx.insert("messages".into(), messages.clone());
        ctx.insert(
            "add_generation_prompt".into(),
            Json::Bool(add_generation_prompt),
        );
        ctx.entry("bos_token")
            .or_insert_with(|| tok(&self.bos_token));
        ctx.entry("eos_token")
            .or_insert_with(|| tok(&self.eos_token));
        ctx.insert("tools".into(), tools.cloned().unwrap_or(Json::Null));
        ctx.entry("documents").or_insert(Json::Null);
        let tmpl = self.env.get_template(NAME).expect("the template was added");
        tmpl.render(Value::from(minijinja::value::Serde(&ctx)))
            .map_err(|e| ModelError::ChatRender {
                source_name: self.source_name.clone(),
                problem: describe(&e),
            })
    }
}

/// A minijinja error in one line, with its cause chain.
fn describe(e: &Error) -> String {
    let mut s = match (e.kind(), e.detail()) {
        (ErrorKind::InvalidOperation, Some(d)) if e.name() == Some(NAME) || e.name().is_none() => {
            d.to_string()
        }
        _ => e.to_string(),
    };
    if let Some(line) = e.line() {
        if !s.contains("line") {
            s.push_str(&format!(" (template line {line})"));
        }
    }
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(&format!(": {inner}"));
        src = inner.source();
    }
    s
}

fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// Python's `datetime.now().strftime(fmt)` for the usual directives, in UTC.
fn strftime_now(format: String) -> Result<String, Error> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| Error::new(ErrorKind::InvalidOperation, "the clock is before 1970"))?
        .as_secs() as i64;
    Ok(strftime(secs, &format))
}

/// Formats a Unix time (UTC) with strftime directives %Y %y %m %d %e %H %I %M %S %p %b %B %a
/// %A %j %%; others are copied through.
pub(crate) fn strftime(secs: i64, format: &str) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DAYS: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (h, mi, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy_mar = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy_mar + 2) / 153;
    let d = doy_mar - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let cum = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let yday = cum[(m - 1) as usize] + d + i64::from(leap && m > 2);
    let weekday = (days + 3).rem_euclid(7) as usize; // 1970-01-01 was a Thursday
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&y.to_string()),
            Some('y') => out.push_str(&format!("{:02}", y.rem_euclid(100))),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('e') => out.push_str(&format!("{d:2}")),
            Some('H') => out.push_str(&format!("{h:02}")),
            Some('I') => out.push_str(&format!("{:02}", if h % 12 == 0 { 12 } else { h % 12 })),
            Some('M') => out.push_str(&format!("{mi:02}")),
            Some('S') => out.push_str(&format!("{s:02}")),
            Some('p') => out.push_str(if h < 12 { "AM" } else { "PM" }),
            Some('b') => out.push_str(&MONTHS[(m - 1) as usize][..3]),
            Some('B') => out.push_str(MONTHS[(m - 1) as usize]),
            Some('a') => out.push_str(&DAYS[weekday][..3]),
            Some('A') => out.push_str(DAYS[weekday]),
            Some('j') => out.push_str(&format!("{yday:03}")),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Options of Python's `json.dumps` that templates use.
struct JsonStyle {
    indent: Option<String>,
    item_sep: String,
    key_sep: String,
    sort_keys: bool,
    ensure_ascii: bool,
}

/// The `tojson` filter: Python's `json.dumps(x, ensure_ascii=False, indent=None,
/// separators=None, sort_keys=False)` as transformers defines it.
fn tojson(value: &Value, kwargs: Kwargs) -> Result<Value, Error> {
    let indent: Option<Value> = kwargs.get("indent")?;
    let separators: Option<Value> = kwargs.get("separators")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    let ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
    kwargs.assert_all_used()?;
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() || v.is_undefined() => None,
        Some(v) => match (v.as_i64(), v.as_str()) {
            (Some(n), _) => Some(" ".repeat(n.max(0) as usize)),
            (None, Some(s)) => Some(s.to_string()),
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "tojson: indent must be an integer or a string",
                ))
            }
        },
    };
    let (item_sep, key_sep) = match separators {
        Some(v) if !v.is_none() && !v.is_undefined() => {
            let parts: Vec<String> = v
                .try_iter()?
                .map(|p| p.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .filter(|p| p.len() == 2)
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidOperation,
                        "tojson: separators must be two strings",
                    )
                })?;
            (parts[0].clone(), parts[1].clone())
        }
        _ if indent.is_some() => (",".to_string(), ": ".to_string()),
        _ => (", ".to_string(), ": ".to_string()),
    };
    let style = JsonStyle {
        indent,
        item_sep,
        key_sep,
        sort_keys: sort_keys.unwrap_or(false),
        ensure_ascii: ensure_ascii.unwrap_or(false),
    };
    let mut out = String::new();
    write_json(&mut out, value, &style, 0)?;
    Ok(Value::from(out))
}

fn write_json(out: &mut String, v: &Value, style: &JsonStyle, level: usize) -> Result<(), Error> {
    let newline = |out: &mut String, level: usize| {
        if let Some(ind) = &style.indent {
            out.push('\n');
            for _ in 0..level {
                out.push_str(ind);
            }
        }
    };
    match v.kind() {
        ValueKind::None => out.push_str("null"),
        ValueKind::Undefined => {
            return Err(Error::new(
                ErrorKind::UndefinedError,
                "tojson: the value is undefined",
            ))
        }
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if v.is_integer() {
                out.push_str(&v.to_string());
            } else {
                let f = f64::try_from(v.clone())?;
                out.push_str(&python_float_repr(f));
            }
        }
        ValueKind::String => {
            write_json_str(out, v.as_str().unwrap_or_default(), style.ensure_ascii)
        }
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = v.try_iter()?.collect();
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&style.item_sep);
                }
                newline(out, level + 1);
                write_json(out, item, style, level + 1)?;
            }
            newline(out, level);
            out.push(']');
        }
        ValueKind::Map => {
            let mut keys: Vec<Value> = v.try_iter()?.collect();
            if style.sort_keys {
                keys.sort();
            }
            if keys.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push_str(&style.item_sep);
                }
                newline(out, level + 1);
                // Python converts int/float/bool/None keys to strings.
                let key = match k.kind() {
                    ValueKind::String => k.as_str().unwrap_or_default().to_string(),
                    ValueKind::None => "null".into(),
                    ValueKind::Bool => (if k.is_true() { "true" } else { "false" }).into(),
                    _ => k.to_string(),
                };
                write_json_str(out, &key, style.ensure_ascii);
                out.push_str(&style.key_sep);
                write_json(out, &v.get_item(k)?, style, level + 1)?;
            }
            newline(out, level);
            out.push('}');
        }
        _ => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("tojson: cannot serialize a {}", v.kind()),
            ))
        }
    }
    Ok(())
}

fn write_json_str(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ensure_ascii && (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `repr(float)` as Python writes it: shortest round-trip digits, fixed notation for decimal
/// exponents in [-4, 16), else `d.ddde+XX`; integral values keep ".0"; NaN and infinities as
/// `json.dumps` writes them.
pub(crate) fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n = digits.len() as i32;
    if (-4..16).contains(&exp) {
        let s = if exp < 0 {
            format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
        } else if exp + 1 >= n {
            format!("{}{}.0", digits, "0".repeat((exp + 1 - n) as usize))
        } else {
            let (a, b) = digits.split_at((exp + 1) as usize);
            format!("{a}.{b}")
        };
        format!("{sign}{s}")
    } else {
        let m = if n == 1 {
            digits
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(src: &str, ctx: Json) -> Result<String, ModelError> {
        let t = ChatTemplate::new(src, "test", Some("<s>"), Some("</s>"))?;
        let extra = ctx.as_object().cloned().unwrap_or_default();
        t.render_json(
            extra.get("messages").unwrap_or(&Json::Array(vec![])),
            false,
            extra.get("tools"),
            Some(&extra),
        )
    }

    #[test]
    fn python_float_spelling() {
        for (f, s) in [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (7.5, "7.5"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123456789012345.6, "123456789012345.6"),
            (-2.25, "-2.25"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e300, "1e+300"),
            (f64::INFINITY, "Infinity"),
        ] {
            assert_eq!(python_float_repr(f), s, "{f}");
        }
    }

    #[test]
    fn tojson_matches_python_json_dumps() {
        let out = render(
            "{{ x | tojson }}|{{ x | tojson(indent=2) }}|{{ x | tojson(separators=(',', ':'), sort_keys=true) }}|{{ 'é\"\\n' | tojson(ensure_ascii=true) }}",
            serde_json::json!({"x": {"b": [1, 2.0, null, true], "a": "é<>&", "e": {}}}),
        )
        .unwrap();
        assert_eq!(
            out,
            "{\"b\": [1, 2.0, null, true], \"a\": \"é<>&\", \"e\": {}}|{\n  \"b\": [\n    1,\n    2.0,\n    null,\n    true\n  ],\n  \"a\": \"é<>&\",\n  \"e\": {}\n}|{\"a\":\"é<>&\",\"b\":[1,2.0,null,true],\"e\":{}}|\"\\u00e9\\\"\\n\""
        );
    }

    #[test]
    fn raise_exception_fails_the_render_with_its_message() {
        let e = render(
            "{{ raise_exception('no system role') }}",
            serde_json::json!({}),
        )
        .unwrap_err();
        assert!(matches!(e, ModelError::ChatRender { .. }));
        assert!(e.to_string().contains("no system role"), "{e}");
    }

    #[test]
    fn python_methods_loop_controls_and_whitespace() {
        let src = "{% for m in messages %}\n  {% if loop.index > 2 %}{% break %}{% endif %}\n{{ m.content.strip().upper() }}{{ '+' + m.role }}\n{% endfor %}\n";
        let out = render(
            src,
            serde_json::json!({"messages": [
                {"role": "a", "content": " x "}, {"role": "b", "content": "y"}, {"role": "c", "content": "z"}
            ]}),
        )
        .unwrap();
        assert_eq!(out, "X+a\nY+b\n");
    }

    #[test]
    fn syntax_errors_name_the_source() {
        let e = ChatTemplate::new("{% if %}", "my.jinja", None, None).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("the chat template from my.jinja is not valid"),
            "{e}"
        );
    }

    #[test]
    fn strftime_formats_known_dates() {
        // 2024-07-26 13:05:09 UTC was a Friday, day 208 of a leap year.
        let t = 1_721_999_109;
        assert_eq!(
            strftime(t, "%d %b %Y %H:%M:%S %A %j %%"),
            "26 Jul 2024 13:05:09 Friday 208 %"
        );
        assert_eq!(strftime(0, "%Y-%m-%d %a"), "1970-01-01 Thu");
        assert_eq!(strftime(951_782_400, "%Y-%m-%d"), "2000-02-29");
    }
}
