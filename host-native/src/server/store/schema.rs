//! Payload schema changes of a served collection: fields added (`PUT
//! /collections/{name}/index`, or inferred from the payloads of a dynamic collection), declared
//! paths of a nested one removed (`DELETE /collections/{name}/index/{field}`), each logged
//! before it applies.

use serde_json::Value;
use shoal_core::Schema;

use super::{ApiError, Kind, Store, append};

impl Store {
    /// Adds payload fields (`PUT /collections/{name}/index`).
    pub fn add_fields(&self, fields: &[(String, shoal_core::FieldType)]) -> Result<(), ApiError> {
        let mut wal = self.lock_wal()?;
        self.writable("schema change")?;
        let schema = {
            let col = self.read();
            let mut all = field_list(col.schema());
            for (name, ty) in fields {
                match all.iter().find(|(n, _)| n == name) {
                    Some((_, t)) if t == ty => {}
                    Some((_, t)) => {
                        return Err(ApiError::bad_request(format!("field `{name}` is already a {} field", t.name())));
                    }
                    None => all.push((name.clone(), *ty)),
                }
            }
            if col.schema().map_or(0, |s| s.len()) == all.len() {
                return Ok(());
            }
            // Checked as the collection will apply it (a nested one's paths: no `text`, no
            // `[n]`), before it is logged: every logged record must apply on replay.
            if col.nested() { Schema::nested(&all) } else { Schema::new(&all) }
                .map_err(|e| ApiError::core(shoal_core::Error::InvalidSchema(e)))?
        };
        append(&mut wal, Kind::Schema, schema_json(&schema).to_string().as_bytes())?;
        self.col.write().expect("collection lock poisoned").extend_schema(schema).map_err(ApiError::core)
    }

    /// Removes a declared path of a collection with nested payloads (`DELETE
    /// /collections/{name}/index/{field}`); returns whether it was declared. A collection with
    /// flat fields keeps them: a 400.
    pub fn drop_field(&self, name: &str) -> Result<bool, ApiError> {
        let mut wal = self.lock_wal()?;
        self.writable("schema change")?;
        let schema = {
            let col = self.read();
            if !col.nested() {
                return Err(ApiError::bad_request(format!(
                    "field `{name}`: a collection created with Shoal's shape keeps its fields (they hold the payloads' values)"
                )));
            }
            let all = field_list(col.schema());
            if !all.iter().any(|(n, _)| n == name) {
                return Ok(false);
            }
            let kept: Vec<_> = all.into_iter().filter(|(n, _)| n != name).collect();
            Schema::nested(&kept).map_err(|e| ApiError::core(shoal_core::Error::InvalidSchema(e)))?
        };
        append(&mut wal, Kind::Schema, schema_json(&schema).to_string().as_bytes())?;
        let mut col = self.col.write().expect("collection lock poisoned");
        col.set_declared_paths(schema).map_err(ApiError::core)?;
        Ok(true)
    }
}

/// The schema as JSON (`{"name": "type", ...}`).
pub fn schema_json(schema: &Schema) -> Value {
    Value::Object(schema.fields().map(|(n, t)| (n.to_string(), Value::String(t.name().into()))).collect())
}

/// The fields of a schema (none without one), to extend.
fn field_list(schema: Option<&Schema>) -> Vec<(String, shoal_core::FieldType)> {
    schema.map(|s| s.fields().map(|(n, t)| (n.to_string(), t)).collect()).unwrap_or_default()
}

/// The schema extended with the fields of `payloads` it lacks, typed from their first value
/// (string: keyword, integer: integer, other number: float, bool: bool; arrays by their
/// elements); `None` when nothing is new.
pub(super) fn infer_schema(current: Option<&Schema>, payloads: &[Value]) -> Option<Schema> {
    use shoal_core::FieldType;
    let mut fields = field_list(current);
    let known = fields.len();
    let type_of = |v: &Value| -> Option<FieldType> {
        match v {
            Value::String(_) => Some(FieldType::Keyword),
            Value::Bool(_) => Some(FieldType::Bool),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(FieldType::Integer),
            Value::Number(_) => Some(FieldType::Float),
            _ => None,
        }
    };
    for doc in payloads {
        let Some(obj) = doc.as_object() else { continue };
        for (key, value) in obj {
            if fields.iter().any(|(n, _)| n == key) {
                continue;
            }
            let ty = match value {
                Value::Array(items) => items.iter().find_map(type_of),
                v => type_of(v),
            };
            if let Some(ty) = ty {
                fields.push((key.clone(), ty));
            }
        }
    }
    (fields.len() > known).then(|| Schema::new(&fields)).and_then(Result::ok)
}
