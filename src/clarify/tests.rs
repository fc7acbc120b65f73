//! In-backend tests of the question's phrases the value memory holds ([`super::named_values`]),
//! as the roles that ask: a reader with the column privilege, one without, a table whose
//! policies hide rows from the reader, and a hostile role's `lower(text)` first on the path.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::pg::testing::{one, standin_embeddings};

    fn named(question: &str, tables: &[&str]) -> Vec<(String, Vec<String>)> {
        let tables: Vec<String> = tables.iter().map(|t| t.to_string()).collect();
        super::super::named_values(question, &tables)
            .unwrap()
            .into_iter()
            .map(|n| (n.phrase, n.readings.into_iter().map(|r| format!("{}.{}={}", r.table, r.column, r.value)).collect()))
            .collect()
    }

    #[pg_test]
    fn the_phrases_a_reader_may_see_held_and_no_others() {
        let _s = standin_embeddings(8);
        Spi::run(
            "CREATE ROLE ask_nv_owner; CREATE ROLE ask_nv_reader; CREATE ROLE ask_nv_other; CREATE ROLE ask_nv_att;
             GRANT CREATE ON SCHEMA public TO ask_nv_owner, ask_nv_att;
             SET ROLE ask_nv_owner;
             CREATE TABLE public.nv_shops (id int PRIMARY KEY, city text, secret text);
             INSERT INTO public.nv_shops VALUES (1, 'Seattle', 'Hidden Vault'), (2, 'New York', 'Seattle'), (3, 'York', 'x');
             CREATE TABLE public.nv_staff (id int PRIMARY KEY, role text);
             INSERT INTO public.nv_staff VALUES (1, 'pastry chef'), (2, 'head chef');
             RESET ROLE",
        )
        .unwrap();
        Spi::run("SET ROLE ask_nv_owner").unwrap();
        assert_eq!(one::<i64>("SELECT ask.index_values('public.nv_shops', ARRAY['city', 'secret'])"), 6);
        assert_eq!(one::<i64>("SELECT ask.index_values('public.nv_staff', ARRAY['role'])"), 2);
        Spi::run(
            "GRANT SELECT (id, city) ON public.nv_shops TO ask_nv_reader;
             GRANT SELECT ON public.nv_staff TO ask_nv_reader;
             RESET ROLE",
        )
        .unwrap();
        const SHOPS: &[&str] = &["public.nv_shops", "public.nv_staff"];
        let q = "Which shops in Seattle or New York keep the hidden vault, and who is a pastry chef?";

        // The reader: the city and the role it may read; not the column it may not (the
        // "Hidden Vault" of `secret`, nor Seattle as a secret); "York" inside "New York" is
        // not named again.
        Spi::run("SET ROLE ask_nv_reader").unwrap();
        let got = named(q, SHOPS);
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(
            got,
            vec![
                ("New York".to_string(), vec!["public.nv_shops.city=New York".to_string()]),
                ("pastry chef".to_string(), vec!["public.nv_staff.role=pastry chef".to_string()]),
                ("Seattle".to_string(), vec!["public.nv_shops.city=Seattle".to_string()]),
            ]
        );
        // Only the tables asked about.
        Spi::run("SET ROLE ask_nv_reader").unwrap();
        assert_eq!(named(q, &["public.nv_staff"]).len(), 1);
        Spi::run("RESET ROLE").unwrap();

        // A role with no privilege on either table: nothing.
        Spi::run("SET ROLE ask_nv_other").unwrap();
        assert!(named(q, SHOPS).is_empty());
        Spi::run("RESET ROLE").unwrap();

        // The owner turns on policies that hide the rows from the reader: the memory, indexed
        // before without allow_rls, is not read for it any more.
        Spi::run(
            "SET ROLE ask_nv_owner;
             ALTER TABLE public.nv_staff ENABLE ROW LEVEL SECURITY; ALTER TABLE public.nv_staff FORCE ROW LEVEL SECURITY;
             CREATE POLICY nv_own ON public.nv_staff USING (current_user = 'ask_nv_owner');
             RESET ROLE",
        )
        .unwrap();
        Spi::run("SET ROLE ask_nv_reader").unwrap();
        let got = named(q, SHOPS);
        Spi::run("RESET ROLE").unwrap();
        assert!(got.iter().all(|(p, _)| p != "pastry chef"), "{got:?}");
        assert_eq!(got.len(), 2, "{got:?}");

        // A hostile role's lower(text), first on the reader's path, is never called.
        Spi::run(
            "SET ROLE ask_nv_att;
             CREATE FUNCTION public.lower(text) RETURNS text LANGUAGE plpgsql AS
               $$ BEGIN RAISE EXCEPTION 'hostile lower called'; END $$;
             RESET ROLE",
        )
        .unwrap();
        Spi::run("SET ROLE ask_nv_reader; SET search_path = public, pg_catalog").unwrap();
        let got = named(q, SHOPS);
        Spi::run("RESET ROLE; RESET search_path").unwrap();
        assert_eq!(got.len(), 2, "{got:?}");
    }
}
