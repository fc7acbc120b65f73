//! In-backend tests of the role the value memory records as a column's indexer
//! (`ask.value_columns.indexed_by`): kept by OID, so that it follows a rename, prints as a number
//! once the role is dropped, and is never a new role of the dropped one's name.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::pg::testing::{error_of, one, standin_embeddings};

    const INDEXED_BY: &str = "SELECT indexed_by::text FROM ask.value_columns WHERE relid = 'public.vfruits'::regclass";

    #[pg_test]
    fn the_indexer_is_kept_by_role_oid() {
        let _s = standin_embeddings(8);
        Spi::run(
            "CREATE TABLE public.vfruits (id int PRIMARY KEY, name text);
             INSERT INTO public.vfruits VALUES (1, 'cherry'), (2, 'plum');
             CREATE ROLE ask_val_a; CREATE ROLE ask_val_b; ALTER TABLE public.vfruits OWNER TO ask_val_a",
        )
        .unwrap();

        // Role a indexes its table: it is the indexer, shown by name.
        Spi::run("SET ROLE ask_val_a").unwrap();
        assert_eq!(one::<i64>("SELECT ask.index_values('public.vfruits', ARRAY['name'])"), 2);
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(one::<String>(INDEXED_BY), "ask_val_a");

        // Role b sees none of it: not the memory's tables, not the values of a table it may not
        // read; nor may it index the table again.
        Spi::run("SET ROLE ask_val_b").unwrap();
        let (code, msg, _) = error_of("SELECT count(*) FROM ask.value_columns");
        assert_eq!(code, "42501", "{msg}");
        let (code, msg, _) = error_of("SELECT * FROM ask.similar_values('public.vfruits', 'name', 'cherry')");
        assert_eq!(code, "42501", "{msg}");
        let (code, msg, _) = error_of("SELECT ask.index_values('public.vfruits')");
        assert_eq!(code, "42501", "{msg}");
        Spi::run("RESET ROLE").unwrap();

        // Renamed, role a is still the indexer, under its new name; refreshing keeps it so.
        Spi::run("ALTER ROLE ask_val_a RENAME TO ask_val_renamed").unwrap();
        assert_eq!(one::<String>(INDEXED_BY), "ask_val_renamed");
        Spi::run("SET ROLE ask_val_renamed; UPDATE public.vfruits SET name = 'fig' WHERE id = 2").unwrap();
        assert_eq!(one::<i64>("SELECT ask.refresh_values('public.vfruits')"), 2, "+fig -plum");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(one::<String>(INDEXED_BY), "ask_val_renamed");

        // Dropped (its table handed to the superuser): the indexer prints as the old OID, and a
        // new role of the same name is not it.
        Spi::run("REASSIGN OWNED BY ask_val_renamed TO CURRENT_USER; DROP ROLE ask_val_renamed").unwrap();
        let shown: String = one(INDEXED_BY);
        assert!(shown.chars().all(|c| c.is_ascii_digit()), "{shown}");
        Spi::run("CREATE ROLE ask_val_renamed").unwrap();
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.value_columns WHERE indexed_by::text = 'ask_val_renamed'"), 0);
        Spi::run("SET ROLE ask_val_renamed").unwrap();
        let (code, msg, _) = error_of("SELECT * FROM ask.similar_values('public.vfruits', 'name', 'cherry')");
        assert_eq!(code, "42501", "{msg}");
        Spi::run("RESET ROLE").unwrap();
    }
}
