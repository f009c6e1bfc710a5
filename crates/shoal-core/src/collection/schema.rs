//! Payload schema changes: fields added to a collection; the declared paths of a collection
//! with nested payloads, which segments written from then on build as columns, and which may
//! also be removed or retyped (a column answers exactly as the documents would).

use alloc::format;
use alloc::vec::Vec;

use serde_json::Value;
use shoal_payload::Schema;

use super::Collection;
use crate::Error;
use crate::text;

impl Collection {
    /// Adds payload fields: `schema` must hold every current field with its type, and may add
    /// more. Existing points have no value for the new fields; sealed segments stay as they are
    /// (a filter on a field a segment does not know finds no value there).
    ///
    /// On error (a field missing or retyped) the collection is as before.
    pub fn extend_schema(&mut self, schema: Schema) -> Result<(), Error> {
        // A collection keeps its payload mode: the fields of a nested one are paths.
        let schema = match &self.schema {
            Some(old) if old.is_nested() && !schema.is_nested() => {
                let fields: Vec<(&str, shoal_payload::FieldType)> = schema.fields().collect();
                Schema::nested(&fields).map_err(Error::InvalidSchema)?
            }
            _ => schema,
        };
        if let Some(old) = &self.schema {
            for (name, ty) in old.fields() {
                if schema.field(name).map(|(_, t)| t) != Some(ty) {
                    return Err(Error::InvalidRequest(format!(
                        "schema change: field `{name}` ({}) must stay with its type",
                        ty.name()
                    )));
                }
            }
            if old.len() == schema.len() {
                return Ok(());
            }
        }
        if schema.is_empty() {
            return Ok(());
        }
        self.writable("schema change")?;
        let had_schema = self.schema.is_some();
        self.schema = Some(schema);
        if !had_schema {
            // Rows committed without a schema hold no payload.
            self.mutable.payloads.resize(self.mutable.rows(), Value::Null);
        }
        if let Some(schema) = self.schema.as_ref().filter(|s| text::has_text(s)) {
            self.mutable.text = Some(text::build(schema, self.mutable.payloads.iter()));
        }
        Ok(())
    }

    /// Replaces the declared paths of a collection with nested payloads by those of `schema`
    /// (any set: paths may be added, removed or retyped). Segments written from then on (seals,
    /// merges) build the new paths as columns; written ones keep theirs, which answer exactly as
    /// their documents would, so no answer changes. A collection with flat fields keeps
    /// them (they hold its payloads' values): `InvalidRequest`, and the collection is as before.
    pub fn set_declared_paths(&mut self, schema: Schema) -> Result<(), Error> {
        if !self.nested() {
            return Err(Error::InvalidRequest(
                "declared paths: this collection's payload fields are flat columns holding their values; they cannot be removed".into(),
            ));
        }
        let fields: Vec<(&str, shoal_payload::FieldType)> = schema.fields().collect();
        let schema = Schema::nested(&fields).map_err(Error::InvalidSchema)?;
        self.writable("schema change")?;
        self.schema = Some(schema);
        Ok(())
    }
}
