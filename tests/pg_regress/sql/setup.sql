-- Runs once after the regression database is created.
CREATE EXTENSION pg_ask CASCADE;
CREATE TABLE cities (id int PRIMARY KEY, name text NOT NULL, state_code char(2));
COMMENT ON TABLE cities IS 'Cities, names written in full';
CREATE TABLE restaurants (
    id int PRIMARY KEY,
    name text NOT NULL,
    city_id int NOT NULL REFERENCES cities(id),
    cuisine text NOT NULL,
    rating numeric(2,1)
);
INSERT INTO cities VALUES (1, 'Los Angeles', 'CA'), (2, 'San Francisco', 'CA'), (3, 'New York', 'NY');
INSERT INTO restaurants VALUES
    (1, 'Roma', 1, 'Italian', 4.5), (2, 'Trattoria Nona', 1, 'Italian', 4.1),
    (3, 'Le Petit', 2, 'French', 4.7), (4, 'Sushi Ko', 3, 'Japanese', 4.4);
-- The stand-in LLM server that scripts/test.sh starts for these tests.
DO $$ BEGIN
  EXECUTE format('ALTER DATABASE %I SET ask.base_url = %L', current_database(), 'http://127.0.0.1:47811/v1');
  EXECUTE format('ALTER DATABASE %I SET ask.request_timeout = %L', current_database(), '5s');
END $$;
-- The errors of a statement as an application catching them sees them (SQLSTATE, message,
-- detail, hint), for the golden files of the error table.
CREATE FUNCTION public.error_of(stmt text, OUT code text, OUT message text, OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    code := 'none';
    message := 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                            detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END $$;
