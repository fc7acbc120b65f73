-- The LLM server's failures, each with its SQLSTATE and hint (README, "Errors"), as an
-- application catching them sees them. The stand-in answers each question below with the
-- fault its text names (tests/pg_regress/standin.json).
\x on
-- HTTP 401: a key the server refuses. The key is a superuser's, set in the session; the
-- server's error body echoes it, and pg_ask scrubs it from the message.
SET ask.api_key = 'sk-regress-401-echoed-key';
SELECT * FROM error_of($$SELECT ask.sql('how many cities are there? (stand-in: HTTP 401)')$$);
RESET ask.api_key;
-- HTTP 404: no such model on the server.
SELECT * FROM error_of($$SELECT ask.sql('how many cities are there? (stand-in: HTTP 404)')$$);
-- HTTP 429 with a Retry-After beyond ask.request_timeout: pg_ask gives up at once.
SELECT * FROM error_of($$SELECT ask.sql('how many cities are there? (stand-in: HTTP 429)')$$);
-- HTTP 500, likewise asked to retry later than the timeout allows.
SELECT * FROM error_of($$SELECT ask.sql('how many cities are there? (stand-in: HTTP 500)')$$);
-- A 200 whose body is not JSON, and one cut off in the middle.
SELECT * FROM error_of($$SELECT ask.sql('how many cities are there? (stand-in: malformed body)')$$);
SELECT * FROM error_of($$SELECT ask.sql('how many cities are there? (stand-in: truncated body)')$$);
-- A well-formed reply with nothing in it.
SELECT * FROM error_of($$SELECT ask.sql('how many cities are there? (stand-in: empty reply)')$$);
-- A server that never answers: the call ends at ask.request_timeout.
SET ask.request_timeout = '1s';
SELECT * FROM error_of($$SELECT ask.sql('how many cities are there? (stand-in: no answer)')$$);
RESET ask.request_timeout;
-- Nothing listens on port 1.
SELECT * FROM error_of($$SELECT ask.sql('how many cities are there?', base_url => 'http://127.0.0.1:1/v1')$$);
\x off
-- ask.explain() does not raise: the trace ends with the error, and its failed call stays in
-- the ledger.
SELECT t->'error'->>'kind' AS kind, t->'error'->>'stage' AS stage
FROM ask.explain('how many cities are there? (stand-in: malformed body)') t;
SELECT stage, outcome, http_attempts FROM ask.llm_calls
WHERE outcome <> 'ok' ORDER BY id;
