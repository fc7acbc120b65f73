//! In-backend tests of a second review's attacks on `ask.do()` write steps: code another role's
//! objects bring into a write that no check before it sees — a trigger's WHEN clause, a DO
//! INSTEAD rule's action, a foreign key's cascade into a table with a CHECK or a deferred
//! trigger — and what must keep working (the writer's own trigger, PostgreSQL's own foreign
//! key triggers). Each calls `set_config` on the writer's session or would run as the writer at
//! COMMIT; a failing test is an attack that broke through.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use super::super::attack_tests::tests::{do_as_victim, roles, search_path};
    use crate::pg::testing::*;

    const HIJACK: &str = "pg_catalog.set_config('search_path', 'att, pg_catalog, public', false)";

    /// A trigger's WHEN clause and a DO INSTEAD rule's action on another role's table: both run
    /// while the step runs, where built-ins start without the function manager's hook.
    #[pg_test]
    fn a_trigger_condition_or_a_rule_action_starts_no_effectful_built_in() {
        roles();
        Spi::run(&format!(
            "SET ROLE ask_att;
             CREATE FUNCTION att.never() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NULL; END $f$;
             CREATE TABLE att.guestbook (msg text);
             CREATE TRIGGER w AFTER INSERT ON att.guestbook FOR EACH ROW WHEN ({HIJACK} IS NULL) EXECUTE FUNCTION att.never();
             CREATE TABLE att.requests (msg text);
             CREATE TABLE att.requests_log (msg text, sp text);
             CREATE RULE r AS ON INSERT TO att.requests DO INSTEAD INSERT INTO att.requests_log VALUES (NEW.msg, {HIJACK});
             GRANT INSERT, SELECT ON att.guestbook, att.requests, att.requests_log TO PUBLIC;
             RESET ROLE;"
        ))
        .unwrap();
        for (table, named) in [("att.guestbook", "set_config"), ("att.requests", "volatile function")] {
            let out = do_as_victim(&format!("Step 1: add\n```sql\nINSERT INTO {table} VALUES ('hello');\n```"));
            let sp = search_path();
            assert!(!sp.contains("att"), "BROKE {table}: search_path {sp}, do: {out:?}");
            assert!(out.clone().unwrap_or_default().contains(named), "{table}: the refusal names {named}: {out:?}");
        }
        // The victim's own table with its own trigger and PostgreSQL's foreign-key triggers still work.
        Spi::run(
            "SET ROLE ask_vic;
             CREATE TABLE vic.parent (id int PRIMARY KEY); INSERT INTO vic.parent VALUES (1);
             CREATE TABLE vic.child (id int REFERENCES vic.parent ON DELETE CASCADE, at timestamptz DEFAULT pg_catalog.clock_timestamp(),
                                     uid uuid DEFAULT pg_catalog.gen_random_uuid());
             CREATE FUNCTION vic.stamp() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN NEW.at := pg_catalog.clock_timestamp(); RETURN NEW; END $f$;
             CREATE TRIGGER s BEFORE INSERT ON vic.child FOR EACH ROW EXECUTE FUNCTION vic.stamp();
             RESET ROLE;",
        )
        .unwrap();
        let out = do_as_victim("Step 1: add\n```sql\nINSERT INTO vic.child (id) VALUES (1);\n```");
        assert_eq!(out, None);
        assert_eq!(one::<i64>("SELECT count(*) FROM vic.child WHERE at IS NOT NULL AND uid IS NOT NULL"), 1);
    }

    /// A foreign key's action carries a write into another role's table: its CHECK runs while the
    /// step runs, its deferred trigger at COMMIT.
    #[pg_test]
    fn a_cascade_into_another_roles_table_is_held_like_the_table_written() {
        roles();
        Spi::run(&format!(
            "SET ROLE ask_att;
             CREATE TABLE att.queue (id int PRIMARY KEY); INSERT INTO att.queue VALUES (1), (2);
             CREATE TABLE att.notes (q int REFERENCES att.queue ON DELETE CASCADE);
             CREATE TABLE att.marks (q int REFERENCES att.queue ON DELETE SET NULL CHECK (q IS NOT NULL OR {HIJACK} IS NOT NULL));
             INSERT INTO att.notes VALUES (1); INSERT INTO att.marks VALUES (2);
             CREATE TABLE att.loot (who text);
             CREATE FUNCTION att.later() RETURNS trigger LANGUAGE plpgsql AS
                 $f$ BEGIN INSERT INTO att.loot VALUES (current_user); RETURN NULL; END $f$;
             CREATE CONSTRAINT TRIGGER later AFTER DELETE ON att.notes DEFERRABLE INITIALLY DEFERRED
                 FOR EACH ROW EXECUTE FUNCTION att.later();
             GRANT SELECT, DELETE ON att.queue TO PUBLIC; GRANT SELECT ON att.loot TO PUBLIC;
             RESET ROLE;"
        ))
        .unwrap();
        for id in [1, 2] {
            let out = do_as_victim(&format!("Step 1: remove\n```sql\nDELETE FROM att.queue WHERE id = {id};\n```"));
            Spi::run("SET CONSTRAINTS ALL IMMEDIATE").unwrap();
            let loot = Spi::get_one::<String>("SELECT string_agg(who, ',') FROM att.loot").unwrap().unwrap_or_default();
            let sp = search_path();
            assert!(loot.is_empty() && !sp.contains("att"), "BROKE cascade {id}: loot {loot}, search_path {sp}, do: {out:?}");
            assert!(out.is_some(), "cascade {id}: refused");
        }
    }

    /// A deferrable foreign key over another role's table: its check is planned at COMMIT,
    /// after every scope, and planning folds that table's index expressions in the writer's
    /// session. Refused from either side; the writer's own deferrable keys still work.
    #[pg_test]
    fn a_deferrable_key_over_another_roles_table_is_refused() {
        roles();
        Spi::run(&format!(
            "SET ROLE ask_att;
             CREATE FUNCTION att.g() RETURNS int LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN PERFORM {HIJACK}; RETURN 0; END $f$;
             CREATE TABLE att.pk (id int PRIMARY KEY); INSERT INTO att.pk VALUES (1), (2);
             CREATE INDEX pk_expr ON att.pk ((id + att.g()));
             CREATE TABLE att.child (pid int REFERENCES att.pk DEFERRABLE INITIALLY DEFERRED);
             CREATE TABLE att.parent (id int PRIMARY KEY); INSERT INTO att.parent VALUES (1), (2);
             CREATE TABLE att.refs (pid int REFERENCES att.parent ON DELETE NO ACTION DEFERRABLE INITIALLY DEFERRED);
             CREATE INDEX refs_expr ON att.refs ((pid + att.g()));
             GRANT SELECT, INSERT ON att.child TO PUBLIC; GRANT SELECT, DELETE ON att.parent TO PUBLIC;
             RESET ROLE;"
        ))
        .unwrap();
        for step in ["INSERT INTO att.child (pid) VALUES (1)", "DELETE FROM att.parent WHERE id = 2"] {
            let out = do_as_victim(&format!("Step 1: write\n```sql\n{step};\n```"));
            // What COMMIT would fire, fired now.
            Spi::run("SET CONSTRAINTS ALL IMMEDIATE").unwrap();
            let sp = search_path();
            assert!(!sp.contains("att"), "BROKE {step}: search_path {sp}, do: {out:?}");
            assert!(out.clone().unwrap_or_default().contains("at COMMIT"), "{step}: refused, saying why: {out:?}");
        }
        Spi::run(
            "SET ROLE ask_vic;
             CREATE TABLE vic.orders (id int PRIMARY KEY); INSERT INTO vic.orders VALUES (1);
             CREATE TABLE vic.lines (o int REFERENCES vic.orders DEFERRABLE INITIALLY DEFERRED);
             RESET ROLE;",
        )
        .unwrap();
        assert_eq!(do_as_victim("Step 1: add\n```sql\nINSERT INTO vic.lines VALUES (1);\n```"), None, "the writer's own key");
    }

    /// A deferrable trigger added to a partition (or a child table) after the step's check and
    /// before its run, as another session can: the partition is locked only when a row is
    /// routed to it. The step is checked again once it has run, and rolled back.
    #[pg_test]
    fn a_deferrable_trigger_added_between_the_check_and_the_run_is_refused() {
        roles();
        Spi::run(&format!(
            "SET ROLE ask_att;
             CREATE FUNCTION att.late() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN PERFORM {HIJACK}; RETURN NULL; END $f$;
             CREATE TABLE att.visits (msg text) PARTITION BY LIST (msg);
             CREATE TABLE att.visits_hello PARTITION OF att.visits FOR VALUES IN ('hello');
             CREATE TABLE att.notes (msg text);
             CREATE TABLE att.notes_child () INHERITS (att.notes);
             GRANT INSERT, SELECT, UPDATE ON att.visits, att.notes TO PUBLIC;
             GRANT TRIGGER ON att.visits_hello, att.notes_child TO ask_vic;
             INSERT INTO att.notes_child VALUES ('old');
             RESET ROLE;"
        ))
        .unwrap();
        // The insert's partition is checked again after the run; the update's child table gets
        // its trigger function looked up while the update runs, where the scope refuses it.
        let cases = [
            ("INSERT INTO att.visits VALUES ('hello')", "att.visits_hello", "INSERT", "at COMMIT"),
            ("UPDATE att.notes SET msg = 'new'", "att.notes_child", "UPDATE", "att.late"),
        ];
        for (step, leaf, event, why) in cases {
            super::super::written::BETWEEN_CHECK_AND_RUN.with(|b| {
                *b.borrow_mut() = Some(format!(
                    "CREATE CONSTRAINT TRIGGER late AFTER {event} ON {leaf} DEFERRABLE INITIALLY DEFERRED
                     FOR EACH ROW EXECUTE FUNCTION att.late()"
                ))
            });
            let out = do_as_victim(&format!("Step 1: write\n```sql\n{step};\n```"));
            // What COMMIT would fire, fired now.
            Spi::run("SET CONSTRAINTS ALL IMMEDIATE").unwrap();
            let sp = search_path();
            assert!(!sp.contains("att"), "BROKE {step}: search_path {sp}, do: {out:?}");
            let said = out.clone().unwrap_or_default();
            assert!(said.contains(why), "{step}: refused, saying why: {out:?}");
        }
        assert_eq!(one::<i64>("SELECT count(*) FROM att.visits"), 0, "the refused insert was rolled back");
        assert_eq!(one::<i64>("SELECT count(*) FROM att.notes WHERE msg = 'old'"), 1, "the refused update was rolled back");
        // Without a change between check and run, the same steps are kept.
        assert_eq!(do_as_victim("Step 1: write\n```sql\nINSERT INTO att.visits VALUES ('hello');\n```"), None);
        assert_eq!(one::<i64>("SELECT count(*) FROM att.visits"), 1);
    }

    /// Code that another role's default, generated column or view brings into a write through a
    /// domain it coerces to or a view it reads: the domain's CHECK and the view's select list
    /// run as the writer, so they may not advance a sequence (which tells the other role what
    /// they read) or read the writer's settings; `to_char` in a default would store the
    /// writer's number format and time zone name.
    #[pg_test]
    fn a_domain_in_a_default_or_a_view_in_an_insert_reads_nothing_of_the_writer() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE SEQUENCE att.sig; GRANT USAGE ON SEQUENCE att.sig TO PUBLIC;
             CREATE DOMAIN att.leak AS text CHECK (pg_catalog.nextval('att.sig') > 0);
             CREATE DOMAIN att.peek AS text CHECK (pg_catalog.current_setting('search_path') IS NOT NULL);
             CREATE TABLE att.by_default (msg text, stamp text DEFAULT ('x'::text)::att.leak);
             CREATE TABLE att.by_setting (msg text, stamp text DEFAULT ('x'::text)::att.peek);
             CREATE TABLE att.generated (msg text, g text GENERATED ALWAYS AS ((msg)::att.leak) STORED);
             CREATE TABLE att.formats (msg text, lc text DEFAULT pg_catalog.to_char(1234.5, 'L9G999D9'));
             CREATE VIEW att.news WITH (security_invoker = true) AS
                 SELECT 'news'::text AS headline, pg_catalog.nextval('att.sig') AS n FROM vic.secret;
             CREATE OPERATOR att.@@ (FUNCTION = pg_catalog.nextval, RIGHTARG = regclass);
             CREATE VIEW att.news_op WITH (security_invoker = true) AS
                 SELECT 'news'::text AS headline, OPERATOR(att.@@) 'att.sig'::regclass AS n FROM vic.secret;
             GRANT INSERT, SELECT ON att.by_default, att.by_setting, att.generated, att.formats, att.news, att.news_op TO PUBLIC;
             RESET ROLE;
             GRANT SELECT ON vic.secret TO ask_vic;
             SET ROLE ask_vic; CREATE TABLE vic.inbox (headline text); RESET ROLE;",
        )
        .unwrap();
        for (step, named) in [
            ("INSERT INTO att.by_default (msg) VALUES ('hi')", "att.leak"),
            ("INSERT INTO att.by_setting (msg) VALUES ('hi')", "att.peek"),
            ("INSERT INTO att.generated (msg) VALUES ('hi')", "att.leak"),
            ("INSERT INTO att.formats (msg) VALUES ('hi')", "to_char"),
            ("INSERT INTO vic.inbox (headline) SELECT headline FROM att.news", "nextval"),
            ("INSERT INTO vic.inbox (headline) SELECT headline FROM att.news_op", "nextval"),
        ] {
            let out = do_as_victim(&format!("Step 1: write\n```sql\n{step};\n```"));
            let said = out.clone().unwrap_or_default();
            assert!(said.contains(named), "BROKE {step}: not refused by {named}: {out:?}");
        }
        assert!(!one::<bool>("SELECT is_called FROM att.sig"), "BROKE: att.sig advanced as the writer");
        let written = one::<i64>(
            "SELECT (SELECT count(*) FROM att.by_default) + (SELECT count(*) FROM att.by_setting) + (SELECT count(*) FROM att.generated)
                  + (SELECT count(*) FROM att.formats) + (SELECT count(*) FROM vic.inbox)",
        );
        assert_eq!(written, 0);
        // The writer's own sequence in its own INSERT still advances.
        Spi::run("SET ROLE ask_vic; CREATE SEQUENCE vic.n; CREATE TABLE vic.numbered (n bigint, msg text); RESET ROLE;").unwrap();
        assert_eq!(do_as_victim("Step 1: add\n```sql\nINSERT INTO vic.numbered VALUES (nextval('vic.n'), 'hi');\n```"), None);
    }

    /// Code another role attached to the table written runs as the writer and may read the
    /// writer's session and tables: a policy's check signalling through nextval, a default that
    /// reads a setting or advances the writer's own sequence. Its serial default and a clock
    /// default still work.
    #[pg_test]
    fn another_roles_policy_or_default_reads_nothing_of_the_writer() {
        roles();
        Spi::run(
            "SET ROLE ask_vic; CREATE SEQUENCE vic.invoice_seq; SELECT nextval('vic.invoice_seq'); RESET ROLE;
             SET ROLE ask_att;
             CREATE SEQUENCE att.sig; GRANT USAGE ON SEQUENCE att.sig TO PUBLIC;
             CREATE TABLE att.inbox (msg text);
             ALTER TABLE att.inbox ENABLE ROW LEVEL SECURITY;
             CREATE POLICY see ON att.inbox FOR SELECT USING (true);
             CREATE POLICY ins ON att.inbox FOR INSERT WITH CHECK (
                 coalesce((SELECT pg_catalog.nextval('att.sig') FROM vic.secret LIMIT 1), 1) > 0);
             CREATE TABLE att.settings_book (msg text, s text DEFAULT pg_catalog.current_setting('search_path'));
             CREATE TABLE att.counter_book (msg text, n bigint DEFAULT pg_catalog.nextval(('vic' || '.invoice_seq')::pg_catalog.regclass));
             CREATE TABLE att.plain_book (id serial, msg text, at timestamptz DEFAULT now(), day date DEFAULT CURRENT_DATE);
             GRANT INSERT, SELECT ON att.inbox, att.settings_book, att.counter_book, att.plain_book TO PUBLIC;
             GRANT USAGE ON SEQUENCE att.plain_book_id_seq TO PUBLIC;
             RESET ROLE;
             GRANT SELECT ON vic.secret TO ask_vic;",
        )
        .unwrap();
        for table in ["att.inbox", "att.settings_book", "att.counter_book"] {
            let out = do_as_victim(&format!("Step 1: sign\n```sql\nINSERT INTO {table} (msg) VALUES ('hi');\n```"));
            assert!(out.is_some(), "BROKE {table}: the write ran");
        }
        let signalled = one::<bool>("SELECT is_called FROM att.sig");
        let counter = one::<i64>("SELECT last_value FROM vic.invoice_seq");
        assert!(!signalled && counter == 1, "BROKE: att.sig called {signalled}, vic.invoice_seq at {counter}");
        assert_eq!(one::<i64>("SELECT count(*) FROM att.settings_book"), 0);
        let out = do_as_victim("Step 1: sign\n```sql\nINSERT INTO att.plain_book (msg) VALUES ('hi');\n```");
        assert_eq!(out, None, "a table's own serial and clock defaults");
        assert_eq!(one::<i64>("SELECT count(*) FROM att.plain_book WHERE id = 1 AND at IS NOT NULL AND day IS NOT NULL"), 1);
    }

    /// Code another role adds between a step's check and its run without locking anything the
    /// step holds: a constraint added NOT VALID to a domain the step reaches through a view's
    /// check option, a trigger condition on a partition no row has been routed to yet. It runs
    /// as the writer, where it could read the writer's settings; it may not advance a sequence,
    /// the one effect other roles can read whatever becomes of the step, even when the step's
    /// own statement calls nextval. A relation created meanwhile in an earlier schema of the
    /// search_path is not the one checked. The writer's own code and sequences still work.
    #[pg_test]
    fn code_added_between_the_check_and_the_run_advances_no_sequence() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE SEQUENCE att.sig; GRANT USAGE ON SEQUENCE att.sig TO PUBLIC;
             CREATE SEQUENCE att.private;
             CREATE FUNCTION att.noop() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NEW; END $f$;
             CREATE DOMAIN att.dom AS text CHECK (VALUE IS NOT NULL);
             CREATE TABLE att.visits (msg text) PARTITION BY LIST (msg);
             CREATE TABLE att.visits_hello PARTITION OF att.visits FOR VALUES IN ('hello');
             CREATE TABLE att.visits_rest PARTITION OF att.visits DEFAULT;
             CREATE VIEW att.guestbook AS SELECT msg FROM att.visits WHERE (msg::att.dom) IS NOT NULL WITH CHECK OPTION;
             GRANT INSERT, SELECT ON att.visits, att.guestbook TO PUBLIC;
             RESET ROLE;
             SET ROLE ask_vic;
             CREATE SEQUENCE vic.n;
             CREATE TABLE vic.numbered (n bigint, msg text);
             CREATE TABLE vic.notes (msg text);
             CREATE TABLE vic.audit (id serial, what text);
             CREATE FUNCTION vic.audit() RETURNS trigger LANGUAGE plpgsql AS
                 $f$ BEGIN INSERT INTO vic.audit (what) VALUES (NEW.msg); RETURN NEW; END $f$;
             CREATE TRIGGER a AFTER INSERT ON vic.notes FOR EACH ROW EXECUTE FUNCTION vic.audit();
             RESET ROLE;",
        )
        .unwrap();
        let as_att = |sql: &str| format!("SET ROLE ask_att; {sql}; SET ROLE ask_vic");
        let domain = as_att(
            "ALTER DOMAIN att.dom ADD CONSTRAINT leak
                 CHECK (pg_catalog.nextval('att.sig') > 0 OR pg_catalog.current_setting('search_path') IS NULL) NOT VALID",
        );
        let trigger = as_att(
            "CREATE TRIGGER w BEFORE INSERT ON att.visits_hello FOR EACH ROW
                 WHEN (pg_catalog.nextval('att.sig') < 0) EXECUTE FUNCTION att.noop()",
        );
        // What the other role did between check and run is rolled back with each refused step.
        let cases = [
            ("INSERT INTO att.guestbook (msg) VALUES ('hello')", domain.clone(), "nextval"),
            ("INSERT INTO att.guestbook (msg) VALUES (nextval('vic.n')::text)", domain, "nextval"),
            ("INSERT INTO att.visits (msg) VALUES ('hello')", trigger, "nextval"),
        ];
        for (step, between, why) in cases {
            super::super::written::BETWEEN_CHECK_AND_RUN.with(|b| *b.borrow_mut() = Some(between));
            let out = do_as_victim(&format!("Step 1: sign\n```sql\n{step};\n```"));
            let said = out.clone().unwrap_or_default();
            assert!(!one::<bool>("SELECT is_called FROM att.sig"), "BROKE {step}: att.sig advanced as the writer: {out:?}");
            assert!(said.contains(why), "{step}: refused, saying why: {out:?}");
        }
        assert_eq!(one::<i64>("SELECT count(*) FROM att.visits"), 0, "the refused steps were rolled back");
        // A table made meanwhile in a schema earlier on the search_path is not the one checked.
        Spi::run("SET search_path = att, vic, public").unwrap();
        super::super::written::BETWEEN_CHECK_AND_RUN
            .with(|b| *b.borrow_mut() = Some(as_att("CREATE TABLE att.notes (msg text); GRANT INSERT ON att.notes TO PUBLIC")));
        let out = do_as_victim("Step 1: note\n```sql\nINSERT INTO notes (msg) VALUES ('shadowed');\n```");
        Spi::run("RESET search_path").unwrap();
        assert!(out.clone().unwrap_or_default().contains("att.notes"), "BROKE: the step wrote a table its check did not see: {out:?}");
        assert!(one::<bool>("SELECT pg_catalog.to_regclass('att.notes') IS NULL"), "rolled back with the step");
        // A view whose columns are not its table's first ones: the statement's own values are
        // told from the defaults the rewriter adds, so another role's view read in a scalar
        // subquery is not taken for the statement's own call.
        Spi::run(
            "SET ROLE ask_att;
             CREATE TABLE att.base (a int, b int, id bigint, msg text);
             CREATE VIEW att.gb AS SELECT id, msg FROM att.base;
             CREATE VIEW att.news WITH (security_invoker = true) AS
                 SELECT 'news'::text AS headline FROM vic.secret WHERE pg_catalog.nextval('att.sig') > 0;
             GRANT INSERT, UPDATE, SELECT ON att.gb, att.base, att.news TO PUBLIC;
             CREATE TABLE att.g2 (msg text);
             CREATE TABLE att.g2_history (msg text, sig bigint DEFAULT pg_catalog.nextval('att.sig'));
             CREATE TABLE att.g3 (msg text);
             CREATE TABLE att.g3_history (msg text, sig bigint DEFAULT pg_catalog.nextval('att.sig'));
             GRANT INSERT, SELECT ON att.g2, att.g2_history, att.g3, att.g3_history TO PUBLIC;
             RESET ROLE;
             GRANT SELECT ON vic.secret TO ask_vic;
             SET ROLE ask_vic;
             CREATE TABLE vic.orders (id serial, note text, amount int);
             CREATE VIEW vic.ov AS SELECT note, amount FROM vic.orders;
             CREATE FUNCTION vic.history() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN
                 EXECUTE pg_catalog.format('INSERT INTO %I.%I (msg) VALUES ($1.msg)', TG_TABLE_SCHEMA, TG_TABLE_NAME || '_history') USING NEW;
                 RETURN NEW; END $f$;
             RESET ROLE;
             SET ROLE ask_att; CREATE TRIGGER h AFTER INSERT ON att.g2 FOR EACH ROW EXECUTE FUNCTION vic.history(); RESET ROLE;",
        )
        .unwrap();
        refused_advancing_none(
            &[
                "INSERT INTO att.gb (msg) VALUES ((SELECT headline FROM att.news))",
                "UPDATE att.gb SET msg = (SELECT headline FROM att.news)",
                "INSERT INTO vic.ov (note, amount) VALUES ((SELECT headline FROM att.news), 5)",
                "INSERT INTO att.g2 (msg) VALUES ('hi')",
            ],
            &["att.sig"],
        );
        // The writer's function put on another role's table between check and run.
        super::super::written::BETWEEN_CHECK_AND_RUN.with(|b| {
            *b.borrow_mut() = Some(as_att("CREATE TRIGGER h AFTER INSERT ON att.g3 FOR EACH ROW EXECUTE FUNCTION vic.history()"))
        });
        let out = do_as_victim("Step 1: sign\n```sql\nINSERT INTO att.g3 (msg) VALUES ('hi');\n```");
        assert!(!one::<bool>("SELECT is_called FROM att.sig"), "BROKE: att.sig advanced through the writer's trigger: {out:?}");
        assert!(out.is_some());
        // The writer's own view over its serial table.
        assert_eq!(do_as_victim("Step 1: add\n```sql\nINSERT INTO vic.ov (note, amount) VALUES ('pens', 5);\n```"), None);
        assert_eq!(one::<i64>("SELECT count(*) FROM vic.orders WHERE id = 1 AND note = 'pens'"), 1);
        // The writer's own sequence in its statement, its own trigger writing a serial table,
        // and the privilege nextval checks.
        assert_eq!(do_as_victim("Step 1: add\n```sql\nINSERT INTO vic.numbered VALUES (nextval('vic.n'), 'hi');\n```"), None);
        assert_eq!(do_as_victim("Step 1: add\n```sql\nINSERT INTO vic.notes VALUES ('mine');\n```"), None);
        assert_eq!(one::<i64>("SELECT count(*) FROM vic.audit WHERE id = 1 AND what = 'mine'"), 1, "the writer's own trigger");
        assert_eq!(one::<i64>("SELECT count(*) FROM vic.numbered WHERE n >= 1"), 1);
        let out = do_as_victim("Step 1: add\n```sql\nINSERT INTO vic.numbered VALUES (nextval('att.private'), 'hi');\n```");
        assert!(out.clone().unwrap_or_default().contains("permission denied for sequence att.private"), "{out:?}");
    }

    /// A ninth review's ways around the last fix: an INSTEAD rule on the writer's own view
    /// sending the statement's value to another column (it was taken for a default and its
    /// subquery over another role's view left unchecked), the statement's own nextval through
    /// a view or a rule, and the writer's own sequence advanced by another role's code that
    /// the writer's trigger reaches (a view it reads, a table's default it writes).
    #[pg_test]
    fn what_a_rule_or_the_writers_trigger_reaches_advances_no_sequence_it_did_not_approve() {
        roles();
        Spi::run(
            "SET ROLE ask_att;
             CREATE SEQUENCE att.sig; GRANT USAGE, SELECT ON SEQUENCE att.sig TO PUBLIC;
             CREATE VIEW att.news WITH (security_invoker = true) AS
                 SELECT 'news'::text AS headline WHERE pg_catalog.nextval('att.sig') > 0;
             GRANT SELECT ON att.news TO PUBLIC;
             RESET ROLE;
             SET ROLE ask_vic;
             CREATE SEQUENCE vic.ticket; GRANT SELECT ON SEQUENCE vic.ticket TO PUBLIC;
             CREATE TABLE vic.t2 (a text, b text, c text);
             CREATE VIEW vic.rv AS SELECT a, b FROM vic.t2;
             CREATE RULE r AS ON INSERT TO vic.rv DO INSTEAD INSERT INTO vic.t2 (c, a) VALUES (NEW.a, NEW.b);
             CREATE TABLE vic.items (msg text);
             RESET ROLE;
             SET ROLE ask_att;
             CREATE VIEW att.lookup AS SELECT pg_catalog.nextval('vic.ticket') AS n;
             CREATE TABLE att.shared_log (msg text, n bigint DEFAULT pg_catalog.nextval('vic.ticket'));
             GRANT SELECT ON att.lookup TO PUBLIC; GRANT INSERT, SELECT ON att.shared_log TO PUBLIC;
             RESET ROLE;
             GRANT USAGE ON SEQUENCE vic.ticket TO ask_att;
             SET ROLE ask_vic;
             CREATE FUNCTION vic.look() RETURNS trigger LANGUAGE plpgsql AS
                 $f$ BEGIN PERFORM n FROM att.lookup; RETURN NEW; END $f$;
             CREATE FUNCTION vic.logit() RETURNS trigger LANGUAGE plpgsql AS
                 $f$ BEGIN INSERT INTO att.shared_log (msg) VALUES (NEW.msg); RETURN NEW; END $f$;
             CREATE TABLE vic.looked (msg text); CREATE TABLE vic.logged (msg text);
             CREATE TRIGGER l AFTER INSERT ON vic.looked FOR EACH ROW EXECUTE FUNCTION vic.look();
             CREATE TRIGGER g AFTER INSERT ON vic.logged FOR EACH ROW EXECUTE FUNCTION vic.logit();
             RESET ROLE;",
        )
        .unwrap();
        refused_advancing_none(
            &[
                "INSERT INTO vic.rv (a, b) VALUES ((SELECT headline FROM att.news), 'x')",
                "INSERT INTO vic.rv (a, b) VALUES (nextval('att.sig')::text, (SELECT headline FROM att.news))",
                "INSERT INTO vic.looked VALUES ('hi')",
                "INSERT INTO vic.logged VALUES ('hi')",
            ],
            &["att.sig", "vic.ticket"],
        );
        // The statement writing a default's own nextval beside a subquery over another role's
        // view calling the same sequence (a tenth review): counted once as the statement's.
        Spi::run(
            "SET ROLE ask_att;
             CREATE TABLE att.board (id serial, msg text);
             CREATE VIEW att.bnews WITH (security_invoker = true) AS
                 SELECT 'news'::text AS headline WHERE pg_catalog.nextval('att.board_id_seq') > 0;
             GRANT INSERT, SELECT ON att.board, att.bnews TO PUBLIC; GRANT USAGE, SELECT ON SEQUENCE att.board_id_seq TO PUBLIC;
             CREATE DOMAIN att.stamp AS bigint DEFAULT pg_catalog.nextval('att.sig');
             GRANT USAGE ON TYPE att.stamp TO PUBLIC;
             RESET ROLE;
             SET ROLE ask_vic;
             CREATE TABLE vic.audit2 (msg text, n att.stamp);
             CREATE FUNCTION vic.audit2() RETURNS trigger LANGUAGE plpgsql AS
                 $f$ BEGIN INSERT INTO vic.audit2 (msg) VALUES (NEW.msg); RETURN NEW; END $f$;
             CREATE TABLE vic.audited (msg text);
             CREATE TRIGGER a AFTER INSERT ON vic.audited FOR EACH ROW EXECUTE FUNCTION vic.audit2();
             RESET ROLE;",
        )
        .unwrap();
        refused_advancing_none(
            &[
                "INSERT INTO att.board (id, msg) VALUES (nextval('att.board_id_seq'), (SELECT headline FROM att.bnews))",
                "INSERT INTO vic.audited VALUES ('hi')",
            ],
            &["att.board_id_seq", "att.sig"],
        );
        // The writer's own rule view with plain values still works.
        assert_eq!(do_as_victim("Step 1: add\n```sql\nINSERT INTO vic.rv (a, b) VALUES ('p', 'q');\n```"), None);
        assert_eq!(one::<i64>("SELECT count(*) FROM vic.t2 WHERE c = 'p' AND a = 'q'"), 1);
    }

    /// Runs each of `steps` as the victim's one-step `ask.do()`: each must be refused, and none
    /// of `sequences` (not yet called) advanced by it.
    fn refused_advancing_none(steps: &[&str], sequences: &[&str]) {
        for step in steps {
            let out = do_as_victim(&format!("Step 1: write\n```sql\n{step};\n```"));
            for seq in sequences {
                assert!(!one::<bool>(&format!("SELECT is_called FROM {seq}")), "BROKE {step}: {seq} advanced as the writer: {out:?}");
            }
            assert!(out.is_some(), "{step}: refused");
        }
    }
}
