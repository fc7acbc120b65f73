-- Knowledge the database's owners teach pg_ask once (ask.add_instruction, ask.add_metric,
-- ask.add_filter, ask.add_dimension, ask.add_synonym, ask.import_knowledge): written only
-- through those functions, as the extension's owner, after the item was checked as its author;
-- a role sees and is offered only the items over what it may read.

CREATE TABLE knowledge (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind          text NOT NULL CHECK (kind IN ('instruction', 'metric', 'filter', 'dimension', 'synonym')),
    name          text CHECK (name <> ''),
    about         regclass,
    about_schema  regnamespace,
    column_name   name,
    value         text,
    body          text NOT NULL DEFAULT '',
    description   text,
    synonyms      text[] NOT NULL DEFAULT '{}',
    tables        regclass[] NOT NULL DEFAULT '{}',
    created_by    regrole NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    checked_at    timestamptz,
    checked_shape text,
    problem       text,
    first_word    text GENERATED ALWAYS AS (lower(split_part(name, ' ', 1))) STORED,
    CHECK (kind = 'instruction' OR about IS NOT NULL),
    CHECK (about IS NULL OR about_schema IS NULL),
    CHECK ((kind IN ('instruction')) = (name IS NULL)),
    CHECK (kind = 'synonym' OR (column_name IS NULL AND value IS NULL)),
    CHECK (value IS NULL OR column_name IS NOT NULL),
    CHECK (kind = 'synonym' OR body <> '')
);
COMMENT ON TABLE knowledge IS 'What the database''s owners taught pg_ask: instructions (on the database, a schema or a table), metrics, filters and dimensions (named SQL expressions over a table) and synonyms (of a table, a column or a value). ask() offers those relevant to a question in the SQL prompt and writes a named metric, filter or dimension into the SQL as its checked expression. A role sees only the items over relations it may read.';
COMMENT ON COLUMN knowledge.about IS 'the table the item is about (NULL: an instruction on the database or on about_schema)';
COMMENT ON COLUMN knowledge.body IS 'an instruction''s text; a metric''s or dimension''s expression; a filter''s predicate';
COMMENT ON COLUMN knowledge.tables IS 'every relation the item reads, as checked: a role must have SELECT on all of them, and USAGE on their schemas, to see or be offered it';
COMMENT ON COLUMN knowledge.created_by IS 'the role that wrote the item, by OID';
COMMENT ON COLUMN knowledge.checked_shape IS 'the columns of the item''s relations when it was last checked: when they differ, the item is checked again before it is used';
COMMENT ON COLUMN knowledge.first_word IS 'the first word of the name, lower case: a question''s table synonyms are looked up by it (a plain equality, which row-level security lets an index answer)';
COMMENT ON COLUMN knowledge.problem IS 'why the last check failed (NULL: it passed); an item with a problem is not used';
-- One item per kind, subject and name (an instruction: per text): adding it again replaces it.
CREATE UNIQUE INDEX knowledge_identity ON knowledge
    (kind, coalesce(about::oid, 0::oid), coalesce(about_schema::oid, 0::oid), lower(coalesce(name, body)),
     coalesce(column_name, ''), coalesce(value, ''));
CREATE INDEX knowledge_about ON knowledge (about);
-- A question's table synonyms are looked up by their first word (ask() and ask.select_tables()).
CREATE INDEX knowledge_synonym_words ON knowledge (first_word) WHERE kind = 'synonym' AND column_name IS NULL;

-- Whether the current role may see an item: an instruction on the database, any role; on a
-- schema, a role with USAGE on it; any other, a role with SELECT on every relation it reads
-- and USAGE on their schemas, and for a value's synonym no row-level security policy hiding
-- rows from it (the value may come from any row). A relation dropped since reads as
-- unreadable.
CREATE FUNCTION _knowledge_visible(about regclass, about_schema regnamespace, tables regclass[], value text)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN about IS NULL AND about_schema IS NULL THEN true
        WHEN about IS NULL THEN coalesce(pg_catalog.has_schema_privilege(about_schema::pg_catalog.oid, 'USAGE'), false)
        ELSE NOT EXISTS (
            SELECT 1 FROM pg_catalog.unnest(pg_catalog.array_append(tables, about)) AS t(rel)
            WHERE NOT coalesce(pg_catalog.has_table_privilege(t.rel, 'SELECT')
                               AND pg_catalog.has_schema_privilege(
                                   (SELECT c.relnamespace FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) t.rel), 'USAGE')
                               AND (value IS NULL OR NOT pg_catalog.row_security_active(t.rel::pg_catalog.oid)),
                               false))
    END
$$;
COMMENT ON FUNCTION _knowledge_visible(regclass, regnamespace, regclass[], text) IS 'whether the current role may see a knowledge item (the row-level security policy of ask.knowledge)';

-- The columns of `tables` as they stand (names and types, in order); a dropped relation
-- counts as none. An item whose shape changed is checked again before it is used.
CREATE FUNCTION _knowledge_shape(tables regclass[]) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.md5(coalesce(pg_catalog.string_agg(
               a.attrelid::pg_catalog.text OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) a.attname::pg_catalog.text
               OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) a.atttypid::pg_catalog.text, ','
               ORDER BY a.attrelid, a.attnum), '')
           OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||)
           (SELECT pg_catalog.count(*) FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) ANY (tables::pg_catalog.oid[]))::pg_catalog.text)
    FROM pg_catalog.pg_attribute a
    WHERE a.attrelid OPERATOR(pg_catalog.=) ANY (tables::pg_catalog.oid[]) AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
$$;
COMMENT ON FUNCTION _knowledge_shape(regclass[]) IS 'the columns of a knowledge item''s relations, to tell when it must be checked again';

ALTER TABLE knowledge ENABLE ROW LEVEL SECURITY;
CREATE POLICY knowledge_visible ON knowledge FOR SELECT
    USING (ask._knowledge_visible(about, about_schema, tables, value));
REVOKE ALL ON knowledge FROM PUBLIC;
GRANT SELECT ON knowledge TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('knowledge', '');

-- Items about a dropped table or schema go with it (a table created later under the same name
-- is another table, with none).
CREATE FUNCTION _knowledge_forget_dropped() RETURNS event_trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM ask.knowledge k USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.objsubid OPERATOR(pg_catalog.=) 0
       AND ((d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
             AND k.about::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid)
         OR (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
             AND k.about_schema::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid));
END $$;
REVOKE ALL ON FUNCTION _knowledge_forget_dropped() FROM PUBLIC;
CREATE EVENT TRIGGER ask_knowledge_forget_dropped ON sql_drop EXECUTE FUNCTION _knowledge_forget_dropped();
