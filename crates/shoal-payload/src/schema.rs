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
        }
    }

    /// Inverse of [`code`](Self::code).
    pub fn from_code(code: u32) -> Option<FieldType> {
        Some(match code {
            0 => FieldType::Keyword,
            1 => FieldType::Integer,
            2 => FieldType::Float,
            3 => FieldType::Bool,
            4 => FieldType::Text,
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
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schema {
    fields: Vec<(String, FieldType)>,
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
        out.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        if let Some(w) = out.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(PayloadError::new(format!("schema.{}", w[0].0), PayloadErrorKind::BadFieldName));
        }
        Ok(Schema { fields: out })
    }

    /// Parses `{"name": "type", ...}`.
    pub fn from_json(text: &str) -> Result<Schema, PayloadError> {
        let value: Value = serde_json::from_str(text)
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

    /// Whether no field is declared.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The field's position (in name order) and type.
    pub fn field(&self, name: &str) -> Option<(usize, FieldType)> {
        let i = self.fields.binary_search_by(|(n, _)| n.as_bytes().cmp(name.as_bytes())).ok()?;
        Some((i, self.fields[i].1))
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
