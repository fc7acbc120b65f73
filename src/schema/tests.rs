//! In-backend tests of the description of readable tables and its per-backend cache.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Script, StandIn};
    use pgrx::prelude::*;

    use crate::pg::testing::*;

    /// The per-backend description cache follows DDL, comments, grants and role switches.
    #[pg_test]
    fn schema_description_cache_follows_changes() {
        setup();
        let s = llm(Script::reply_always("SELECT 1 AS one"));
        let prompt = |s: &StandIn| -> String {
            Spi::run("SELECT ask.sql('anything')").unwrap();
            s.requests().last().unwrap().prompt.clone()
        };
        assert!(!prompt(&s).contains("public.fresh"));
        Spi::run("CREATE TABLE public.fresh (id int)").unwrap();
        assert!(prompt(&s).contains("TABLE public.fresh"));
        Spi::run("COMMENT ON TABLE public.fresh IS 'just made'").unwrap();
        assert!(prompt(&s).contains("TABLE public.fresh  -- just made"));
        Spi::run("COMMENT ON COLUMN public.fresh.id IS 'the key'").unwrap();
        assert!(prompt(&s).contains("id integer  -- the key"));
        Spi::run("ALTER TABLE public.fresh ADD COLUMN label text").unwrap();
        assert!(prompt(&s).contains("label text"));
        // Only the changed relation is described again, and the relations whose foreign keys
        // name it: renaming a referenced table changes the referencing table's description.
        Spi::run("CREATE TABLE public.parent_t (id int PRIMARY KEY); CREATE TABLE public.child_t (id int, parent_id int REFERENCES public.parent_t)")
            .unwrap();
        assert!(prompt(&s).contains("REFERENCES public.parent_t(id)"));
        Spi::run("ALTER TABLE public.parent_t RENAME TO parent_renamed").unwrap();
        let p = prompt(&s);
        assert!(
            p.contains("TABLE public.parent_renamed") && p.contains("REFERENCES public.parent_renamed(id)") && !p.contains("parent_t"),
            "{p}"
        );
        Spi::run("ALTER TABLE public.child_t RENAME COLUMN parent_id TO mother_id").unwrap();
        assert!(prompt(&s).contains("mother_id integer REFERENCES public.parent_renamed(id)"));
        Spi::run("DROP TABLE public.child_t, public.parent_renamed").unwrap();
        assert!(!prompt(&s).contains("parent_renamed"));
        Spi::run("CREATE ROLE ask_test_cache; GRANT SELECT ON public.cities TO ask_test_cache").unwrap();
        Spi::run("SET ROLE ask_test_cache").unwrap();
        let p = prompt(&s);
        assert!(p.contains("TABLE public.cities") && !p.contains("public.fresh"), "{p}");
        Spi::run("RESET ROLE; GRANT SELECT ON public.fresh TO ask_test_cache; SET ROLE ask_test_cache").unwrap();
        assert!(prompt(&s).contains("TABLE public.fresh"));
        Spi::run("RESET ROLE; REVOKE SELECT ON public.fresh FROM ask_test_cache; SET ROLE ask_test_cache").unwrap();
        assert!(!prompt(&s).contains("public.fresh"));
        Spi::run("RESET ROLE").unwrap();
        Spi::run("DROP TABLE public.fresh").unwrap();
        assert!(!prompt(&s).contains("public.fresh"));
    }

    /// What the description holds, as the role that reads it: keys in their constraint's
    /// column order, a foreign key only to a table the role may see, only the columns it may
    /// read, quoted names, kinds, and no partitions.
    #[pg_test]
    fn the_description_holds_what_the_role_may_read() {
        setup();
        Spi::run(
            r#"CREATE ROLE ask_test_describer;
               CREATE SCHEMA d_s; CREATE SCHEMA "D Odd"; CREATE SCHEMA d_hidden;
               CREATE TABLE d_s.a (x int, y int, z text, PRIMARY KEY (y, x));
               COMMENT ON TABLE d_s.a IS 'table a'; COMMENT ON COLUMN d_s.a.z IS 'zed';
               CREATE TABLE "D Odd"."Order Items" ("Weird,Name" int, b int, c int, FOREIGN KEY (c, b) REFERENCES d_s.a (x, y));
               CREATE TABLE d_hidden.h (id int PRIMARY KEY);
               CREATE TABLE d_s.refs (id int PRIMARY KEY, h int REFERENCES d_hidden.h, gone int, a2 int, a1 int,
                                      FOREIGN KEY (a2, a1) REFERENCES d_s.a (y, x));
               ALTER TABLE d_s.refs DROP COLUMN gone;
               CREATE TABLE d_s.empty ();
               CREATE VIEW d_s.v AS SELECT x, z FROM d_s.a;
               CREATE TABLE d_s.parted (id int, d date, PRIMARY KEY (id, d)) PARTITION BY RANGE (d);
               CREATE TABLE d_s.parted_2024 PARTITION OF d_s.parted FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
               CREATE TABLE d_s.cols (id int, secret text, open text, n numeric(10,2) NOT NULL);
               COMMENT ON COLUMN d_s.cols.open IS 'open one';
               GRANT USAGE ON SCHEMA d_s, "D Odd" TO ask_test_describer;
               GRANT SELECT ON d_s.a, d_s.refs, d_s.v TO ask_test_describer;
               GRANT SELECT (id, open, n) ON d_s.cols TO ask_test_describer;
               GRANT SELECT (b) ON "D Odd"."Order Items" TO ask_test_describer;"#,
        )
        .unwrap();
        let of = |tables: &[pg_ask_core::schema::Table], name: &str| tables.iter().find(|t| t.qualified() == name).cloned();
        let all = crate::schema::readable_tables().unwrap();
        let a = of(&all, "d_s.a").unwrap();
        assert_eq!(a.primary_key, ["y", "x"]);
        assert_eq!(a.comment.as_deref(), Some("table a"));
        assert_eq!(a.columns.iter().map(|c| c.comment.as_deref()).collect::<Vec<_>>(), [None, None, Some("zed")]);
        let odd = of(&all, r#""D Odd"."Order Items""#).unwrap();
        assert_eq!(odd.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), [r#""Weird,Name""#, "b", "c"]);
        assert_eq!(odd.foreign_keys.len(), 1);
        assert_eq!(
            (odd.foreign_keys[0].columns.clone(), odd.foreign_keys[0].ref_columns.clone()),
            (vec!["c".into(), "b".into()], vec!["x".into(), "y".into()])
        );
        let refs = of(&all, "d_s.refs").unwrap();
        assert_eq!(refs.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["id", "h", "a2", "a1"]);
        // By constraint name: refs_a2_a1_fkey, refs_h_fkey.
        assert_eq!(refs.foreign_keys.iter().map(|k| k.references.as_str()).collect::<Vec<_>>(), ["d_s.a", "d_hidden.h"]);
        assert_eq!(of(&all, "d_s.v").unwrap().kind, "view");
        assert!(of(&all, "d_s.empty").unwrap().columns.is_empty());
        assert_eq!(of(&all, "d_s.parted").unwrap().kind, "table");
        assert!(of(&all, "d_s.parted_2024").is_none(), "a partition is described through its parent");
        let cols = of(&all, "d_s.cols").unwrap();
        assert_eq!(cols.columns[3].data_type, "numeric(10,2)");
        assert!(cols.columns[3].not_null);

        Spi::run("SET ROLE ask_test_describer").unwrap();
        let mine = crate::schema::readable_tables().unwrap();
        Spi::run("RESET ROLE").unwrap();
        let names: Vec<String> =
            mine.iter().filter(|t| t.schema.starts_with("d_") || t.schema.contains("D Odd")).map(|t| t.qualified()).collect();
        assert_eq!(names, [r#""D Odd"."Order Items""#, "d_s.a", "d_s.cols", "d_s.refs", "d_s.v"]);
        // Only the granted columns; a key names its columns still (the names are the catalog's).
        let odd = of(&mine, r#""D Odd"."Order Items""#).unwrap();
        assert_eq!(odd.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["b"]);
        assert_eq!(odd.foreign_keys[0].columns, ["c", "b"]);
        let cols = of(&mine, "d_s.cols").unwrap();
        assert_eq!(
            cols.columns.iter().map(|c| (c.name.as_str(), c.comment.as_deref())).collect::<Vec<_>>(),
            [("id", None), ("open", Some("open one")), ("n", None)]
        );
        // No foreign key to a table in a schema the role may not use.
        let refs = of(&mine, "d_s.refs").unwrap();
        assert_eq!(refs.foreign_keys.iter().map(|k| k.references.as_str()).collect::<Vec<_>>(), ["d_s.a"]);
        assert_eq!(refs.foreign_keys[0].ref_columns, ["y", "x"]);
    }
}
