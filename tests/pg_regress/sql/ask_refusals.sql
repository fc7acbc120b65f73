-- LLM-written SQL that is not a single read-only query is refused, never run.
SELECT count(*) AS restaurants_before FROM restaurants;
SELECT ask('delete the closed restaurants', max_attempts => 1);
SELECT ask('show cities and then clean up', max_attempts => 1);
SELECT ask('rename the table', max_attempts => 1);
SELECT ask('lock the restaurants', max_attempts => 1);
SELECT ask('wait a bit', max_attempts => 1);
SELECT ask('a hidden delete', max_attempts => 1);
SELECT count(*) AS restaurants_after FROM restaurants;
-- A reply with no SQL in it.
SELECT ask.sql('tell me a joke', max_attempts => 1);
-- SQLSTATEs, for applications that branch on them.
\set VERBOSITY sqlstate
SELECT ask('delete the closed restaurants', max_attempts => 1);
SELECT ask.sql('tell me a joke', max_attempts => 1);
\set VERBOSITY default
