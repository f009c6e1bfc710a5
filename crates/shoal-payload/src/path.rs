//! Qdrant's JSON paths over nested payloads (`docs/format.md`, "Nested payloads"): a first
//! key, then `.key`, `[]` (every element of an array) or `[n]` (element `n`); a key bare when
//! it is Unicode alphanumerics, `_` or `-`, else in double quotes. Resolving a path gives the
//! list of values it reaches, with no implicit step into arrays (`a.b` finds nothing when `a`
//! is an array; write `a[].b`).

use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value;

/// Longest path, in bytes.
pub const MAX_PATH: usize = 255;

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// An object's member.
    Key(String),
    /// Every element of an array (`[]`).
    All,
    /// Element `n` of an array (`[n]`).
    Index(usize),
}

fn bare(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Parses a path; `None` when it is not one (empty, a bad step, longer than [`MAX_PATH`]).
pub fn parse(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut rest = path;
    while !rest.is_empty() || steps.is_empty() {
        if let Some(r) = rest.strip_prefix('[') {
            let (inner, after) = r.split_once(']')?;
            steps.push(match inner {
                "" => Step::All,
                // Decimal digits, no leading zero (`usize` parsing alone would take `+1`, `01`).
                _ if inner.bytes().all(|b| b.is_ascii_digit()) && (inner == "0" || !inner.starts_with('0')) => {
                    Step::Index(inner.parse().ok()?)
                }
                _ => return None,
            });
            rest = after;
            continue;
        }
        if !steps.is_empty() {
            rest = rest.strip_prefix('.')?;
        }
        let (key, after) = match rest.strip_prefix('"') {
            Some(r) => r.split_once('"').filter(|(k, _)| !k.contains('\\'))?,
            None => rest.split_at(rest.find(|c: char| !bare(c)).unwrap_or(rest.len())),
        };
        if key.is_empty() && !rest.starts_with('"') {
            return None;
        }
        steps.push(Step::Key(key.into()));
        rest = after;
    }
    // A path starts with a key.
    (path.len() <= MAX_PATH && matches!(steps[0], Step::Key(_))).then_some(steps)
}

/// The values `steps` reach in `doc`, in document order.
pub fn resolve<'d>(doc: &'d Value, steps: &[Step]) -> Vec<&'d Value> {
    let mut now = alloc::vec![doc];
    for step in steps {
        let mut next = Vec::new();
        for v in now {
            match (step, v) {
                (Step::Key(k), Value::Object(o)) => next.extend(o.get(k.as_str())),
                (Step::All, Value::Array(a)) => next.extend(a.iter()),
                (Step::Index(i), Value::Array(a)) => next.extend(a.get(*i)),
                _ => {}
            }
        }
        now = next;
    }
    now
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(k: &str) -> Step {
        Step::Key(k.into())
    }

    #[test]
    fn paths_parse_as_qdrant_writes_them() {
        assert_eq!(parse("a"), Some(alloc::vec![key("a")]));
        assert_eq!(parse("metadata.topic"), Some(alloc::vec![key("metadata"), key("topic")]));
        assert_eq!(parse("tags[].name"), Some(alloc::vec![key("tags"), Step::All, key("name")]));
        assert_eq!(parse("a[2][]"), Some(alloc::vec![key("a"), Step::Index(2), Step::All]));
        assert_eq!(parse(r#"a."b c".d"#), Some(alloc::vec![key("a"), key("b c"), key("d")]));
        assert_eq!(parse("état-1_x"), Some(alloc::vec![key("état-1_x")]));
        for bad in ["", ".a", "a.", "a..b", "[]", "[0].a", "a[01]", "a[x]", "a[", r#"a."b"#, "a b", "a.[]"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        assert_eq!(parse(&"a".repeat(256)), None);
    }

    #[test]
    fn resolution_takes_no_implicit_step_into_arrays() {
        let doc = json!({"country": {"cities": [{"name": "Paris", "population": 2.1}, {"name": "Lyon"}]},
                         "a": [{"b": 1}, {"b": [2, 3]}], "n": null});
        let at = |p: &str| resolve(&doc, &parse(p).unwrap()).into_iter().cloned().collect::<Vec<_>>();
        assert_eq!(at("country.cities[].name"), [json!("Paris"), json!("Lyon")]);
        assert_eq!(at("country.cities[1].name"), [json!("Lyon")]);
        assert_eq!(at("country.cities[].population"), [json!(2.1)]);
        assert_eq!(at("a.b"), Vec::<Value>::new());
        assert_eq!(at("a[].b"), [json!(1), json!([2, 3])]);
        assert_eq!(at("a[].b[]"), [json!(2), json!(3)]);
        assert_eq!(at("n"), [Value::Null]);
        assert_eq!(at("missing.x"), Vec::<Value>::new());
    }
}
