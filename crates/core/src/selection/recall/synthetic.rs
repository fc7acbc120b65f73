//! Made-up catalogs: a small enterprise with questions over it, and a large catalog of up to
//! 10,000 tables with the DDL that creates it.

/// Entities of a made-up enterprise, by area (schema). Each gets a main table and satellites.
pub const SYNTHETIC_AREAS: [(&str, [&str; 4]); 10] = [
    ("sales", ["customer", "invoice", "quote", "discount"]),
    ("hr", ["employee", "department", "payslip", "vacancy"]),
    ("stock", ["warehouse", "product", "shipment", "supplier"]),
    ("finance", ["ledger", "budget", "expense", "tax_rate"]),
    ("support", ["ticket", "agent", "escalation", "survey"]),
    ("fleet", ["vehicle", "driver", "route", "fuel_card"]),
    ("marketing", ["campaign", "newsletter", "lead", "channel"]),
    ("projects", ["project", "milestone", "timesheet", "risk"]),
    ("facilities", ["building", "room", "booking", "maintenance_job"]),
    ("legal", ["contract", "clause", "dispute", "license"]),
];
pub const SYNTHETIC_SATELLITES: [&str; 5] = ["", "_history", "_note", "_attachment", "_tag"];

/// Questions over the synthetic enterprise, one or two areas each.
pub const SYNTHETIC_QUESTIONS: [&str; 12] = [
    "How many invoices did each customer get last year?",
    "Which employees work in the finance department?",
    "Total amount of shipments per supplier",
    "List open tickets with their escalations",
    "Which drivers use a fuel card on more than two routes?",
    "How many leads did each campaign bring?",
    "Show the milestones of projects at risk",
    "Which rooms were booked most often?",
    "Contracts with disputes and the clauses concerned",
    "Average budget by ledger",
    "Notes written about vehicles this month",
    "Which products are stored in more than one warehouse?",
];

/// Business areas of the large generated catalog, one schema each.
const SCALE_AREAS: [&str; 50] = [
    "accounting",
    "admissions",
    "aftersales",
    "agriculture",
    "archive",
    "auditing",
    "aviation",
    "banking",
    "billing",
    "biobank",
    "catering",
    "charity",
    "clinic",
    "compliance",
    "construction",
    "crm",
    "customs",
    "dairy",
    "dispatch",
    "energy",
    "events",
    "forestry",
    "franchise",
    "gallery",
    "grants",
    "hotel",
    "insurance",
    "laboratory",
    "leasing",
    "library",
    "logistics",
    "manufacturing",
    "media",
    "mining",
    "museum",
    "payroll",
    "pharmacy",
    "procurement",
    "publishing",
    "quality",
    "railway",
    "recruiting",
    "retail",
    "school",
    "shipping",
    "sports",
    "telecom",
    "tourism",
    "utilities",
    "warranty",
];

/// Entities the areas draw from: each area takes forty of them, so that most names recur in
/// several schemas, as `customer` or `invoice` do in real databases.
const SCALE_ENTITIES: [&str; 100] = [
    "account",
    "address",
    "agreement",
    "allocation",
    "appointment",
    "asset",
    "assignment",
    "audit_trail",
    "batch",
    "beneficiary",
    "bid",
    "branch",
    "calendar",
    "carrier",
    "case_file",
    "catalog_item",
    "certificate",
    "claim",
    "client",
    "collection",
    "complaint",
    "consignment",
    "contact",
    "container",
    "cost_center",
    "course",
    "credit_note",
    "currency",
    "customer",
    "deadline",
    "delivery",
    "deposit",
    "device",
    "document",
    "donation",
    "enrollment",
    "equipment",
    "estimate",
    "exhibit",
    "facility",
    "fee",
    "forecast",
    "grade",
    "guest",
    "incident",
    "inspection",
    "installment",
    "inventory",
    "invoice",
    "item",
    "journal",
    "lab_result",
    "location",
    "loan",
    "lot",
    "machine",
    "measurement",
    "meeting",
    "member",
    "membership",
    "order",
    "package",
    "partner",
    "patient",
    "payment",
    "permit",
    "plan",
    "policy",
    "price_list",
    "purchase",
    "receipt",
    "refund",
    "region",
    "registration",
    "rental",
    "report",
    "request",
    "reservation",
    "resource",
    "sample",
    "schedule",
    "season",
    "sensor",
    "session",
    "shift",
    "site",
    "sku",
    "staff",
    "subscription",
    "task",
    "team",
    "ticket",
    "transfer",
    "trip",
    "unit",
    "vendor",
    "visit",
    "voucher",
    "work_order",
    "zone",
];

/// Columns of main tables beyond the key, with comments (`{e}`: the entity in words).
const SCALE_COLUMNS: [(&str, &str, Option<&str>); 6] = [
    ("name", "text", Some("Name of the {e}")),
    ("status", "text", Some("open, active, closed or archived")),
    ("amount", "numeric(12,2)", None),
    ("created_at", "timestamptz", None),
    ("reference_code", "varchar(24)", Some("External reference of the {e}")),
    ("notes", "text", None),
];

/// A large made-up catalog: `schemas` areas (at most 50) of `per_schema` tables (at most 200):
/// forty entities per area, each a main table with columns, comments and a foreign key to the
/// area's previous entity, and satellites (`_history`, `_note`, `_attachment`, `_tag`)
/// referencing it. With 50 × 200 it is 10,000 tables; deterministic.
pub fn synthetic_scale_catalog(schemas: usize, per_schema: usize) -> Vec<crate::schema::Table> {
    use crate::schema::{Column, ForeignKey, Table};
    let col =
        |name: &str, ty: &str, comment: Option<String>| Column { name: name.into(), data_type: ty.into(), not_null: name == "id", comment };
    let mut out = Vec::new();
    for (a, area) in SCALE_AREAS.iter().take(schemas).enumerate() {
        let entities: Vec<&str> = (0..40).map(|i| SCALE_ENTITIES[(a * 17 + i * 3) % SCALE_ENTITIES.len()]).collect();
        let mut n = 0;
        'area: for (i, entity) in entities.iter().enumerate() {
            let words = entity.replace('_', " ");
            for suffix in SYNTHETIC_SATELLITES {
                if n == per_schema {
                    break 'area;
                }
                n += 1;
                let mut columns = vec![col("id", "bigint", None)];
                let mut foreign_keys = Vec::new();
                let (parent, parent_column) = if suffix.is_empty() {
                    for (name, ty, comment) in SCALE_COLUMNS {
                        columns.push(col(name, ty, comment.map(|c| c.replace("{e}", &words))));
                    }
                    match i.checked_sub(1).map(|p| entities[p]) {
                        Some(p) if p != *entity => (Some(p), format!("{p}_id")),
                        _ => (None, String::new()),
                    }
                } else {
                    columns.push(col("body", "text", None));
                    columns.push(col("recorded_at", "timestamptz", None));
                    columns.push(col("recorded_by", "text", Some(format!("Who recorded the {words}{}", suffix.replace('_', " ")))));
                    (Some(*entity), format!("{entity}_id"))
                };
                if let Some(parent) = parent {
                    columns.push(col(&parent_column, "bigint", None));
                    foreign_keys.push(ForeignKey {
                        columns: vec![parent_column],
                        references: format!("{area}.{parent}"),
                        ref_columns: vec!["id".into()],
                    });
                }
                out.push(Table {
                    schema: (*area).into(),
                    name: format!("{entity}{suffix}"),
                    kind: "table".into(),
                    comment: Some(format!("{words}{} records of the {area} department", suffix.replace('_', " "))),
                    columns,
                    primary_key: vec!["id".into()],
                    foreign_keys,
                });
            }
        }
    }
    out
}

/// The DDL that creates [`synthetic_scale_catalog`] in PostgreSQL: schemas, tables with keys,
/// and comments, in an order that creates every referenced table first. Each schema is dropped
/// and created again where its first table comes: give it whole schemas.
pub fn synthetic_scale_ddl(tables: &[crate::schema::Table]) -> String {
    let mut out = String::new();
    let mut schema = "";
    for t in tables {
        if t.schema != schema {
            schema = &t.schema;
            out.push_str(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};\n"));
        }
        let mut defs: Vec<String> =
            t.columns.iter().map(|c| format!("{} {}{}", c.name, c.data_type, if c.name == "id" { " PRIMARY KEY" } else { "" })).collect();
        for fk in &t.foreign_keys {
            defs.push(format!("FOREIGN KEY ({}) REFERENCES {} (id)", fk.columns.join(", "), fk.references));
        }
        out.push_str(&format!("CREATE TABLE {}.{} ({});\n", t.schema, t.name, defs.join(", ")));
        if let Some(comment) = &t.comment {
            out.push_str(&format!("COMMENT ON TABLE {}.{} IS '{comment}';\n", t.schema, t.name));
        }
        for c in &t.columns {
            if let Some(comment) = &c.comment {
                out.push_str(&format!("COMMENT ON COLUMN {}.{}.{} IS '{comment}';\n", t.schema, t.name, c.name));
            }
        }
    }
    out
}
