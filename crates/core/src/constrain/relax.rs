//! What the SQL grammar lets a model write as it likes: keywords and function names in upper,
//! lower or capitalized case, and a line break with indentation wherever a space stands between
//! tokens.
//!
//! The grammar's rules are written with keywords in capitals and single spaces; [`relax`]
//! rewrites a rule's body so that each keyword literal matches in those cases (`COUNT(` becomes
//! `kw-count "("`, with `kw-count ::= "COUNT" | "count" | "Count"` written once) and each space
//! between tokens is the rule `ws` (one space, or a line break and up to eight spaces or tabs of
//! indentation). Identifiers are left as they are: a quoted one is matched exactly (PostgreSQL
//! would not find it otherwise), an unquoted one is lower case (PostgreSQL folds it), and so is
//! a text inside quotes (a literal value, a time stamp's space).

use std::collections::BTreeSet;

/// The rule of white space between tokens: bounded, so a constrained model cannot loop in it.
pub const WS_RULE: &str = "\" \" | \"\\n\" [ \\t]{0,8}";

/// `body` with keyword literals in upper, lower or capitalized case, and, when `spaces`, each space of a literal the
/// rule `ws`. A keyword becomes a reference to its rule (`COUNT` to `kw-count`), whose name is
/// added to `keywords`; [`keyword_rule`] writes it once per grammar.
pub fn relax(body: &str, spaces: bool, keywords: &mut BTreeSet<String>) -> String {
    let bytes = body.as_bytes();
    let mut out = String::with_capacity(body.len() + 16);
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'[' => {
                // A character class: copied as it is, escapes included.
                i += 1;
                while i < bytes.len() && bytes[i] != b']' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                let end = i.min(bytes.len());
                i = (i + 1).min(bytes.len());
                if let Some(relaxed) = literal_relaxed(&body[start + 1..end], spaces, keywords) {
                    out.push_str(&body[copied..start]);
                    out.push_str(&relaxed);
                    copied = i;
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&body[copied.min(body.len())..]);
    out
}

/// The body of the rule of a keyword [`relax`] referred to: `"COUNT" | "count" | "Count"` for
/// `kw-count`. A keyword is written in one case from its first letter to its last: a model
/// held to the grammar letter by letter otherwise drifts between cases inside a word
/// (`cuRRENT_DATE`) and, once a word is mangled, writes on from there.
pub fn keyword_rule(name: &str) -> String {
    let word = name.trim_start_matches("kw-");
    let capitalized: String = word.chars().take(1).map(|c| c.to_ascii_uppercase()).chain(word.chars().skip(1)).collect();
    let mut cases = vec![word.to_ascii_uppercase(), word.to_string(), capitalized];
    let mut seen = BTreeSet::new();
    cases.retain(|c| seen.insert(c.clone()));
    cases.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(" | ")
}

/// One literal's content (as escaped in GBNF) relaxed, or `None` when it stays as written: a
/// quoted identifier, a fence, or nothing to relax.
fn literal_relaxed(content: &str, spaces: bool, keywords: &mut BTreeSet<String>) -> Option<String> {
    let bytes = content.as_bytes();
    let relaxes =
        |i: usize| (spaces && bytes[i] == b' ') || (bytes[i].is_ascii_uppercase() && bytes.get(i + 1).is_some_and(u8::is_ascii_uppercase));
    if !(0..bytes.len()).any(relaxes) || content.contains("\\\"") || content.contains("```") {
        return None;
    }
    let mut out = String::with_capacity(content.len() * 2 + 4);
    let mut pieces = 0;
    let mut text_start = 0;
    let mut push = |out: &mut String, piece: &str, quoted: bool| {
        out.push(' ');
        if quoted {
            out.push('"');
        }
        out.push_str(piece);
        if quoted {
            out.push('"');
        }
        pieces += 1;
    };
    let mut word = String::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        let run = bytes[i..].iter().take_while(|c| c.is_ascii_uppercase()).count();
        if run >= 2 || (spaces && bytes[i] == b' ') {
            if i > text_start {
                push(&mut out, &content[text_start..i], true);
            }
            if run >= 2 {
                word.clear();
                word.push_str("kw-");
                word.extend(content[i..i + run].chars().map(|c| c.to_ascii_lowercase()));
                if !keywords.contains(&word) {
                    keywords.insert(word.clone());
                }
                push(&mut out, &word, false);
                i += run;
            } else {
                push(&mut out, "ws", false);
                i += 1;
            }
            text_start = i;
        } else {
            i += 1;
        }
    }
    let end = bytes.len().min(content.len());
    if end > text_start {
        push(&mut out, &content[text_start..end], true);
    }
    let inner = &out[1..];
    Some(if pieces == 1 { inner.to_string() } else { format!("({inner})") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_in_any_case_and_spaces_as_ws() {
        let mut kw = BTreeSet::new();
        assert_eq!(relax("\"COUNT(\" x \")\"", true, &mut kw), "(kw-count \"(\") x \")\"");
        assert_eq!(relax("\" AS \" alias", true, &mut kw), "(ws kw-as ws) alias");
        assert_eq!(relax("\"ORDER BY 1\"", false, &mut kw), "(kw-order \" \" kw-by \" 1\")");
        assert_eq!(relax("\"DISTINCT\"?", false, &mut kw), "kw-distinct?");
        // Identifiers, quoted or not, character classes and fences stay.
        assert_eq!(relax("\"r.name\" | \"\\\"Name\\\"\" | [A-Z \"]", true, &mut kw), "\"r.name\" | \"\\\"Name\\\"\" | [A-Z \"]");
        assert_eq!(relax("\"```sql\\n\" q", true, &mut kw), "\"```sql\\n\" q");
        // One capital is no keyword (an alias T1), escapes are kept.
        assert_eq!(relax("\"T1.x\" \"\\n\"", true, &mut kw), "\"T1.x\" \"\\n\"");
        assert_eq!(relax("\"INTERVAL '\"", false, &mut kw), "(kw-interval \" '\")");
        assert_eq!(
            kw.iter().map(String::as_str).collect::<Vec<_>>(),
            ["kw-as", "kw-by", "kw-count", "kw-distinct", "kw-interval", "kw-order"]
        );
        assert_eq!(keyword_rule("kw-as"), "\"AS\" | \"as\" | \"As\"");
        assert_eq!(keyword_rule("kw-current_date"), "\"CURRENT_DATE\" | \"current_date\" | \"Current_date\"");
    }
}
