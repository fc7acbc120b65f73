//! JSON as models write it: a reply that should be a JSON object often carries `//` or `/* */`
//! comments, or a comma before a closing bracket. [`lenient`] reads those as the object the
//! model meant; everything else must be JSON.

use serde_json::Value;

/// Parse `text` as JSON; failing that, parse it again without comments and trailing commas
/// (outside strings). `None` when it is not JSON either way.
pub fn lenient(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok().or_else(|| serde_json::from_str(&relax(text)?).ok())
}

/// `text` without comments and trailing commas, or `None` when there were none to remove.
fn relax(text: &str) -> Option<String> {
    let (no_comments, a) = outside_strings(text, |chars, i, out| match (chars[i], chars.get(i + 1)) {
        ('/', Some('/')) => Some(chars[i..].iter().position(|&c| c == '\n').map_or(chars.len(), |n| i + n)),
        ('/', Some('*')) => {
            let end = (i + 2..chars.len()).find(|&j| chars[j] == '*' && chars.get(j + 1) == Some(&'/'));
            Some(end.map_or(chars.len(), |j| j + 2))
        }
        (c, _) => {
            out.push(c);
            None
        }
    });
    let (relaxed, b) = outside_strings(&no_comments, |chars, i, out| {
        let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
        if chars[i] == ',' && matches!(next, Some('}' | ']')) {
            Some(i + 1)
        } else {
            out.push(chars[i]);
            None
        }
    });
    (a || b).then_some(relaxed)
}

/// Copy `text`, strings verbatim; every other character goes to `step`, which pushes what it
/// keeps and returns `Some(next index)` when it skips text. Also says whether anything was
/// skipped.
fn outside_strings(text: &str, mut step: impl FnMut(&[char], usize, &mut String) -> Option<usize>) -> (String, bool) {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut in_string, mut skipped) = (0, false, false);
    while i < chars.len() {
        let c = chars[i];
        if in_string || c == '"' {
            out.push(c);
            if in_string && c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 1;
            } else if c == '"' {
                in_string = !in_string;
            }
            i += 1;
            continue;
        }
        match step(&chars, i, &mut out) {
            Some(next) => {
                skipped = true;
                i = next;
            }
            None => i += 1,
        }
    }
    (out, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_json_is_read_as_it_is() {
        assert_eq!(lenient(r#"{"a": [1, 2]}"#), Some(json!({"a": [1, 2]})));
        assert_eq!(lenient("not json"), None);
        assert_eq!(lenient(""), None);
    }

    #[test]
    fn comments_and_trailing_commas_are_forgiven() {
        let reply = r#"{
            // the steps
            "steps": [
                {"goal": "count", "sql": "SELECT 1",}, /* the only one */
            ],
        }"#;
        assert_eq!(lenient(reply), Some(json!({"steps": [{"goal": "count", "sql": "SELECT 1"}]})));
    }

    #[test]
    fn strings_keep_what_looks_like_comments_and_commas() {
        let reply = r#"{"sql": "SELECT 'a,]' -- no\n, '/* x */'", "url": "http://x",}"#;
        assert_eq!(lenient(reply), Some(json!({"sql": "SELECT 'a,]' -- no\n, '/* x */'", "url": "http://x"})));
        assert_eq!(lenient(r#"{"q": "say \"hi\", //ok",}"#), Some(json!({"q": "say \"hi\", //ok"})));
    }

    #[test]
    fn broken_json_stays_broken() {
        assert_eq!(lenient(r#"{"a": 1"#), None);
        assert_eq!(lenient(r#"{"a": 1,, }"#), None);
        assert_eq!(lenient("/* only a comment */"), None);
    }
}
