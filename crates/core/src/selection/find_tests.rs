//! The candidate policy against a store held in memory: what is read and described, and what
//! never is, without PostgreSQL.

use super::*;
use crate::schema::{Column, ForeignKey};
use crate::selection::{Cosines, SelectOptions};

/// A word of a table with its occurrences per field.
type Posting = (String, [u32; FIELDS]);

fn table(schema: &str, name: &str, columns: &[&str], comment: Option<&str>) -> Table {
    Table {
        schema: schema.into(),
        name: name.into(),
        kind: "table".into(),
        comment: comment.map(str::to_string),
        columns: columns.iter().map(|c| Column { name: c.to_string(), data_type: "text".into(), not_null: false, comment: None }).collect(),
        primary_key: vec![],
        foreign_keys: vec![],
    }
}

fn references(mut t: Table, to: &[&str]) -> Table {
    for r in to {
        t.foreign_keys.push(ForeignKey {
            columns: vec![format!("{}_id", r.rsplit('.').next().unwrap())],
            references: r.to_string(),
            ref_columns: vec!["id".into()],
        });
    }
    t
}

/// A database as the store shows it: every table (key = position), the stored index of them
/// all, which the caller may read, which describe leaves out, DDL notes, the nearest by
/// embedding; and a log of what was asked.
#[derive(Default)]
struct Fake {
    tables: Vec<Table>,
    postings: HashMap<String, Vec<(u32, [u32; FIELDS])>>,
    lengths: Vec<[u32; FIELDS]>,
    unreadable: HashSet<u32>,
    left_out: HashSet<u32>,
    notes: Vec<(u32, Vec<String>)>,
    nearest: Vec<u32>,
    described: Vec<u32>,
    describe_calls: usize,
    checked: usize,
    postings_read: usize,
}

impl Fake {
    fn new(tables: Vec<Table>) -> Fake {
        let profiles: Vec<TableProfile> = tables.iter().cloned().map(TableProfile::new).collect();
        let catalog = Catalog::new(profiles, &[]);
        let mut fake = Fake { tables, ..Default::default() };
        for (i, t) in fake.tables.iter().enumerate() {
            let terms = catalog.stored_terms(&t.qualified()).unwrap();
            fake.lengths.push(terms.lengths());
            for (term, tf) in terms.terms() {
                fake.postings.entry(term.clone()).or_default().push((i as u32, *tf));
            }
        }
        fake
    }

    fn key(&self, qualified: &str) -> u32 {
        self.tables.iter().position(|t| t.qualified() == qualified).unwrap_or_else(|| panic!("no table {qualified}")) as u32
    }

    fn index(&self) -> IndexStats {
        let n = self.lengths.len();
        let mut avg_len = [None; FIELDS];
        for (f, a) in avg_len.iter_mut().enumerate().take(4) {
            *a = Some(self.lengths.iter().map(|l| f64::from(l[f])).sum::<f64>() / n as f64);
        }
        let mut names = BTreeMap::new();
        for (term, ps) in &self.postings {
            let in_names = ps.iter().filter(|(_, tf)| tf[..3].iter().any(|&x| x > 0)).count() as u32;
            if in_names > 0 {
                names.insert(term.clone(), in_names);
            }
        }
        IndexStats { version: 1, documents: n, avg_len, names }
    }

    fn names(&self, keys: &[u32]) -> Vec<String> {
        keys.iter().map(|k| self.tables[*k as usize].qualified()).collect()
    }
}

impl SelectionStore for Fake {
    type Key = u32;
    fn document_frequencies(&mut self, terms: &[String]) -> HashMap<String, u32> {
        terms.iter().filter_map(|t| Some((t.clone(), self.postings.get(t)?.len() as u32))).collect()
    }
    fn postings(&mut self, terms: &[String], limit: Option<usize>) -> Vec<(u32, DocTerms)> {
        let mut by: BTreeMap<u32, Vec<(String, [u32; FIELDS])>> = BTreeMap::new();
        for t in terms {
            for (k, tf) in self.postings.get(t).into_iter().flatten() {
                by.entry(*k).or_default().push((t.clone(), *tf));
            }
        }
        let mut rows: Vec<(u32, Vec<Posting>)> = by.into_iter().collect();
        if let Some(limit) = limit {
            let in_names = |ts: &[Posting]| ts.iter().map(|(_, tf)| tf[..3].iter().sum::<u32>()).sum::<u32>();
            rows.sort_by(|a, b| in_names(&b.1).cmp(&in_names(&a.1)).then(a.0.cmp(&b.0)));
            rows.truncate(limit);
            rows.sort_by_key(|(k, _)| *k);
        }
        self.postings_read += rows.len();
        rows.into_iter().map(|(k, terms)| (k, DocTerms::from_stored(terms, self.lengths[k as usize]))).collect()
    }
    fn touched(&mut self, terms: &[String], limit: usize) -> Vec<u32> {
        let mut hits: Vec<(usize, u32)> =
            self.notes.iter().map(|(k, words)| (words.iter().filter(|w| terms.contains(w)).count(), *k)).filter(|(n, _)| *n > 0).collect();
        hits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        hits.into_iter().take(limit).map(|(_, k)| k).collect()
    }
    fn readable_first(&mut self, keys: &[u32], limit: usize) -> Vec<u32> {
        self.checked += keys.len();
        keys.iter().copied().filter(|k| !self.unreadable.contains(k)).take(limit).collect()
    }
    fn describe(&mut self, keys: Vec<u32>) -> Vec<(u32, Table)> {
        self.describe_calls += 1;
        let out: Vec<(u32, Table)> = keys
            .into_iter()
            .filter(|k| !self.unreadable.contains(k) && !self.left_out.contains(k))
            .map(|k| (k, self.tables[k as usize].clone()))
            .collect();
        self.described.extend(out.iter().map(|(k, _)| *k));
        out
    }
    fn neighbours(&mut self, tables: &[(u32, Table)], anchors: &[u32], known: &[u32], max_referrers: usize) -> Vec<u32> {
        let mut out: Vec<u32> = tables.iter().flat_map(|(_, t)| t.foreign_keys.iter().map(|fk| self.key(&fk.references))).collect();
        let anchor_names: HashSet<String> = self.names(anchors).into_iter().collect();
        let junctions = self
            .tables
            .iter()
            .enumerate()
            .filter(|(i, t)| {
                !known.contains(&(*i as u32)) && t.foreign_keys.iter().filter(|fk| anchor_names.contains(&fk.references)).count() >= 2
            })
            .map(|(i, _)| i as u32)
            .take(max_referrers);
        out.extend(junctions);
        out.sort();
        out.dedup();
        out
    }
    fn nearest(&mut self, _question: &[f32], limit: usize) -> Vec<u32> {
        self.nearest.iter().copied().filter(|k| !self.unreadable.contains(k)).take(limit).collect()
    }
    fn values(&mut self, _tables: &[(u32, Table)]) -> HashMap<String, Vec<ColumnValues>> {
        HashMap::new()
    }
    fn schema_profiles(&mut self) -> Vec<SchemaProfile> {
        Vec::new()
    }
}

/// Generic tables that share the words `record` and `area` (`n` of them, in ten schemas).
fn filler(n: usize) -> Vec<Table> {
    (0..n)
        .map(|i| table(&format!("area{}", i % 10), &format!("thing{i}"), &["id", "label", "created_at"], Some("records of the area")))
        .collect()
}

fn no_embedding<'q>() -> Option<&'q [f32]> {
    None
}

fn picked(found: &Found<'_, u32>, question: &str, k: usize) -> Vec<String> {
    let options = SelectOptions { k, max_join_tables: 0, ..Default::default() };
    found.catalog.select_tables(question, &Cosines::new(), &options).unwrap().into_iter().map(|p| p.table).collect()
}

#[test]
fn tables_the_caller_cannot_read_take_no_candidate_place() {
    let mut tables = filler(200);
    for i in 0..40 {
        tables.push(table("vault", &format!("invoice_ledger{i}"), &["invoice_id", "invoice_amount"], Some("invoices invoices")));
    }
    tables.push(table("billing", "invoices", &["id", "amount"], None));
    let mut fake = Fake::new(tables);
    fake.unreadable = (200..240).collect();
    let index = fake.index();
    let found = find(&mut fake, &index, "total amount of invoices", 5, no_embedding);
    let described = fake.names(&fake.described);
    assert!(described.contains(&"billing.invoices".to_string()), "{described:?}");
    assert!(described.iter().all(|n| !n.starts_with("vault.")), "{described:?}");
    assert_eq!(picked(&found, "total amount of invoices", 1), ["billing.invoices"]);
    // The privileges of at most READABLE_CHECKED times the candidates taken were checked.
    assert!(fake.checked <= READABLE_CHECKED * CANDIDATES + 1, "{}", fake.checked);
}

/// Another role floods the index with tables the caller cannot read that hold the question's
/// words more often than the caller's own (each word common, so only the tables with them most
/// often in their names are read at first): the caller's tables are still found.
#[test]
fn a_flood_of_unreadable_look_alikes_does_not_hide_the_caller_s_tables() {
    let mut tables = filler(50);
    for i in 0..500 {
        tables.push(table(
            "att",
            &format!("singers_concerts_performed_{i}"),
            &["singer", "concert", "performed", "singers_performed", "concert_singer"],
            Some("singers performed in concerts"),
        ));
    }
    tables.push(table("music", "singer", &["id", "name", "country"], None));
    tables.push(references(table("music", "concert", &["id", "singer_id", "performed_on"], None), &["music.singer"]));
    let mut fake = Fake::new(tables);
    fake.unreadable = (50..550).collect();
    let index = fake.index();
    let question = "which singers performed in concerts?";
    let found = find(&mut fake, &index, question, 5, no_embedding);
    let described = fake.names(&fake.described);
    assert!(described.contains(&"music.singer".to_string()) && described.contains(&"music.concert".to_string()), "{described:?}");
    assert!(described.iter().all(|n| !n.starts_with("att.")), "{described:?}");
    assert!(!picked(&found, question, 2).is_empty());
    // Privileges of at most READABLE_WINDOWS windows per read were checked.
    assert!(fake.checked <= 2 * READABLE_WINDOWS * READABLE_CHECKED * CANDIDATES, "{}", fake.checked);
}

#[test]
fn touched_relations_are_candidates_only_by_the_question_s_words() {
    let mut tables = filler(100);
    tables.push(table("ops", "shipments", &["id", "shipped_on"], None));
    tables.push(table("hr", "payroll", &["id", "salary"], None));
    let mut fake = Fake::new(tables);
    let (ship, pay) = (fake.key("ops.shipments"), fake.key("hr.payroll"));
    // Both were touched by DDL since the index was written: the index holds neither.
    fake.postings.values_mut().for_each(|p| p.retain(|(k, _)| *k != ship && *k != pay));
    fake.notes = vec![(pay, vec!["payroll".into(), "salary".into()]), (ship, vec!["shipment".into(), "shipped".into()])];
    let index = fake.index();
    let found = find(&mut fake, &index, "how many shipments last week", 5, no_embedding);
    assert_eq!(found.touched, vec![ship]);
    assert!(fake.described.contains(&ship) && !fake.described.contains(&pay), "{:?}", fake.names(&fake.described));
    assert_eq!(found.counts.changed_relations, 1);
}

#[test]
fn referenced_and_junction_tables_come_with_the_candidates() {
    let mut tables = filler(50);
    tables.push(table("shop", "customers", &["id", "name"], None));
    tables.push(table("shop", "products", &["id", "title"], None));
    tables.push(references(table("shop", "orders", &["id", "customer_id", "placed_on"], None), &["shop.customers"]));
    tables.push(references(table("shop", "wishlist", &["customer_id", "product_id"], None), &["shop.customers", "shop.products"]));
    let mut fake = Fake::new(tables);
    let index = fake.index();
    let found = find(&mut fake, &index, "orders placed per day", 3, no_embedding);
    let described = fake.names(&fake.described);
    // Orders' customers, through its foreign key.
    assert!(described.contains(&"shop.customers".to_string()), "{described:?}");
    assert!(found.counts.join_tables_described >= 1);
    // A junction table of two candidates.
    let mut fake = Fake::new(fake.tables.clone());
    let index = fake.index();
    let found = find(&mut fake, &index, "customers and products", 3, no_embedding);
    assert!(fake.names(&fake.described).contains(&"shop.wishlist".to_string()), "{:?}", fake.names(&fake.described));
    // Described in catalog order.
    let order: Vec<String> = found.described.iter().map(|(_, t)| t.qualified()).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
}

/// `partitions` tables that rank first by words and are left out when described (as a
/// partition is), and their parent, which ranks after them.
fn partitioned(partitions: usize) -> Fake {
    let mut tables: Vec<Table> = (0..partitions)
        .map(|i| table("metrics", &format!("measurements_p{i}"), &["measurement", "measured_at"], Some("measurements")))
        .collect();
    tables.push(table("metrics", "measurement_log", &["id", "note"], None));
    let mut fake = Fake::new(tables);
    fake.left_out = (0..partitions as u32).collect();
    fake
}

#[test]
fn candidates_left_out_when_described_are_replaced_in_rounds() {
    // 30 partitions: the first candidates (20) are all left out, the next round reaches the
    // parent.
    let mut fake = partitioned(30);
    let parent = fake.key("metrics.measurement_log");
    let index = fake.index();
    let found = find(&mut fake, &index, "latest measurements", 2, no_embedding);
    assert!(found.described.iter().any(|(k, _)| *k == parent), "{:?}", fake.names(&fake.described));
    // 300 partitions: the rounds end within the readable tables checked (twice the candidates
    // taken; ROUNDS bounds them besides), and the parent, past them, is not reached.
    let mut fake = partitioned(300);
    let parent = fake.key("metrics.measurement_log");
    let index = fake.index();
    let found = find(&mut fake, &index, "latest measurements", 2, no_embedding);
    // The first candidates, their joins, and at most ROUNDS rounds.
    assert!(fake.describe_calls <= 2 + ROUNDS, "{}", fake.describe_calls);
    assert!(fake.checked <= READABLE_CHECKED * CANDIDATES, "{}", fake.checked);
    assert!(found.described.iter().all(|(k, _)| *k != parent));
}

#[test]
fn the_nearest_by_embedding_are_described_once_the_embedding_is_there() {
    let mut tables = filler(60);
    tables.push(table("crm", "clients", &["id", "full_name"], Some("people who buy")));
    let mut fake = Fake::new(tables);
    let clients = fake.key("crm.clients");
    fake.nearest = vec![clients];
    let index = fake.index();
    // Without an embedding the table no word finds is not described.
    let found = find(&mut fake, &index, "customers who spent the most", 5, no_embedding);
    assert!(!fake.described.contains(&clients));
    assert!(found.question.is_none() && found.times.embedding_wait_ms.is_none());
    let v = [0.5_f32, 0.5];
    let mut fake = Fake { described: Vec::new(), ..fake };
    let found = find(&mut fake, &index, "customers who spent the most", 5, || Some(&v[..]));
    assert!(fake.described.contains(&clients));
    assert_eq!(found.question, Some(&v[..]));
}

/// Tables named alike in `schemas` schemas of `per` tables each (`s1.t1_1` …), with the same
/// five columns.
fn lookalikes(schemas: usize, per: usize) -> Vec<Table> {
    let mut tables = Vec::new();
    for s in 1..=schemas {
        for t in 1..=per {
            tables.push(table(&format!("s{s}"), &format!("t{s}_{t}"), &["id", "name", "amount", "created_at", "status"], None));
        }
    }
    tables
}

/// Look-alike tables (`s1.t1_1` … `s50.t50_200`): a question that names one by its identifier
/// finds it.
#[test]
fn a_table_named_by_an_identifier_with_digits_is_found() {
    let mut fake = Fake::new(lookalikes(50, 200));
    let index = fake.index();
    let question = "how many rows in t3_9?";
    let found = find(&mut fake, &index, question, 5, no_embedding);
    assert_eq!(picked(&found, question, 1), ["s3.t3_9"]);
    let question = "total amount by status in t42_117";
    let found = find(&mut fake, &index, question, 5, no_embedding);
    assert_eq!(picked(&found, question, 1), ["s42.t42_117"]);
}

/// Look-alike tables and a question whose words every table holds: at most COMMON_ONLY_READ
/// tables' postings are read, and the tables picked are still ones that hold its words.
#[test]
fn words_every_table_holds_read_a_bounded_part_of_the_index() {
    let mut fake = Fake::new(lookalikes(20, 100));
    let index = fake.index();
    let question = "total amount by status";
    let found = find(&mut fake, &index, question, 5, no_embedding);
    assert!(fake.postings_read <= COMMON_ONLY_READ, "{}", fake.postings_read);
    assert_eq!(found.counts.postings_tables, fake.postings_read);
    assert_eq!(picked(&found, question, 5).len(), 5);
    // A rare word: only its postings are read (the common ones count through the candidates'
    // whole descriptions), with no limit.
    let mut fake = Fake { postings_read: 0, described: Vec::new(), ..fake };
    let found = find(&mut fake, &index, "total amount in t7_42", 5, no_embedding);
    assert_eq!(fake.postings_read, 1);
    assert_eq!(picked(&found, "total amount in t7_42", 1), ["s7.t7_42"]);
}
