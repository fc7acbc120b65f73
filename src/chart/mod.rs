//! `ask.chart(sql)`: the result of a query as an SVG chart, when it suits one (a time or a
//! category column and numeric columns); NULL with a NOTICE saying why when it does not. The
//! query runs as `ask.query()` runs it — the guard's check, read-only, as the caller, within
//! the row and size limits — and the chart is planned and drawn by the core
//! (`pg_ask_core::chart`), which also draws the DBA report's charts.

use pgrx::prelude::*;

use pg_ask_core::chart;

use crate::ask::query::run_checked;

/// The result of `sql` as an SVG chart: a line over a time column (dates, timestamps, or a
/// number named `year`, `month`, ...), bars over a text column, one series per numeric
/// column. NULL, with a NOTICE, when the result does not suit a chart. `title` defaults to
/// what is drawn ("reviews by year").
#[pg_extern(name = "chart", volatile, parallel_unsafe)]
fn chart(sql: Option<&str>, title: default!(Option<&str>, "NULL")) -> Option<String> {
    let sql = sql?;
    // Dates as ISO writes them, whatever the session's DateStyle: a chart reads them as times.
    // SAFETY: a GUC nest level opened and closed here, as a function's SET clause does; an
    // error in between is unwound by the transaction's abort, which closes it.
    let rs = unsafe {
        let nest = pgrx::pg_sys::NewGUCNestLevel();
        pgrx::pg_sys::set_config_option(
            c"datestyle".as_ptr(),
            c"ISO, YMD".as_ptr(),
            pgrx::pg_sys::GucContext::PGC_USERSET,
            pgrx::pg_sys::GucSource::PGC_S_SESSION,
            pgrx::pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            0,
            false,
        );
        let rs = run_checked(sql, "ask.chart()");
        pgrx::pg_sys::AtEOXact_GUC(true, nest);
        rs
    };
    match chart::plan(title.unwrap_or(""), &rs.columns, &rs.rows) {
        Ok(planned) => Some(chart::svg(&planned)),
        Err(why) => {
            notice!("pg_ask: no chart: {why}");
            None
        }
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::pg::testing::*;

    #[pg_test]
    fn a_chart_is_drawn_only_from_what_the_caller_may_read() {
        Spi::run(
            "CREATE ROLE chart_owner; CREATE ROLE chart_other; CREATE SCHEMA chart_t AUTHORIZATION chart_owner;
             SET ROLE chart_owner;
             CREATE TABLE chart_t.sales (region text, year int, amount numeric, seller name DEFAULT current_user);
             INSERT INTO chart_t.sales (region, year, amount) VALUES ('north', 2023, 10), ('south', 2023, 5), ('north', 2024, 7), ('east', 2024, 3);
             ALTER TABLE chart_t.sales ENABLE ROW LEVEL SECURITY;
             CREATE POLICY own ON chart_t.sales USING (region <> 'south');
             ALTER TABLE chart_t.sales FORCE ROW LEVEL SECURITY;
             RESET ROLE",
        )
        .unwrap();
        Spi::run("SET ROLE chart_owner").unwrap();
        let svg: String = one("SELECT ask.chart('SELECT region, sum(amount) AS total FROM chart_t.sales GROUP BY region ORDER BY 1')");
        // Row-level security holds: the south is not drawn.
        assert!(svg.starts_with("<svg") && svg.contains("\nnorth\n") && svg.contains("\neast\n") && !svg.contains("south"), "{svg}");
        let none = Spi::get_one::<String>("SELECT ask.chart('SELECT count(*) FROM chart_t.sales')").unwrap();
        assert!(none.is_none());
        Spi::run("SET ROLE chart_other").unwrap();
        let (code, _, _) = error_of("SELECT ask.chart('SELECT region, amount FROM chart_t.sales')");
        assert_eq!(code, "42501");
        let (code, _, _) = error_of("SELECT ask.chart('SELECT ''a'' AS k, pg_advisory_lock(1) AS n')");
        assert_eq!(code, "2F003");
        Spi::run("RESET ROLE; DROP SCHEMA chart_t CASCADE; DROP ROLE chart_owner; DROP ROLE chart_other").unwrap();
    }
}
