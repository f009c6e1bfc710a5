//! Field names and types, parsed from JSON like `{"tag": "keyword", "year": "integer"}`.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::Value;

use crate::error::{PayloadError, PayloadErrorKind};

/// Longest field name in bytes.
pub const MAX_FIELD_NAME: usize = 255;
/// Most fields a schema may declare.
pub const MAX_FIELDS: usize = 1024;

/// The type of a payload field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FieldType {
    /// An exact string (tags, ids, categories); dictionary-coded and indexed.
    Keyword,
    /// A signed 64-bit integer.
    Integer,
    /// A 64-bit float.
    Float,
    /// `true` / `false`.
    Bool,
    /// Full text: stored here (for `with_payload`), indexed by `shoal-text`.
    Text,
    /// Full text whose words are indexed and searched by their English stems (Snowball's
    /// English stemmer: `running` and `runs` both match `run`); otherwise like [`Text`](Self::Text).
    /// A schema's text fields share one index, so they are all `text` or all `text_en`.
    TextEn,
}

impl FieldType {
    /// The schema name (`"keyword"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Keyword => "keyword",
            FieldType::Integer => "integer",
            FieldType::Float => "float",
            FieldType::Bool => "bool",
            FieldType::Text => "text",
            FieldType::TextEn => "text_en",
        }
    }

    /// Parses a schema name.
    pub fn from_name(name: &str) -> Option<FieldType> {
        Some(match name {
            "keyword" => FieldType::Keyword,
            "integer" => FieldType::Integer,
            "float" => FieldType::Float,
            "bool" => FieldType::Bool,
            "text" => FieldType::Text,
            "text_en" => FieldType::TextEn,
            _ => return None,
        })
    }

    /// The `field_type` code of `FieldInfo` in `docs/format.md`.
    pub fn code(self) -> u32 {
        match self {
            FieldType::Keyword => 0,
            FieldType::Integer => 1,
            FieldType::Float => 2,
            FieldType::Bool => 3,
            FieldType::Text => 4,
            FieldType::TextEn => 5,
        }
    }

    /// Whether the field is full text (`text` or `text_en`).
    pub fn is_text(self) -> bool {
        matches!(self, FieldType::Text | FieldType::TextEn)
    }

    /// Inverse of [`code`](Self::code).
    pub fn from_code(code: u32) -> Option<FieldType> {
        Some(match code {
            0 => FieldType::Keyword,
            1 => FieldType::Integer,
            2 => FieldType::Float,
            3 => FieldType::Bool,
            4 => FieldType::Text,
            5 => FieldType::TextEn,
            _ => return None,
        })
    }
}

/// Whether `name` is a valid field name: 1..=255 bytes, no control characters.
pub fn valid_field_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_FIELD_NAME && !name.chars().any(char::is_control)
}

/// The declared payload fields of a collection, sorted by name.
///
/// ```
/// use shoal_payload::{FieldType, Schema};
/// let s = Schema::from_json(r#"{"tag": "keyword", "year": "integer"}"#).unwrap();
/// assert_eq!(s.field("year"), Some((1, FieldType::Integer)));
/// assert!(Schema::from_json(r#"{"tag": "string"}"#).is_err());
/// // `text_en`: full text indexed and searched by English stems; all text fields alike.
/// let s = Schema::from_json(r#"{"title": "text_en", "body": "text_en"}"#).unwrap();
/// assert!(s.stems_english() && s.field("title").unwrap().1.is_text());
/// assert_eq!(Schema::from_json(&s.to_json()).unwrap(), s);
/// assert!(Schema::from_json(r#"{"title": "text_en", "body": "text"}"#).is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schema {
    fields: Vec<(String, FieldType)>,
    /// Nested mode (`docs/format.md`, "Nested payloads"): documents are any JSON objects, keys
    /// in filters are paths, and `fields` are the paths declared for indexing.
    nested: bool,
}

impl Schema {
    /// A schema from `(name, type)` pairs; names are validated and must be unique.
    pub fn new<S: AsRef<str>>(fields: &[(S, FieldType)]) -> Result<Schema, PayloadError> {
        if fields.len() > MAX_FIELDS {
            return Err(PayloadError::new("schema", PayloadErrorKind::TooManyFields));
        }
        let mut out: Vec<(String, FieldType)> = Vec::with_capacity(fields.len());
        for (name, ty) in fields {
            let name = name.as_ref();
            if !valid_field_name(name) {
                return Err(PayloadError::new(format!("schema.{name}"), PayloadErrorKind::BadFieldName));
            }
            out.push((name.to_string(), *ty));
        }
        // By name bytes: an insertion sort (at most 1,024 fields, usually given sorted — JSON
        // objects arrive in key order; one less sort routine in the wasm build).
        for i in 1..out.len() {
            let mut j = i;
            while j > 0 && out[j - 1].0.as_bytes() > out[j].0.as_bytes() {
                out.swap(j - 1, j);
                j -= 1;
            }
        }
        if let Some(w) = out.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(PayloadError::new(format!("schema.{}", w[0].0), PayloadErrorKind::BadFieldName));
        }
        let mut text = out.iter().filter(|f| f.1.is_text());
        if let Some(first) = text.next()
            && let Some(other) = text.find(|f| f.1 != first.1)
        {
            return Err(PayloadError::new(format!("schema.{}", other.0), PayloadErrorKind::MixedText));
        }
        Ok(Schema { fields: out, nested: false })
    }

    /// A nested-mode schema (`docs/format.md`, "Nested payloads"): payloads are any JSON
    /// objects, filter keys are paths, and `fields` declare paths for indexing (keys and `[]`,
    /// no `[n]`; `keyword`, `integer`, `float` or `bool` — text paths are not supported yet).
    /// Each declared path is built as a column; a row the column cannot describe (a value of
    /// another type, an object, ...) is a stray of the path, answered from its document, as
    /// are conditions on undeclared paths — the answers are the reference evaluator's either
    /// way.
    pub fn nested<S: AsRef<str>>(fields: &[(S, FieldType)]) -> Result<Schema, PayloadError> {
        let mut schema = Schema::new(fields)?;
        for (name, ty) in &schema.fields {
            let steps = crate::path::parse(name);
            if steps.is_none_or(|s| s.iter().any(|s| matches!(s, crate::path::Step::Index(_)))) {
                return Err(PayloadError::new(format!("schema.{name}"), PayloadErrorKind::BadFieldName));
            }
            if ty.is_text() {
                return Err(PayloadError::new(
                    format!("schema.{name}"),
                    PayloadErrorKind::UnknownType(ty.name().into()),
                ));
            }
        }
        schema.nested = true;
        Ok(schema)
    }

    /// Whether this is a nested-mode schema ([`Schema::nested`]).
    pub fn is_nested(&self) -> bool {
        self.nested
    }

    /// Parses `{"name": "type", ...}`.
    pub fn from_json(text: &str) -> Result<Schema, PayloadError> {
        let value: Value = serde_json::from_slice(text.as_bytes())
            .map_err(|e| PayloadError::new("schema", PayloadErrorKind::InvalidJson(e.to_string())))?;
        Schema::from_value(&value)
    }

    /// Parses an already decoded `{"name": "type", ...}`.
    pub fn from_value(value: &Value) -> Result<Schema, PayloadError> {
        let obj = value.as_object().ok_or_else(|| PayloadError::new("schema", PayloadErrorKind::NotAnObject))?;
        let mut fields = Vec::with_capacity(obj.len());
        for (name, ty) in obj {
            let path = || format!("schema.{name}");
            let ty_name =
                ty.as_str().ok_or_else(|| PayloadError::new(path(), PayloadErrorKind::UnknownType(ty.to_string())))?;
            let ty = FieldType::from_name(ty_name)
                .ok_or_else(|| PayloadError::new(path(), PayloadErrorKind::UnknownType(ty_name.to_string())))?;
            fields.push((name.as_str(), ty));
        }
        Schema::new(&fields)
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether no field is declared in a flat schema: points carry no payload (a nested schema
    /// always holds documents).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && !self.nested
    }

    /// The field's position (in name order) and type.
    pub fn field(&self, name: &str) -> Option<(usize, FieldType)> {
        let i = self.fields.binary_search_by(|(n, _)| n.as_bytes().cmp(name.as_bytes())).ok()?;
        Some((i, self.fields[i].1))
    }

    /// Whether the text fields are `text_en`: indexed and searched by English stems.
    pub fn stems_english(&self) -> bool {
        self.fields.iter().any(|f| f.1 == FieldType::TextEn)
    }

    /// Fields in name order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, FieldType)> {
        self.fields.iter().map(|(n, t)| (n.as_str(), *t))
    }

    /// Name of field `i`.
    pub fn name(&self, i: usize) -> &str {
        &self.fields[i].0
    }

    /// Type of field `i`.
    pub fn field_type(&self, i: usize) -> FieldType {
        self.fields[i].1
    }

    /// The schema as JSON text (`{"name":"type",...}`, names sorted).
    pub fn to_json(&self) -> String {
        let mut m = serde_json::Map::new();
        for (n, t) in &self.fields {
            m.insert(n.clone(), Value::String(t.name().to_string()));
        }
        Value::Object(m).to_string()
    }
}
