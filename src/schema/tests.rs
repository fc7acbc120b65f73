//! In-backend tests of the per-backend description cache.

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
}
