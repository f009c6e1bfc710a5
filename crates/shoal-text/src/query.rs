//! Text queries: boolean clauses over analysed terms and phrases, and the query-string syntax.

use alloc::string::String;
use alloc::vec::Vec;

use crate::Analyzer;

/// Most terms a query keeps (over all clauses); later ones are ignored. It bounds the float
/// error margin of pruning (see `search`).
pub const MAX_QUERY_TERMS: usize = 256;

/// One clause: an analysed term, or a phrase of analysed terms with their offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Clause {
    /// A single analysed term.
    Term(String),
    /// Terms that must appear at these relative positions (the first offset is 0; offsets
    /// ascend and may skip numbers where the analyser dropped a stop word).
    Phrase(Vec<(String, u32)>),
}

impl Clause {
    /// The clause's terms with their offsets (a term has offset 0).
    pub fn terms(&self) -> impl Iterator<Item = (&str, u32)> {
        let (one, many) = match self {
            Clause::Term(t) => (Some((t.as_str(), 0)), &[][..]),
            Clause::Phrase(p) => (None, &p[..]),
        };
        one.into_iter().chain(many.iter().map(|(t, o)| (t.as_str(), *o)))
    }
}

/// A boolean query. A document matches when it matches every `must` clause, no `must_not`
/// clause and — only when `must` is empty — at least one `should` clause. Its score is the sum
/// of the BM25 scores of the terms of its matching `must` and `should` clauses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    /// Required clauses.
    pub must: Vec<Clause>,
    /// Optional clauses (at least one must match when `must` is empty).
    pub should: Vec<Clause>,
    /// Excluding clauses.
    pub must_not: Vec<Clause>,
}

impl Query {
    /// Parses a query string, analysing its words with `analyzer`:
    ///
    /// - words separated by white space; a plain word is a `should` clause;
    /// - `+word` is `must`, `-word` is `must_not`;
    /// - `"several words"` (also `+"..."`, `-"..."`) is a phrase; an unclosed quote runs to the end;
    /// - a word that analyses to several tokens (`e-mail`, CJK bigrams) becomes a phrase, one
    ///   that analyses to none (punctuation, stop words) is dropped;
    /// - duplicate clauses of the same kind are kept once; at most [`MAX_QUERY_TERMS`] terms.
    ///
    /// ```
    /// use shoal_text::{Analyzer, Clause, Query};
    /// let q = Query::parse(&Analyzer::default(), r#"Fox +jumps -"lazy dog" fox"#);
    /// assert_eq!(q.should, [Clause::Term("fox".into())]);
    /// assert_eq!(q.must, [Clause::Term("jumps".into())]);
    /// assert_eq!(q.must_not, [Clause::Phrase(vec![("lazy".into(), 0), ("dog".into(), 1)])]);
    /// ```
    pub fn parse(analyzer: &Analyzer, s: &str) -> Query {
        let mut q = Query::default();
        let mut terms = 0usize;
        let mut rest = s;
        loop {
            rest = rest.trim_start();
            let Some(c) = rest.chars().next() else { break };
            let mut kind = 0u8; // 0 should, 1 must, 2 must_not
            if c == '+' || c == '-' {
                kind = if c == '+' { 1 } else { 2 };
                rest = &rest[1..];
            }
            let text;
            if let Some(r) = rest.strip_prefix('"') {
                let end = r.find('"').unwrap_or(r.len());
                text = &r[..end];
                rest = r.get(end + 1..).unwrap_or("");
            } else {
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                text = &rest[..end];
                rest = &rest[end..];
            }
            let toks = analyzer.tokens(text);
            let Some(first) = toks.first().map(|t| t.position) else { continue };
            if terms + toks.len() > MAX_QUERY_TERMS {
                break;
            }
            terms += toks.len();
            let clause = if toks.len() == 1 {
                Clause::Term(toks.into_iter().next().map(|t| t.text).unwrap_or_default())
            } else {
                Clause::Phrase(toks.into_iter().map(|t| (t.text, t.position - first)).collect())
            };
            let list = match kind {
                0 => &mut q.should,
                1 => &mut q.must,
                _ => &mut q.must_not,
            };
            if !list.contains(&clause) {
                list.push(clause);
            }
        }
        q
    }

    /// Whether the query has no clause that can select documents (no `must`, no `should`).
    pub fn is_empty(&self) -> bool {
        self.must.is_empty() && self.should.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn parse_syntax() {
        let a = Analyzer::default();
        let q = Query::parse(&a, "  +\"New York\" -bad e-mail \"unclosed phrase here");
        assert_eq!(q.must, vec![Clause::Phrase(vec![("new".to_string(), 0), ("york".to_string(), 1)])]);
        assert_eq!(q.must_not, vec![Clause::Term("bad".to_string())]);
        assert_eq!(q.should.len(), 2);
        assert_eq!(
            q.should[1].terms().map(|(t, o)| (t.to_string(), o)).collect::<Vec<_>>(),
            vec![("unclosed".to_string(), 0), ("phrase".to_string(), 1), ("here".to_string(), 2)]
        );
        assert!(Query::parse(&a, " + - \"\" ... ").is_empty());
        assert_eq!(
            Query::parse(&a, "東京都").should,
            vec![Clause::Phrase(vec![("東京".to_string(), 0), ("京都".to_string(), 1)])]
        );
        let stop = Analyzer::new(crate::AnalyzerOptions { stop_words: true, ..Default::default() });
        assert_eq!(
            Query::parse(&stop, "\"out of time\"").should,
            vec![Clause::Phrase(vec![("out".to_string(), 0), ("time".to_string(), 2)])]
        );
        let long: String = (0..400).map(|i| alloc::format!("w{i} ")).collect();
        assert_eq!(Query::parse(&a, &long).should.len(), MAX_QUERY_TERMS);
    }
}
