//! Qdrant's filter language: JSON → [`Filter`] (shape errors name their path), then
//! [`Filter::validate`] against a [`Schema`] (unknown fields, type mismatches).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{Map, Value};
use shoal_format::PointId;

use crate::error::{FilterError, FilterErrorKind};
use crate::schema::{FieldType, Schema};

/// Deepest nesting of filters accepted.
pub const MAX_FILTER_DEPTH: usize = 32;

/// A boolean filter: every `must`, at least one `should` (when there are any), no
/// `must_not`, and at least `min_should.min_count` of `min_should.conditions`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// All must hold.
    pub must: Vec<Condition>,
    /// At least one must hold, unless empty.
    pub should: Vec<Condition>,
    /// None may hold.
    pub must_not: Vec<Condition>,
    /// At least `min_count` of these must hold.
    pub min_should: Option<MinShould>,
}

/// Qdrant's `min_should`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MinShould {
    /// The conditions.
    pub conditions: Vec<Condition>,
    /// How many must hold.
    pub min_count: usize,
}

/// One condition.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    /// A condition on a field's values.
    Field {
        /// The field name.
        key: String,
        /// The test.
        check: FieldCheck,
    },
    /// The field is absent, `null` or `[]`.
    IsEmpty(String),
    /// The field is `null`.
    IsNull(String),
    /// The point's external id is one of these.
    HasId(Vec<PointId>),
    /// A nested filter.
    Filter(Filter),
    /// Qdrant's `nested` (nested payloads only): some element of the array(s) at `key` (with
    /// or without a trailing `[]`) satisfies the whole `filter`, its keys resolved inside that
    /// element.
    Nested {
        /// The path of the array(s).
        key: String,
        /// The filter each element is checked against.
        filter: Filter,
    },
}

/// The test of a field condition; on a multi-valued field it holds when **any** value passes.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldCheck {
    /// `match: {value}`: some value equals it.
    Value(Literal),
    /// `match: {any}`: some value is in the list.
    Any(Vec<Literal>),
    /// `match: {except}`: some value is not in the list (a point without values never
    /// matches).
    Except(Vec<Literal>),
    /// `range`: some value is inside (numbers compare as `f64`).
    Range(Range),
}

/// A literal of `match`.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// A string (keyword fields).
    Keyword(String),
    /// An integer (integer fields).
    Integer(i64),
    /// A bool (bool fields).
    Bool(bool),
}

/// Bounds of `range`; absent bounds do not restrict.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Range {
    /// `value > gt`.
    pub gt: Option<f64>,
    /// `value >= gte`.
    pub gte: Option<f64>,
    /// `value < lt`.
    pub lt: Option<f64>,
    /// `value <= lte`.
    pub lte: Option<f64>,
}

impl Range {
    /// Whether `x` satisfies the lower bounds.
    #[inline]
    pub fn above_lower(&self, x: f64) -> bool {
        self.gt.is_none_or(|b| x > b) && self.gte.is_none_or(|b| x >= b)
    }

    /// Whether `x` satisfies the upper bounds.
    #[inline]
    pub fn below_upper(&self, x: f64) -> bool {
        self.lt.is_none_or(|b| x < b) && self.lte.is_none_or(|b| x <= b)
    }

    /// Whether `x` is inside.
    #[inline]
    pub fn contains(&self, x: f64) -> bool {
        self.above_lower(x) && self.below_upper(x)
    }
}

fn err(path: &str, kind: FilterErrorKind) -> FilterError {
    FilterError::new(path, kind)
}

impl Filter {
    /// Every condition of this filter, one level deep: `must`, `should`, `must_not`, then
    /// `min_should`'s.
    pub fn conditions(&self) -> impl Iterator<Item = &Condition> {
        let lists = [&self.must, &self.should, &self.must_not];
        lists.into_iter().flatten().chain(self.min_should.iter().flat_map(|m| &m.conditions))
    }

    /// Parses filter JSON text.
    ///
    /// ```
    /// use shoal_payload::{Filter, Schema};
    /// let f = Filter::from_json(r#"{"must": [{"key": "tag", "match": {"any": ["a", "b"]}},
    ///                                          {"key": "year", "range": {"gte": 2000}}]}"#).unwrap();
    /// let schema = Schema::from_json(r#"{"tag": "keyword", "year": "keyword"}"#).unwrap();
    /// let e = f.validate(&schema).unwrap_err();
    /// assert_eq!(e.path, "filter.must[1].range");
    /// ```
    pub fn from_json(text: &str) -> Result<Filter, FilterError> {
        let v: Value = serde_json::from_slice(text.as_bytes())
            .map_err(|e| err("filter", FilterErrorKind::InvalidJson(e.to_string())))?;
        Filter::from_value(&v)
    }

    /// Parses an already decoded filter.
    pub fn from_value(v: &Value) -> Result<Filter, FilterError> {
        parse_filter(v, "filter", 0)
    }

    /// Checks every condition against `schema` (unknown field, operator or value not fitting
    /// the field's type). In nested mode every key must be a JSON path, any value fits any
    /// path, and `has_id` may not appear inside `nested`.
    pub fn validate(&self, schema: &Schema) -> Result<(), FilterError> {
        if schema.is_nested() {
            return validate_paths(self, "filter", false);
        }
        validate_filter(self, schema, "filter")
    }
}

fn parse_filter(v: &Value, path: &str, depth: usize) -> Result<Filter, FilterError> {
    if depth > MAX_FILTER_DEPTH {
        return Err(err(path, FilterErrorKind::TooDeep));
    }
    let obj = v.as_object().ok_or_else(|| err(path, FilterErrorKind::Expected("a filter object")))?;
    let mut f = Filter::default();
    for (k, val) in obj {
        let p = format!("{path}.{k}");
        match k.as_str() {
            "must" => f.must = parse_conditions(val, &p, depth)?,
            "should" => f.should = parse_conditions(val, &p, depth)?,
            "must_not" => f.must_not = parse_conditions(val, &p, depth)?,
            "min_should" => {
                if val.is_null() {
                    continue;
                }
                let o = val.as_object().ok_or_else(|| err(&p, FilterErrorKind::Expected("an object")))?;
                let mut ms = MinShould::default();
                for (mk, mv) in o {
                    let mp = format!("{p}.{mk}");
                    match mk.as_str() {
                        "conditions" => ms.conditions = parse_conditions(mv, &mp, depth)?,
                        "min_count" => {
                            ms.min_count = mv
                                .as_u64()
                                .and_then(|x| usize::try_from(x).ok())
                                .ok_or_else(|| err(&mp, FilterErrorKind::BadMinCount))?
                        }
                        _ => return Err(err(&mp, FilterErrorKind::UnknownOperator(mk.clone()))),
                    }
                }
                f.min_should = Some(ms);
            }
            _ => return Err(err(&p, FilterErrorKind::UnknownOperator(k.clone()))),
        }
    }
    Ok(f)
}

fn parse_conditions(v: &Value, path: &str, depth: usize) -> Result<Vec<Condition>, FilterError> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => {
            items.iter().enumerate().map(|(i, c)| parse_condition(c, &format!("{path}[{i}]"), depth)).collect()
        }
        Value::Object(_) => Ok(alloc::vec![parse_condition(v, path, depth)?]),
        _ => Err(err(path, FilterErrorKind::Expected("a condition or an array of conditions"))),
    }
}

fn key_of(obj: &Map<String, Value>, path: &str) -> Result<String, FilterError> {
    let p = format!("{path}.key");
    match obj.get("key") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(err(&p, FilterErrorKind::Expected("a field name string"))),
        None => Err(err(&p, FilterErrorKind::Expected("a key"))),
    }
}

fn only_key(obj: &Map<String, Value>, path: &str) -> Result<String, FilterError> {
    if let Some(k) = obj.keys().find(|k| *k != "key") {
        return Err(err(&format!("{path}.{k}"), FilterErrorKind::UnknownOperator(k.clone())));
    }
    key_of(obj, path)
}

fn parse_condition(v: &Value, path: &str, depth: usize) -> Result<Condition, FilterError> {
    let obj = v.as_object().ok_or_else(|| err(path, FilterErrorKind::Expected("a condition object")))?;
    let has = |k: &str| obj.contains_key(k);
    if has("key") {
        for k in obj.keys() {
            if !matches!(k.as_str(), "key" | "match" | "range") {
                return Err(err(&format!("{path}.{k}"), FilterErrorKind::UnknownOperator(k.clone())));
            }
        }
        let key = key_of(obj, path)?;
        let check = match (obj.get("match"), obj.get("range")) {
            (Some(m), None) => parse_match(m, &format!("{path}.match"))?,
            (None, Some(r)) => FieldCheck::Range(parse_range(r, &format!("{path}.range"))?),
            _ => return Err(err(path, FilterErrorKind::AmbiguousCondition)),
        };
        return Ok(Condition::Field { key, check });
    }
    if obj.len() == 1 {
        let (k, val) = obj.iter().next().expect("one entry");
        let p = format!("{path}.{k}");
        match k.as_str() {
            "is_empty" | "is_null" => {
                let o = val.as_object().ok_or_else(|| err(&p, FilterErrorKind::Expected("{\"key\": ...}")))?;
                let key = only_key(o, &p)?;
                return Ok(if k == "is_empty" { Condition::IsEmpty(key) } else { Condition::IsNull(key) });
            }
            "nested" => {
                let o = val
                    .as_object()
                    .ok_or_else(|| err(&p, FilterErrorKind::Expected("{\"key\": ..., \"filter\": ...}")))?;
                if let Some(k) = o.keys().find(|k| !matches!(k.as_str(), "key" | "filter")) {
                    return Err(err(&format!("{p}.{k}"), FilterErrorKind::UnknownOperator(k.clone())));
                }
                let key = key_of(o, &p)?;
                let inner = o
                    .get("filter")
                    .ok_or_else(|| err(&format!("{p}.filter"), FilterErrorKind::Expected("a filter")))?;
                let filter = parse_filter(inner, &format!("{p}.filter"), depth + 1)?;
                return Ok(Condition::Nested { key, filter });
            }
            "has_id" => {
                let items = val.as_array().ok_or_else(|| err(&p, FilterErrorKind::Expected("an array of ids")))?;
                let ids = items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        point_id_from_json(x).ok_or_else(|| {
                            err(&format!("{p}[{i}]"), FilterErrorKind::Expected("an unsigned integer or UUID id"))
                        })
                    })
                    .collect::<Result<Vec<PointId>, _>>()?;
                return Ok(Condition::HasId(ids));
            }
            _ => {}
        }
    }
    if obj.keys().all(|k| matches!(k.as_str(), "must" | "should" | "must_not" | "min_should")) {
        return Ok(Condition::Filter(parse_filter(v, path, depth + 1)?));
    }
    let unknown = obj.keys().find(|k| {
        !matches!(
            k.as_str(),
            "must" | "should" | "must_not" | "min_should" | "is_empty" | "is_null" | "has_id" | "nested"
        )
    });
    match unknown {
        Some(k) => Err(err(&format!("{path}.{k}"), FilterErrorKind::UnknownOperator(k.clone()))),
        None => Err(err(path, FilterErrorKind::AmbiguousCondition)),
    }
}

fn parse_literal(v: &Value, path: &str) -> Result<Literal, FilterError> {
    match v {
        Value::String(s) => Ok(Literal::Keyword(s.clone())),
        Value::Bool(b) => Ok(Literal::Bool(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Ok(Literal::Integer(i)),
            None => Err(err(path, FilterErrorKind::Expected("a string, an integer or a bool"))),
        },
        _ => Err(err(path, FilterErrorKind::Expected("a string, an integer or a bool"))),
    }
}

fn parse_match(v: &Value, path: &str) -> Result<FieldCheck, FilterError> {
    let obj = v.as_object().ok_or_else(|| err(path, FilterErrorKind::Expected("a match object")))?;
    if obj.len() != 1 {
        return Err(err(path, FilterErrorKind::Expected("exactly one of value, any, except")));
    }
    let (k, val) = obj.iter().next().expect("one entry");
    let p = format!("{path}.{k}");
    let list = |val: &Value| -> Result<Vec<Literal>, FilterError> {
        let items = val.as_array().ok_or_else(|| err(&p, FilterErrorKind::Expected("an array")))?;
        items.iter().enumerate().map(|(i, x)| parse_literal(x, &format!("{p}[{i}]"))).collect()
    };
    match k.as_str() {
        "value" => Ok(FieldCheck::Value(parse_literal(val, &p)?)),
        "any" => Ok(FieldCheck::Any(list(val)?)),
        "except" => Ok(FieldCheck::Except(list(val)?)),
        _ => Err(err(&p, FilterErrorKind::UnknownOperator(k.clone()))),
    }
}

fn parse_range(v: &Value, path: &str) -> Result<Range, FilterError> {
    let obj = v.as_object().ok_or_else(|| err(path, FilterErrorKind::Expected("a range object")))?;
    let mut r = Range::default();
    for (k, val) in obj {
        let p = format!("{path}.{k}");
        let bound = match val {
            Value::Null => None,
            Value::Number(n) => Some(n.as_f64().ok_or_else(|| err(&p, FilterErrorKind::Expected("a number")))?),
            _ => return Err(err(&p, FilterErrorKind::Expected("a number"))),
        };
        match k.as_str() {
            "gt" => r.gt = bound,
            "gte" => r.gte = bound,
            "lt" => r.lt = bound,
            "lte" => r.lte = bound,
            _ => return Err(err(&p, FilterErrorKind::UnknownOperator(k.clone()))),
        }
    }
    Ok(r)
}

fn literal_type_name(l: &Literal) -> &'static str {
    match l {
        Literal::Keyword(_) => "string",
        Literal::Integer(_) => "integer",
        Literal::Bool(_) => "bool",
    }
}

fn literal_fits(ty: FieldType, l: &Literal) -> bool {
    matches!(
        (ty, l),
        (FieldType::Keyword, Literal::Keyword(_))
            | (FieldType::Integer, Literal::Integer(_))
            | (FieldType::Bool, Literal::Bool(_))
    )
}

fn field_of(schema: &Schema, key: &str, path: &str) -> Result<FieldType, FilterError> {
    schema
        .field(key)
        .map(|(_, t)| t)
        .ok_or_else(|| err(&format!("{path}.key"), FilterErrorKind::UnknownField(key.to_string())))
}

fn validate_list(list: &[Condition], schema: &Schema, path: &str) -> Result<(), FilterError> {
    list.iter().enumerate().try_for_each(|(i, c)| validate_condition(c, schema, &format!("{path}[{i}]")))
}

fn validate_filter(f: &Filter, schema: &Schema, path: &str) -> Result<(), FilterError> {
    validate_list(&f.must, schema, &format!("{path}.must"))?;
    validate_list(&f.should, schema, &format!("{path}.should"))?;
    validate_list(&f.must_not, schema, &format!("{path}.must_not"))?;
    if let Some(ms) = &f.min_should {
        validate_list(&ms.conditions, schema, &format!("{path}.min_should.conditions"))?;
    }
    Ok(())
}

/// Nested mode: every key a path, no `has_id` inside `nested` (errors name the key at `path`).
fn validate_paths(f: &Filter, path: &str, in_nested: bool) -> Result<(), FilterError> {
    let bad = |why: String| err(path, FilterErrorKind::BadPath(why));
    for c in f.conditions() {
        let key = match c {
            Condition::Filter(inner) => {
                validate_paths(inner, path, in_nested)?;
                continue;
            }
            Condition::HasId(_) if in_nested => return Err(bad("has_id is not allowed inside nested".into())),
            Condition::HasId(_) => continue,
            Condition::IsEmpty(k) | Condition::IsNull(k) | Condition::Field { key: k, .. } => k,
            Condition::Nested { key, filter } => {
                validate_paths(filter, path, true)?;
                key
            }
        };
        if crate::path::parse(key).is_none() {
            return Err(bad(format!("\"{key}\" is not a JSON path")));
        }
    }
    Ok(())
}

fn validate_condition(c: &Condition, schema: &Schema, path: &str) -> Result<(), FilterError> {
    match c {
        Condition::Filter(f) => validate_filter(f, schema, path),
        Condition::Nested { .. } => Err(err(&format!("{path}.nested"), FilterErrorKind::NestedOnly)),
        Condition::HasId(_) => Ok(()),
        Condition::IsEmpty(k) => field_of(schema, k, &format!("{path}.is_empty")).map(|_| ()),
        Condition::IsNull(k) => field_of(schema, k, &format!("{path}.is_null")).map(|_| ()),
        Condition::Field { key, check } => {
            let ty = field_of(schema, key, path)?;
            let mismatch = |p: String, operator| err(&p, FilterErrorKind::TypeMismatch { field_type: ty, operator });
            let wrong = |p: String, l: &Literal| {
                err(&p, FilterErrorKind::WrongValue { field_type: ty, found: literal_type_name(l) })
            };
            match check {
                FieldCheck::Range(_) => {
                    if !matches!(ty, FieldType::Integer | FieldType::Float) {
                        return Err(mismatch(format!("{path}.range"), "range"));
                    }
                }
                FieldCheck::Value(l) => {
                    if !matches!(ty, FieldType::Keyword | FieldType::Integer | FieldType::Bool) {
                        return Err(mismatch(format!("{path}.match.value"), "match.value"));
                    }
                    if !literal_fits(ty, l) {
                        return Err(wrong(format!("{path}.match.value"), l));
                    }
                }
                FieldCheck::Any(list) | FieldCheck::Except(list) => {
                    let op = if matches!(check, FieldCheck::Any(_)) { "any" } else { "except" };
                    if !matches!(ty, FieldType::Keyword | FieldType::Integer) {
                        return Err(mismatch(
                            format!("{path}.match.{op}"),
                            if op == "any" { "match.any" } else { "match.except" },
                        ));
                    }
                    if let Some((i, l)) = list.iter().enumerate().find(|(_, l)| !literal_fits(ty, l)) {
                        return Err(wrong(format!("{path}.match.{op}[{i}]"), l));
                    }
                }
            }
            Ok(())
        }
    }
}

/// A point id in JSON: an integer `0..=2^64-1` (no fraction, no exponent, no sign) or a string
/// holding a UUID in any form [`PointId::parse_uuid`] reads.
pub fn point_id_from_json(v: &Value) -> Option<PointId> {
    match v {
        Value::Number(n) => n.as_u64().map(PointId::Num),
        Value::String(s) => PointId::parse_uuid(s).map(PointId::Uuid),
        _ => None,
    }
}
