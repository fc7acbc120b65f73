//! In-backend tests of the SPI helpers (`cargo pgrx test`): a read with a generic plan sets
//! the plan cache's mode for its own execution only, and puts it back after an error too.

#[pgrx::pg_schema]
mod tests {
    use pgrx::pg_sys::BuiltinOid::BOOLOID;
    use pgrx::pg_sys::PgOid::BuiltIn;
    use pgrx::prelude::*;

    use crate::pg::spi::{select_generic, select_kept};
    use crate::pg::subxact::{self, OnSuccess};
    use crate::pg::testing::one;

    const MODE: &str = "SELECT pg_catalog.current_setting('plan_cache_mode') WHERE $1";

    fn mode_inside(generic: bool) -> String {
        let args: [pgrx::datum::DatumWithOid; 1] = [true.into()];
        let row = |r: crate::pg::spi::Row<'_>| r.get::<String>(1);
        let read = if generic {
            select_generic("the plan cache's mode", MODE, &[BuiltIn(BOOLOID)], &args, row)
        } else {
            select_kept("the plan cache's mode", MODE, &[BuiltIn(BOOLOID)], &args, row)
        };
        read.unwrap().pop().unwrap()
    }

    #[pg_test]
    fn a_generic_read_forces_its_plan_and_puts_the_mode_back() {
        Spi::run("SET plan_cache_mode = auto").unwrap();
        assert_eq!(mode_inside(true), "force_generic_plan");
        let after: String = one("SHOW plan_cache_mode");
        assert_eq!(after, "auto");
        assert_eq!(mode_inside(false), "auto");
        // A DBA's own setting is what comes back.
        Spi::run("SET plan_cache_mode = force_custom_plan").unwrap();
        assert_eq!(mode_inside(true), "force_generic_plan");
        assert_eq!(one::<String>("SHOW plan_cache_mode"), "force_custom_plan");
        Spi::run("SET plan_cache_mode = auto").unwrap();
        // An error in the statement unwinds through the guard.
        let failed = subxact::run(OnSuccess::RollBack, || {
            let args: [pgrx::datum::DatumWithOid; 1] = [true.into()];
            select_generic("a failing read", "SELECT 1 OPERATOR(pg_catalog./) 0 WHERE $1", &[BuiltIn(BOOLOID)], &args, |r| r.get::<i32>(1))
        });
        assert!(failed.is_err(), "division by zero raises");
        assert_eq!(one::<String>("SHOW plan_cache_mode"), "auto");
    }
}
