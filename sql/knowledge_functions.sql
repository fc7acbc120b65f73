-- The knowledge layer's functions with their named arguments (ask._add_knowledge does the
-- work, as the caller; see src/knowledge). Each returns the item's id in ask.knowledge; adding
-- an item of the same kind, subject and name again replaces it.
CREATE FUNCTION add_instruction(instruction text, about regclass DEFAULT NULL, about_schema name DEFAULT NULL)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _add_knowledge('instruction', NULL, about::oid, about_schema::text, NULL, NULL, instruction, NULL, NULL);
COMMENT ON FUNCTION add_instruction(text, regclass, name) IS
    'Teach pg_ask an instruction about the database (no table or schema: its owner or a superuser), a schema (its owner) or a table (its owner), such as ''amounts are in cents''. ask() shows it to the model for questions over that table, schema or database.';
CREATE FUNCTION add_metric(name text, about regclass, expression text, description text DEFAULT NULL, synonyms text[] DEFAULT '{}')
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _add_knowledge('metric', name, about::oid, NULL, NULL, NULL, expression, description, synonyms);
COMMENT ON FUNCTION add_metric(text, regclass, text, text, text[]) IS
    'Teach pg_ask a metric: a named aggregate expression over a table (revenue: sum(amount_cents) / 100.0). Checked as generated SQL is, as the table''s owner; ask() offers it for questions that name it (or a synonym) and writes it into the SQL when the model names it.';
CREATE FUNCTION add_filter(name text, about regclass, predicate text, description text DEFAULT NULL, synonyms text[] DEFAULT '{}')
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _add_knowledge('filter', name, about::oid, NULL, NULL, NULL, predicate, description, synonyms);
COMMENT ON FUNCTION add_filter(text, regclass, text, text, text[]) IS
    'Teach pg_ask a filter: a named predicate over a table (open: closed_on IS NULL). Checked as generated SQL is, as the table''s owner; written into the SQL when the model names it.';
CREATE FUNCTION add_dimension(name text, about regclass, expression text, description text DEFAULT NULL, synonyms text[] DEFAULT '{}')
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _add_knowledge('dimension', name, about::oid, NULL, NULL, NULL, expression, description, synonyms);
COMMENT ON FUNCTION add_dimension(text, regclass, text, text, text[]) IS
    'Teach pg_ask a dimension: a named expression over a table''s rows (order month: date_trunc(''month'', ordered_at)). Checked as generated SQL is, as the table''s owner; written into the SQL when the model names it.';
CREATE FUNCTION add_synonym(synonym text, about regclass, column_name name DEFAULT NULL, value text DEFAULT NULL)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _add_knowledge('synonym', synonym, about::oid, NULL, column_name::text, value, NULL, NULL, NULL);
COMMENT ON FUNCTION add_synonym(text, regclass, name, text) IS
    'Teach pg_ask another word for a table (clients: customers), one of its columns, or a value of a column (Big Apple: ''New York''). The table''s owner only; a value''s synonym needs the value in the column.';
