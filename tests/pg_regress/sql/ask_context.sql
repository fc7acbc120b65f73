-- ask() with a context: the (stand-in) LLM first decides whether the context already answers
-- the question; if it does, that is the answer and no SQL runs.
SELECT ask('how many restaurants does the guide list?',
           context => 'The 2024 guide lists four restaurants in three cities.');
-- A context that says nothing about it: the question goes on to SQL as usual.
SELECT ask('how many restaurants does the guide list?', context => 'The weather was fine all week.');
-- The trace shows the decision.
SELECT jsonb_path_query_array(t, '$.stages[*].stage') AS stages,
       jsonb_path_query_array(t, '$.stages[*] ? (@.stage == "context").output.decision') AS decisions,
       t->>'answer' AS answer
FROM ask.explain('how many restaurants does the guide list?',
                 context => 'The 2024 guide lists four restaurants in three cities.') t;
-- ask.sql() and ask.rows() take no context: they always write SQL.
SELECT ask.sql('how many restaurants does the guide list?');
