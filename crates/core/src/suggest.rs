//! Questions to start from: which of the verified queries a role may be answered from to
//! offer it ([`choose`]). The glue reads the candidates (trusted verifiers' queries over tables
//! the role may read) and runs each chosen one's SQL as the role before offering it.

/// One verified query a role could be offered.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub id: i64,
    pub question: String,
    /// Times this role was answered from it or shown it.
    pub uses: i64,
    /// The role verified it itself (by feedback on its own answer, or by hand).
    pub own: bool,
    /// The relations it reads, as text, to spread the offer over the data.
    pub tables: Vec<String>,
}

/// At most `n` of `candidates` to offer, most useful first: the role's own and most used
/// first, one question per wording (case and white space aside), and at most two per set of
/// tables while others are left, so that the offer spreads over what the role may ask about.
pub fn choose(candidates: &[Candidate], n: usize) -> Vec<&Candidate> {
    let mut ranked: Vec<&Candidate> = candidates.iter().collect();
    ranked.sort_by(|a, b| b.own.cmp(&a.own).then(b.uses.cmp(&a.uses)).then(a.id.cmp(&b.id)));
    let wording = |c: &Candidate| c.question.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let mut seen: Vec<String> = Vec::new();
    let mut unique: Vec<&Candidate> = Vec::new();
    for c in ranked {
        let w = wording(c);
        if w.is_empty() || seen.contains(&w) {
            continue;
        }
        seen.push(w);
        unique.push(c);
    }
    let mut out: Vec<&Candidate> = Vec::new();
    let mut held: Vec<&Candidate> = Vec::new();
    for c in unique {
        let same = out.iter().filter(|o| o.tables == c.tables).count();
        if same >= 2 {
            held.push(c);
        } else {
            out.push(c);
        }
    }
    out.extend(held);
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: i64, q: &str, uses: i64, own: bool, tables: &[&str]) -> Candidate {
        Candidate { id, question: q.into(), uses, own, tables: tables.iter().map(|t| t.to_string()).collect() }
    }

    #[test]
    fn own_and_used_first_one_per_wording_spread_over_tables() {
        let all = vec![
            c(1, "How many cities are there?", 0, false, &["cities"]),
            c(2, "how many  cities are there?", 9, false, &["cities"]),
            c(3, "Which cities are in Japan?", 5, false, &["cities"]),
            c(4, "Which city is largest?", 4, false, &["cities"]),
            c(5, "How many chefs are there?", 1, false, &["chefs"]),
            c(6, "Average stars per year?", 0, true, &["reviews"]),
            c(7, "", 100, true, &["x"]),
        ];
        let got: Vec<i64> = choose(&all, 4).iter().map(|c| c.id).collect();
        // Own first; the most used wording of a duplicate; two per table set before a third.
        assert_eq!(got, vec![6, 2, 3, 5]);
        let got: Vec<i64> = choose(&all, 10).iter().map(|c| c.id).collect();
        assert_eq!(got, vec![6, 2, 3, 5, 4]);
        assert!(choose(&all, 0).is_empty());
        assert!(choose(&[], 3).is_empty());
    }
}
