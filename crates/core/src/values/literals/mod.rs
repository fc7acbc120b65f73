//! Finding the string literals a query compares with text columns, resolved to the real
//! `schema.table.column`.
//!
//! Recognised comparisons (either operand order where it applies), with the column optionally
//! wrapped in parentheses or a cast (`city::text = 'LA'`):
//!
//! | SQL | [`LiteralKind`] |
//! |---|---|
//! | `col = 'v'` | `Eq` |
//! | `col <> 'v'`, `col != 'v'` | `NotEq` |
//! | `col [NOT] IN ('a', 'b')`, `col = ANY(ARRAY['a', 'b'])` | `In` |
//! | `col [NOT] LIKE '%v%'`, `ILIKE` | `Like` (the value is the pattern's core, see [`LikePattern`]) |
//! | `col [NOT] BETWEEN 'a' AND 'b'` | `Between` |
//!
//! Column references are resolved the way PostgreSQL does: unquoted identifiers fold to lower
//! case; a qualified reference names a table alias, or a table (optionally schema-qualified)
//! that has no alias; an unqualified one is the column of the single relation in scope that has
//! it, looking outwards from correlated subqueries. Tables resolve through the query's CTEs,
//! then the [`Catalog`] (unqualified names through its search path). A CTE's or derived
//! table's column maps back to its source `table.column` when it is a plain column projection;
//! a column computed by an expression has no source and its literals are not reported. Only
//! columns the catalog marks as text-like are reported.

mod catalog;
mod found;
mod scan;

use sqlparser::ast::{
    Expr, Query, Select, SelectItem, SelectItemQualifiedWildcardKind, SetExpr, Statement, TableAlias, TableFactor, TableWithJoins, Visit,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Location;

use scan::{column_parts, ident_name, object_name_parts, RawKind, Scanner};

use crate::guard::CheckedSql;
pub use crate::sqltext::quote_ident;
pub use catalog::{Catalog, CatalogColumn, CatalogTable, QualifiedName};
pub use found::{LikePattern, LiteralKind, LiteralRef, TextRange};

/// Errors of literal extraction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiteralError {
    /// The SQL does not parse in the PostgreSQL dialect.
    #[error("cannot parse the SQL: {0}")]
    Parse(String),
}

/// Parses `sql` (PostgreSQL dialect, any number of statements) and lists every string literal
/// compared with a text column, in text order. See the [module documentation](self).
pub fn find_literals(sql: &str, catalog: &Catalog) -> Result<Vec<LiteralRef>, LiteralError> {
    #[cfg(test)]
    crate::sqltext::parses::add();
    let statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| LiteralError::Parse(e.to_string()))?;
    Ok(literals_of(&statements, sql, catalog))
}

/// [`find_literals`] of a statement the guard checked, from the tree it parsed (parsed again
/// only when the tree's locations are not the text's).
pub fn find_literals_in(checked: &CheckedSql, catalog: &Catalog) -> Result<Vec<LiteralRef>, LiteralError> {
    match checked.located() {
        Some(statement) => Ok(literals_of(std::slice::from_ref(statement), &checked.sql, catalog)),
        None => find_literals(&checked.sql, catalog),
    }
}

fn literals_of(statements: &[Statement], sql: &str, catalog: &Catalog) -> Vec<LiteralRef> {
    let mut analyzer = Analyzer { catalog, offsets: LineOffsets::new(sql), sql, found: Vec::new() };
    for statement in statements {
        if let Statement::Query(query) = statement {
            analyzer.query(query, None, &[]);
        }
    }
    let mut found = analyzer.found;
    found.sort_by_key(|l| l.range);
    found.dedup_by_key(|l| l.range);
    found
}

/// The last part of every relation name `sql` reads from (a table's, a view's or a CTE's),
/// folded as PostgreSQL folds identifiers, without repeats: the tables a [`Catalog`] for
/// [`find_literals`] needs are among those of these names. SQL that does not parse names none
/// (`find_literals` reports it).
pub fn relation_names(sql: &str) -> Vec<String> {
    #[cfg(test)]
    crate::sqltext::parses::add();
    let Ok(statements) = Parser::parse_sql(&PostgreSqlDialect {}, sql) else { return Vec::new() };
    names_of(&statements)
}

/// [`relation_names`] of a statement the guard checked, from its tree.
pub fn relation_names_in(checked: &CheckedSql) -> Vec<String> {
    names_of(checked.statement())
}

/// Every relation name of a statement the guard checked, as its parts (schema and name, or
/// the name alone), folded as PostgreSQL folds identifiers, without repeats; a name alone that
/// one of the statement's common table expressions has is that expression, not a relation,
/// and is left out.
pub fn relation_parts_in(checked: &CheckedSql) -> Vec<Vec<String>> {
    struct CteNames(Vec<String>);
    impl sqlparser::ast::Visitor for CteNames {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> std::ops::ControlFlow<()> {
            if let Some(with) = &query.with {
                self.0.extend(with.cte_tables.iter().map(|cte| ident_name(&cte.alias.name)));
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut ctes = CteNames(Vec::new());
    let _ = checked.statement().visit(&mut ctes);
    let mut out: Vec<Vec<String>> = Vec::new();
    let _ = sqlparser::ast::visit_relations(checked.statement(), |name| {
        if let Some(parts) = object_name_parts(name).filter(|p| !out.contains(p)) {
            if !matches!(parts.as_slice(), [name] if ctes.0.contains(name)) {
                out.push(parts);
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    out
}

fn names_of<V: Visit>(statements: &V) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let _ = sqlparser::ast::visit_relations(statements, |name| {
        if let Some(last) = object_name_parts(name).and_then(|mut p| p.pop()) {
            if !out.contains(&last) {
                out.push(last);
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    out
}

/// Where a column of a relation comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    table: QualifiedName,
    column: String,
}

/// A column a relation (table, CTE, derived table) offers to the query using it.
#[derive(Debug, Clone)]
struct OutCol {
    name: String,
    origin: Option<Origin>,
}

/// A relation in a FROM clause.
#[derive(Debug, Clone)]
struct Relation {
    /// The alias, if any (then the only name the relation is known by).
    alias: Option<String>,
    /// Schema as written (qualified table names only).
    schema: Option<String>,
    /// Table or CTE name as written.
    name: Option<String>,
    /// The catalog table it is, when it is one.
    table: Option<QualifiedName>,
    /// Its columns, when known.
    columns: Option<Vec<OutCol>>,
}

impl Relation {
    fn answers_to(&self, qualifier: &[String]) -> bool {
        match (qualifier, &self.alias) {
            ([q], Some(alias)) => q == alias,
            ([q], None) => self.name.as_ref() == Some(q),
            ([s, t], None) => {
                self.name.as_ref() == Some(t) && (self.schema.as_ref() == Some(s) || self.table.as_ref().is_some_and(|q| &q.schema == s))
            }
            _ => false,
        }
    }
}

/// The relations of one SELECT, and the enclosing query's scope for correlated references.
struct Scope<'a> {
    relations: Vec<Relation>,
    parent: Option<&'a Scope<'a>>,
}

/// What a column reference resolves to.
enum Resolved {
    /// A column with a known source.
    Column(Origin),
    /// Found, but computed or from an unknown relation.
    Opaque,
    /// Not found in this scope.
    Missing,
}

impl Scope<'_> {
    fn resolve(&self, parts: &[String]) -> Option<Origin> {
        let mut scope = Some(self);
        while let Some(s) = scope {
            match s.resolve_here(parts) {
                Resolved::Column(o) => return Some(o),
                Resolved::Opaque => return None,
                Resolved::Missing => scope = s.parent,
            }
        }
        None
    }

    fn resolve_here(&self, parts: &[String]) -> Resolved {
        let (column, qualifier) = parts.split_last().expect("a column reference has a name");
        let candidates: Vec<&Relation> = if qualifier.is_empty() {
            self.relations.iter().collect()
        } else {
            self.relations.iter().filter(|r| r.answers_to(qualifier)).collect()
        };
        if !qualifier.is_empty() && candidates.is_empty() {
            return Resolved::Missing;
        }
        let mut hits = candidates.iter().filter_map(|r| r.columns.as_ref().map(|cols| cols.iter().find(|c| &c.name == column)));
        let unknown = candidates.iter().any(|r| r.columns.is_none());
        let found: Vec<&OutCol> = hits.by_ref().flatten().collect();
        match (found.as_slice(), unknown) {
            ([one], false) => one.origin.clone().map_or(Resolved::Opaque, Resolved::Column),
            ([], false) => Resolved::Missing,
            // Ambiguous, or a relation whose columns we do not know might hold it.
            _ => Resolved::Opaque,
        }
    }
}

/// A common table expression visible to a query.
#[derive(Debug, Clone)]
struct CteDef {
    name: String,
    columns: Vec<OutCol>,
}

struct Analyzer<'c, 's> {
    catalog: &'c Catalog,
    offsets: LineOffsets,
    sql: &'s str,
    found: Vec<LiteralRef>,
}

impl Analyzer<'_, '_> {
    /// Analyses a query (collecting its literals) and returns its output columns.
    fn query(&mut self, query: &Query, outer: Option<&Scope<'_>>, ctes: &[CteDef]) -> Vec<OutCol> {
        let mut env = ctes.to_vec();
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                let mut columns = self.query(&cte.query, outer, &env);
                rename_columns(&mut columns, &cte.alias);
                env.push(CteDef { name: ident_name(&cte.alias.name), columns });
            }
        }
        let columns = self.set_expr(&query.body, outer, &env);
        // ORDER BY/LIMIT may hold subqueries; their comparisons are scanned without a scope
        // of their own (output-column references are not table columns).
        let empty = Scope { relations: Vec::new(), parent: outer };
        if let Some(order_by) = &query.order_by {
            self.scan(order_by, &empty, &env);
        }
        columns
    }

    fn set_expr(&mut self, body: &SetExpr, outer: Option<&Scope<'_>>, ctes: &[CteDef]) -> Vec<OutCol> {
        match body {
            SetExpr::Select(select) => self.select(select, outer, ctes),
            SetExpr::Query(query) => self.query(query, outer, ctes),
            SetExpr::SetOperation { left, right, .. } => {
                let left = self.set_expr(left, outer, ctes);
                let right = self.set_expr(right, outer, ctes);
                // Names come from the left branch; a source only when both branches agree.
                left.into_iter()
                    .enumerate()
                    .map(|(i, mut c)| {
                        if right.get(i).map(|r| &r.origin) != Some(&c.origin) {
                            c.origin = None;
                        }
                        c
                    })
                    .collect()
            }
            other => {
                let empty = Scope { relations: Vec::new(), parent: outer };
                self.scan(other, &empty, ctes);
                Vec::new()
            }
        }
    }

    fn select(&mut self, select: &Select, outer: Option<&Scope<'_>>, ctes: &[CteDef]) -> Vec<OutCol> {
        let mut scope = Scope { relations: Vec::new(), parent: outer };
        for twj in &select.from {
            self.visit_from_item(twj, &mut scope, outer, ctes);
        }
        for twj in &select.from {
            self.scan_join_conditions(twj, &scope, ctes);
        }
        self.scan(&select.projection, &scope, ctes);
        if let Some(e) = &select.selection {
            self.scan(e, &scope, ctes);
        }
        self.scan(&select.group_by, &scope, ctes);
        if let Some(e) = &select.having {
            self.scan(e, &scope, ctes);
        }
        if let Some(e) = &select.qualify {
            self.scan(e, &scope, ctes);
        }
        projection_columns(&select.projection, &scope)
    }

    /// Adds the relations of a FROM item (and its joins) to `scope`.
    fn visit_from_item(&mut self, twj: &TableWithJoins, scope: &mut Scope<'_>, outer: Option<&Scope<'_>>, ctes: &[CteDef]) {
        self.factor(&twj.relation, scope, outer, ctes);
        for join in &twj.joins {
            self.factor(&join.relation, scope, outer, ctes);
        }
    }

    fn factor(&mut self, factor: &TableFactor, scope: &mut Scope<'_>, outer: Option<&Scope<'_>>, ctes: &[CteDef]) {
        match factor {
            TableFactor::Table { name, alias, .. } => {
                let parts = object_name_parts(name);
                let mut relation = match parts.as_deref() {
                    Some([table]) if ctes.iter().any(|c| &c.name == table) => {
                        let cte = ctes.iter().rev().find(|c| &c.name == table).expect("checked");
                        Relation { alias: None, schema: None, name: Some(table.clone()), table: None, columns: Some(cte.columns.clone()) }
                    }
                    Some([table]) => self.catalog_relation(None, table),
                    Some([schema, table]) => self.catalog_relation(Some(schema), table),
                    _ => Relation { alias: None, schema: None, name: None, table: None, columns: None },
                };
                apply_alias(&mut relation, alias.as_ref());
                scope.relations.push(relation);
            }
            TableFactor::Derived { lateral, subquery, alias, .. } => {
                let columns = if *lateral {
                    let lateral_scope = Scope { relations: scope.relations.clone(), parent: outer };
                    self.query(subquery, Some(&lateral_scope), ctes)
                } else {
                    self.query(subquery, outer, ctes)
                };
                let mut relation = Relation { alias: None, schema: None, name: None, table: None, columns: Some(columns) };
                apply_alias(&mut relation, alias.as_ref());
                scope.relations.push(relation);
            }
            TableFactor::NestedJoin { table_with_joins, alias } => {
                let before = scope.relations.len();
                self.visit_from_item(table_with_joins, scope, outer, ctes);
                if let Some(alias) = alias {
                    // `(a JOIN b) AS j`: the joined columns are known only as j.*.
                    let inner: Vec<Relation> = scope.relations.drain(before..).collect();
                    let columns =
                        inner.iter().map(|r| r.columns.clone()).collect::<Option<Vec<_>>>().map(|cs| cs.into_iter().flatten().collect());
                    let mut relation = Relation { alias: None, schema: None, name: None, table: None, columns };
                    apply_alias(&mut relation, Some(alias));
                    scope.relations.push(relation);
                }
            }
            other => {
                // Table functions, UNNEST, ...: columns unknown; scan their arguments.
                let alias = match other {
                    TableFactor::TableFunction { alias, .. } | TableFactor::Function { alias, .. } | TableFactor::UNNEST { alias, .. } => {
                        alias.as_ref()
                    }
                    _ => None,
                };
                let probe = Scope { relations: scope.relations.clone(), parent: outer };
                self.scan(other, &probe, ctes);
                let mut relation = Relation { alias: None, schema: None, name: None, table: None, columns: None };
                apply_alias(&mut relation, alias);
                scope.relations.push(relation);
            }
        }
    }

    fn catalog_relation(&self, schema: Option<&String>, table: &str) -> Relation {
        let found = self.catalog.lookup(schema.map(String::as_str), table);
        let columns = found.map(|t| {
            t.columns
                .iter()
                .map(|c| OutCol { name: c.name.clone(), origin: Some(Origin { table: t.name.clone(), column: c.name.clone() }) })
                .collect()
        });
        Relation { alias: None, schema: schema.cloned(), name: Some(table.to_owned()), table: found.map(|t| t.name.clone()), columns }
    }

    /// Scans the ON conditions of the joins of a FROM item (nested joins included).
    fn scan_join_conditions(&mut self, twj: &TableWithJoins, scope: &Scope<'_>, ctes: &[CteDef]) {
        if let TableFactor::NestedJoin { table_with_joins, .. } = &twj.relation {
            self.scan_join_conditions(table_with_joins, scope, ctes);
        }
        for join in &twj.joins {
            if let TableFactor::NestedJoin { table_with_joins, .. } = &join.relation {
                self.scan_join_conditions(table_with_joins, scope, ctes);
            }
            self.scan(&join.join_operator, scope, ctes);
        }
    }

    /// Finds comparisons in `node` (not inside its subqueries, which are analysed on their own
    /// with `scope` as their outer scope) and records the literals of resolved text columns.
    fn scan<V: Visit>(&mut self, node: &V, scope: &Scope<'_>, ctes: &[CteDef]) {
        let mut scanner = Scanner::default();
        let _ = node.visit(&mut scanner);
        for cmp in scanner.comparisons {
            let Some(origin) = scope.resolve(&cmp.column) else { continue };
            if !self.catalog.column(&origin.table, &origin.column).is_some_and(|c| c.text_like) {
                continue;
            }
            for (value, span) in cmp.literals {
                let Some(range) = self.literal_range(span) else { continue };
                let (value, kind) = match &cmp.kind {
                    RawKind::Plain(kind) => (value, kind.clone()),
                    RawKind::Like { negated, case_insensitive } => {
                        let Some((pattern, core)) = LikePattern::parse(&value) else { continue };
                        (core, LiteralKind::Like { negated: *negated, case_insensitive: *case_insensitive, pattern })
                    }
                };
                self.found.push(LiteralRef { range, value, kind, table: origin.table.clone(), column: origin.column.clone() });
            }
        }
        for subquery in scanner.subqueries {
            self.query(&subquery, Some(scope), ctes);
        }
    }

    /// The byte range of a literal's span, checked to be a plain `'...'` token.
    fn literal_range(&self, span: sqlparser::tokenizer::Span) -> Option<TextRange> {
        let start = self.offsets.byte(self.sql, span.start)?;
        let end = self.offsets.byte(self.sql, span.end)?;
        let text = self.sql.get(start..end)?;
        (text.len() >= 2 && text.starts_with('\'') && text.ends_with('\'')).then_some(TextRange { start, end })
    }
}

/// Renames a relation's columns after `AS alias(a, b, ...)`.
fn rename_columns(columns: &mut [OutCol], alias: &TableAlias) {
    for (col, name) in columns.iter_mut().zip(&alias.columns) {
        col.name = ident_name(&name.name);
    }
}

fn apply_alias(relation: &mut Relation, alias: Option<&TableAlias>) {
    if let Some(alias) = alias {
        relation.alias = Some(ident_name(&alias.name));
        if let Some(columns) = relation.columns.as_mut() {
            rename_columns(columns, alias);
        }
    }
}

/// The output columns of a SELECT list.
fn projection_columns(items: &[SelectItem], scope: &Scope<'_>) -> Vec<OutCol> {
    let mut out = Vec::new();
    for item in items {
        match item {
            SelectItem::UnnamedExpr(expr) => {
                let parts = column_parts(expr);
                let name = match (&parts, expr) {
                    (Some(p), _) => p.last().cloned().unwrap_or_default(),
                    (None, Expr::Function(f)) => {
                        object_name_parts(&f.name).and_then(|p| p.last().cloned()).unwrap_or_else(|| "?column?".to_owned())
                    }
                    _ => "?column?".to_owned(),
                };
                out.push(OutCol { name, origin: parts.and_then(|p| scope.resolve(&p)) });
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                out.push(OutCol { name: ident_name(alias), origin: column_parts(expr).and_then(|p| scope.resolve(&p)) })
            }
            SelectItem::ExprWithAliases { aliases, .. } => out.extend(aliases.iter().map(|a| OutCol { name: ident_name(a), origin: None })),
            SelectItem::Wildcard(_) => {
                for r in &scope.relations {
                    out.extend(r.columns.iter().flatten().cloned());
                }
            }
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                if let Some(q) = object_name_parts(name) {
                    if let Some(r) = scope.relations.iter().find(|r| r.answers_to(&q)) {
                        out.extend(r.columns.iter().flatten().cloned());
                    }
                }
            }
            SelectItem::QualifiedWildcard(..) => {}
        }
    }
    out
}

/// Converts sqlparser's line/column locations (1-based, columns in characters) to byte offsets.
struct LineOffsets {
    /// Byte offset of the start of each line.
    starts: Vec<usize>,
}

impl LineOffsets {
    fn new(sql: &str) -> LineOffsets {
        let mut starts = vec![0];
        starts.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
        LineOffsets { starts }
    }

    fn byte(&self, sql: &str, loc: Location) -> Option<usize> {
        let line_start = *self.starts.get(usize::try_from(loc.line).ok()?.checked_sub(1)?)?;
        let column = usize::try_from(loc.column).ok()?.checked_sub(1)?;
        let line = &sql[line_start..];
        match line.char_indices().nth(column) {
            Some((i, _)) => Some(line_start + i),
            None if line.chars().count() == column => Some(sql.len()),
            None => None,
        }
    }
}
